// A tiny grpcurl-like client for end-to-end tests: it knows nothing about the server's API but
// what server reflection (grpc.reflection.v1alpha.ServerReflection) tells it, and calls unary
// methods with JSON requests, exactly as an outside tool would.
//
// The reflection stubs come from grpc/reflection/v1alpha/reflection.proto compiled into the test;
// the test must not also link libgrpc++_reflection (it carries the same descriptors).
//
// Not thread-safe: use one ReflectionClient per thread.
#pragma once

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/dynamic_message.h>
#include <grpcpp/channel.h>
#include <grpcpp/support/status.h>

#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace grpc::reflection::v1alpha {
class ServerReflectionRequest;
class ServerReflectionResponse;
}  // namespace grpc::reflection::v1alpha

namespace giftwall::testing {

class ReflectionClient {
 public:
  explicit ReflectionClient(std::shared_ptr<grpc::Channel> channel);

  ReflectionClient(const ReflectionClient&) = delete;
  ReflectionClient& operator=(const ReflectionClient&) = delete;

  // Names of the services the server lists via reflection (list_services).
  absl::StatusOr<std::vector<std::string>> ListServices();

  // Short method names (e.g. "Check") of a service, from the descriptors reflection returns
  // (file_containing_symbol; missing dependencies are fetched with file_by_filename).
  absl::StatusOr<std::vector<std::string>> DescribeService(const std::string& full_service_name);

  // Calls a unary method knowing only names and JSON, like
  // `grpcurl -d '<json>' host service/method`. On a completed RPC, *rpc_status holds its status;
  // if that is not OK the result is an empty string. Reflection, JSON or local failures return an
  // error absl::Status instead.
  absl::StatusOr<std::string> CallUnary(
      const std::string& full_service_name, const std::string& method,
      const std::string& request_json, grpc::Status* rpc_status,
      std::chrono::milliseconds timeout = std::chrono::seconds(10));

 private:
  using PendingFiles = std::map<std::string, google::protobuf::FileDescriptorProto>;

  // One request on a fresh ServerReflectionInfo stream; an error_response becomes an error status.
  absl::StatusOr<grpc::reflection::v1alpha::ServerReflectionResponse> Reflect(
      const grpc::reflection::v1alpha::ServerReflectionRequest& request);
  // Adds the file_descriptor_response of `response` to `pending` (skipping files already built).
  absl::Status CollectFiles(const grpc::reflection::v1alpha::ServerReflectionResponse& response,
                            PendingFiles* pending);
  // Makes sure the file defining `symbol` (and all it imports) is in pool_.
  absl::Status LoadSymbol(const std::string& symbol);
  // Builds file `name` into pool_ after its dependencies, fetching any that are not pending.
  absl::Status BuildFile(const std::string& name, PendingFiles* pending,
                         std::set<std::string>* in_progress);
  absl::StatusOr<const google::protobuf::ServiceDescriptor*> FindService(
      const std::string& full_service_name);

  std::shared_ptr<grpc::Channel> channel_;
  google::protobuf::DescriptorPool pool_;
  google::protobuf::DynamicMessageFactory factory_{&pool_};  // after pool_: destroyed first
};

}  // namespace giftwall::testing
