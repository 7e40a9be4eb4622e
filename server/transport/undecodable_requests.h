// What a caller gets for a request gRPC cannot decode: a string field that is not valid UTF-8,
// or bytes that are not the method's request message (truncated, garbage). gRPC's own answer is
// UNIMPLEMENTED with no message, which reads as "no such method" and which no caller knows what
// to do with; this interceptor answers INVALID_ARGUMENT naming the request's type instead (the
// caller's bytes are at fault; a retry cannot help). Nothing was run: the handler never saw it.
#ifndef GIFTWALL_SERVER_TRANSPORT_UNDECODABLE_REQUESTS_H_
#define GIFTWALL_SERVER_TRANSPORT_UNDECODABLE_REQUESTS_H_

#include <string>

#include "absl/strings/string_view.h"
#include "grpcpp/support/server_interceptor.h"

namespace giftwall::transport {

// The answer to an undecodable request to `method` ("/package.Service/Method").
std::string UndecodableRequestMessage(absl::string_view method);

class UndecodableRequestInterceptorFactory
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;
};

}  // namespace giftwall::transport

#endif  // GIFTWALL_SERVER_TRANSPORT_UNDECODABLE_REQUESTS_H_
