#include "server/transport/grpc_status.h"

#include <chrono>

#include "absl/strings/str_cat.h"

namespace giftwall::transport {
namespace {

grpc::Status ShuttingDown() {
  return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                      "the server is shutting down; retry on another replica");
}

}  // namespace

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

grpc::Status InvalidArgument(absl::string_view parent, const absl::Status& status) {
  return grpc::Status(
      grpc::StatusCode::INVALID_ARGUMENT,
      parent.empty() ? std::string(status.message()) : absl::StrCat(parent, ".", status.message()));
}

absl::Status StillWanted(grpc::CallbackServerContext* context) {
  if (context->IsCancelled()) return absl::CancelledError("the client cancelled the call");
  if (context->deadline() < std::chrono::system_clock::now()) {
    return absl::DeadlineExceededError("the deadline passed while the call waited its turn");
  }
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* FinishNow(grpc::CallbackServerContext* context, grpc::Status status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(std::move(status));
  return reactor;
}

grpc::ServerUnaryReactor* Offload(grpc::CallbackServerContext* context, WorkerPool& workers,
                                  std::function<grpc::Status()> work) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  WorkItem item;
  item.run = [context, reactor, work = std::move(work)] {
    if (absl::Status wanted = StillWanted(context); !wanted.ok()) {
      reactor->Finish(ToGrpcStatus(wanted));
      return;
    }
    reactor->Finish(work());
  };
  item.cancel = [reactor] { reactor->Finish(ShuttingDown()); };
  switch (workers.TrySubmit(std::move(item))) {
    case WorkerPool::Admission::kAccepted:
      break;
    case WorkerPool::Admission::kQueueFull:
      reactor->Finish(
          grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                       "the server is overloaded (its work queue is full); retry later"));
      break;
    case WorkerPool::Admission::kStopped:
      reactor->Finish(ShuttingDown());
      break;
  }
  return reactor;
}

}  // namespace giftwall::transport
