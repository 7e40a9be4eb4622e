#include "server/transport/undecodable_requests.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "google/protobuf/descriptor.h"

namespace giftwall::transport {
namespace {

using grpc::experimental::InterceptionHookPoints;

class UndecodableRequestInterceptor : public grpc::experimental::Interceptor {
 public:
  explicit UndecodableRequestInterceptor(const grpc::experimental::ServerRpcInfo& info)
      : method_(info.method()) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    // A callback handler's request is nullptr here when it could not be decoded.
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE) &&
        methods->GetRecvMessage() == nullptr) {
      undecodable_ = true;
    }
    if (undecodable_ &&
        methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS) &&
        methods->GetSendStatus().error_code() == grpc::StatusCode::UNIMPLEMENTED) {
      methods->ModifySendStatus(
          grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, UndecodableRequestMessage(method_)));
    }
    methods->Proceed();
  }

 private:
  const std::string method_;
  bool undecodable_ = false;
};

}  // namespace

std::string UndecodableRequestMessage(absl::string_view method) {
  // "/giftwall.v1.GiftWallService/ProjectMessage" -> "giftwall.v1.GiftWallService.ProjectMessage"
  const std::string name = absl::StrReplaceAll(method.substr(method.empty() ? 0 : 1), {{"/", "."}});
  const google::protobuf::MethodDescriptor* descriptor =
      google::protobuf::DescriptorPool::generated_pool()->FindMethodByName(name);
  const std::string type =
      descriptor != nullptr ? descriptor->input_type()->full_name() : "the method's request";
  return absl::StrCat("the request cannot be decoded as ", type,
                      ": a string field is not valid UTF-8 (send ids as UTF-8 text), or the bytes "
                      "are not that message (truncated or garbage); nothing was done");
}

grpc::experimental::Interceptor* UndecodableRequestInterceptorFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  return new UndecodableRequestInterceptor(*info);
}

}  // namespace giftwall::transport
