#include "tests/e2e/reflection_client.h"

#include <google/protobuf/message.h>
#include <google/protobuf/util/json_util.h>
#include <grpcpp/client_context.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include <future>
#include <utility>

#include "absl/strings/str_cat.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "grpc/reflection/v1alpha/reflection.pb.h"

namespace giftwall::testing {
namespace {

namespace pb = ::google::protobuf;
namespace rpb = ::grpc::reflection::v1alpha;

constexpr std::chrono::seconds kReflectionTimeout(10);
// Deeper import chains than this mean something is badly wrong (or the server is lying).
constexpr size_t kMaxImportDepth = 64;

absl::Status FromGrpc(const grpc::Status& status, const std::string& what) {
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      absl::StrCat(what, ": ", status.error_message()));
}

// Collects every error DescriptorPool reports while building one file.
class CollectingErrors : public pb::DescriptorPool::ErrorCollector {
 public:
  void AddError(const std::string& filename, const std::string& element_name,
                const pb::Message* /*descriptor*/, ErrorLocation /*location*/,
                const std::string& message) override {
    absl::StrAppend(&text_, text_.empty() ? "" : "; ", filename, ": ", element_name, ": ", message);
  }
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

}  // namespace

ReflectionClient::ReflectionClient(std::shared_ptr<grpc::Channel> channel)
    : channel_(std::move(channel)) {}

absl::StatusOr<rpb::ServerReflectionResponse> ReflectionClient::Reflect(
    const rpb::ServerReflectionRequest& request) {
  auto stub = rpb::ServerReflection::NewStub(channel_);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + kReflectionTimeout);
  auto stream = stub->ServerReflectionInfo(&context);
  rpb::ServerReflectionResponse response;
  const bool wrote = stream->Write(request);
  const bool read = wrote && stream->Read(&response);
  stream->WritesDone();
  // Drain anything unexpected so Finish() does not block on an unread message.
  if (read) {
    rpb::ServerReflectionResponse extra;
    while (stream->Read(&extra)) {
    }
  }
  const grpc::Status status = stream->Finish();
  if (!status.ok()) return FromGrpc(status, "server reflection");
  if (!read) return absl::UnavailableError("server reflection: stream ended without a response");
  if (response.has_error_response()) {
    const auto& error = response.error_response();
    return absl::Status(static_cast<absl::StatusCode>(error.error_code()),
                        absl::StrCat("server reflection: ", error.error_message()));
  }
  return response;
}

absl::StatusOr<std::vector<std::string>> ReflectionClient::ListServices() {
  rpb::ServerReflectionRequest request;
  request.set_list_services("*");
  auto response = Reflect(request);
  if (!response.ok()) return response.status();
  if (!response->has_list_services_response()) {
    return absl::InternalError("server reflection: list_services got another kind of response");
  }
  std::vector<std::string> names;
  for (const auto& service : response->list_services_response().service()) {
    names.push_back(service.name());
  }
  return names;
}

absl::Status ReflectionClient::CollectFiles(const rpb::ServerReflectionResponse& response,
                                            PendingFiles* pending) {
  if (!response.has_file_descriptor_response()) {
    return absl::InternalError(
        "server reflection: expected a file_descriptor_response, got another kind");
  }
  for (const std::string& bytes : response.file_descriptor_response().file_descriptor_proto()) {
    pb::FileDescriptorProto file;
    if (!file.ParseFromString(bytes)) {
      return absl::DataLossError("server reflection: unparsable FileDescriptorProto");
    }
    // The server may send files we already have (well-known types, shared imports): skip them.
    if (pool_.FindFileByName(file.name()) != nullptr || pending->count(file.name()) > 0) continue;
    std::string name = file.name();
    pending->emplace(std::move(name), std::move(file));
  }
  return absl::OkStatus();
}

absl::Status ReflectionClient::BuildFile(const std::string& name, PendingFiles* pending,
                                         std::set<std::string>* in_progress) {
  if (pool_.FindFileByName(name) != nullptr) return absl::OkStatus();
  if (in_progress->count(name) > 0) {
    return absl::FailedPreconditionError(absl::StrCat("import cycle through ", name));
  }
  if (in_progress->size() >= kMaxImportDepth) {
    return absl::FailedPreconditionError(absl::StrCat("imports nested too deeply at ", name));
  }
  if (pending->count(name) == 0) {
    rpb::ServerReflectionRequest request;
    request.set_file_by_filename(name);
    auto response = Reflect(request);
    if (!response.ok()) return response.status();
    if (absl::Status collected = CollectFiles(*response, pending); !collected.ok()) {
      return collected;
    }
    if (pending->count(name) == 0) {
      return absl::NotFoundError(
          absl::StrCat("server reflection: file_by_filename ", name, " did not return it"));
    }
  }
  in_progress->insert(name);
  // A copy: the recursive calls add and erase other entries of *pending.
  const auto dependencies = pending->at(name).dependency();
  for (const std::string& dependency : dependencies) {
    if (absl::Status built = BuildFile(dependency, pending, in_progress); !built.ok()) {
      return built;
    }
  }
  in_progress->erase(name);

  CollectingErrors errors;
  if (pool_.BuildFileCollectingErrors(pending->at(name), &errors) == nullptr) {
    return absl::InternalError(
        absl::StrCat("cannot build reflected file ", name, ": ", errors.text()));
  }
  pending->erase(name);
  return absl::OkStatus();
}

absl::Status ReflectionClient::LoadSymbol(const std::string& symbol) {
  if (pool_.FindFileContainingSymbol(symbol) != nullptr) return absl::OkStatus();
  rpb::ServerReflectionRequest request;
  request.set_file_containing_symbol(symbol);
  auto response = Reflect(request);
  if (!response.ok()) return response.status();
  PendingFiles pending;
  if (absl::Status collected = CollectFiles(*response, &pending); !collected.ok()) {
    return collected;
  }
  while (!pending.empty()) {
    const std::string name = pending.begin()->first;
    std::set<std::string> in_progress;
    if (absl::Status built = BuildFile(name, &pending, &in_progress); !built.ok()) return built;
  }
  if (pool_.FindFileContainingSymbol(symbol) == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("server reflection: no file returned for symbol ", symbol));
  }
  return absl::OkStatus();
}

absl::StatusOr<const pb::ServiceDescriptor*> ReflectionClient::FindService(
    const std::string& full_service_name) {
  if (absl::Status loaded = LoadSymbol(full_service_name); !loaded.ok()) return loaded;
  const pb::ServiceDescriptor* service = pool_.FindServiceByName(full_service_name);
  if (service == nullptr) {
    return absl::NotFoundError(absl::StrCat(full_service_name, " is not a service"));
  }
  return service;
}

absl::StatusOr<std::vector<std::string>> ReflectionClient::DescribeService(
    const std::string& full_service_name) {
  auto service = FindService(full_service_name);
  if (!service.ok()) return service.status();
  std::vector<std::string> methods;
  for (int i = 0; i < (*service)->method_count(); ++i) {
    methods.push_back((*service)->method(i)->name());
  }
  return methods;
}

absl::StatusOr<std::string> ReflectionClient::CallUnary(const std::string& full_service_name,
                                                        const std::string& method,
                                                        const std::string& request_json,
                                                        grpc::Status* rpc_status,
                                                        std::chrono::milliseconds timeout) {
  if (rpc_status == nullptr) return absl::InvalidArgumentError("rpc_status must not be null");
  *rpc_status = grpc::Status::OK;

  auto service = FindService(full_service_name);
  if (!service.ok()) return service.status();
  const pb::MethodDescriptor* descriptor = (*service)->FindMethodByName(method);
  if (descriptor == nullptr) {
    return absl::NotFoundError(absl::StrCat(full_service_name, " has no method ", method));
  }
  if (descriptor->client_streaming() || descriptor->server_streaming()) {
    return absl::InvalidArgumentError(absl::StrCat(descriptor->full_name(), " is not unary"));
  }

  const pb::Message* request_prototype = factory_.GetPrototype(descriptor->input_type());
  const pb::Message* response_prototype = factory_.GetPrototype(descriptor->output_type());
  if (request_prototype == nullptr || response_prototype == nullptr) {
    return absl::InternalError(absl::StrCat("no dynamic message for ", descriptor->full_name()));
  }
  std::unique_ptr<pb::Message> request(request_prototype->New());
  const pb::util::Status parsed =
      pb::util::JsonStringToMessage(request_json, request.get(), pb::util::JsonParseOptions());
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("request JSON for ", descriptor->full_name(), ": ", parsed.ToString()));
  }
  std::string request_bytes;
  if (!request->SerializeToString(&request_bytes)) {
    return absl::InternalError("cannot serialize the request");
  }
  grpc::Slice request_slice(request_bytes);
  grpc::ByteBuffer request_buffer(&request_slice, 1);
  grpc::ByteBuffer response_buffer;

  grpc::GenericStub stub(channel_);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  std::promise<grpc::Status> done;
  std::future<grpc::Status> finished = done.get_future();
  stub.UnaryCall(&context, absl::StrCat("/", full_service_name, "/", method), grpc::StubOptions(),
                 &request_buffer, &response_buffer,
                 [&done](grpc::Status status) { done.set_value(std::move(status)); });
  const grpc::Status status = finished.get();
  if (!status.ok()) {
    *rpc_status = status;
    return std::string();
  }

  std::vector<grpc::Slice> slices;
  if (!response_buffer.Dump(&slices).ok()) {
    return absl::InternalError("cannot read the response bytes");
  }
  std::string response_bytes;
  for (const grpc::Slice& slice : slices) {
    response_bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  std::unique_ptr<pb::Message> response(response_prototype->New());
  if (!response->ParseFromString(response_bytes)) {
    return absl::DataLossError(
        absl::StrCat("cannot parse the response as ", descriptor->output_type()->full_name()));
  }
  pb::util::JsonPrintOptions options;
  options.add_whitespace = false;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  std::string json;
  const pb::util::Status printed = pb::util::MessageToJsonString(*response, &json, options);
  if (!printed.ok()) {
    return absl::InternalError(
        absl::StrCat("cannot print the response as JSON: ", printed.ToString()));
  }
  *rpc_status = status;
  return json;
}

}  // namespace giftwall::testing
