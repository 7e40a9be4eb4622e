#include "server/transport/grpc_status.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "server/transport/call_log.h"

namespace giftwall::transport {
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
  item.run = [context, reactor, work = std::move(work), call = CallLog::Find(context)] {
    const logging::ScopedLogContext scope(call != nullptr ? &call->log : nullptr);
    if (absl::Status wanted = StillWanted(context); !wanted.ok()) {
      reactor->Finish(ToGrpcStatus(wanted));
      return;
    }
    reactor->Finish(work());
  };
  item.refuse = [reactor](absl::Status status) { reactor->Finish(ToGrpcStatus(status)); };
  workers.Submit(std::move(item));
  return reactor;
}

}  // namespace giftwall::transport
