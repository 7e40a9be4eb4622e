// The transport's edge: absl::Status in, grpc::Status out (the codes are the same numbers), and
// blocking work handed from gRPC's callback threads to the worker pool.
#ifndef GIFTWALL_SERVER_TRANSPORT_GRPC_STATUS_H_
#define GIFTWALL_SERVER_TRANSPORT_GRPC_STATUS_H_

#include <functional>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "grpcpp/grpcpp.h"
#include "server/transport/worker_pool.h"

namespace giftwall::transport {

grpc::Status ToGrpcStatus(const absl::Status& status);

// INVALID_ARGUMENT with a message that names the request field. Validation messages start with
// the field's own name ("event_id is required"); `parent` makes it a path
// ("message.event_id is required"). Empty `parent`: the message as it is.
grpc::Status InvalidArgument(absl::string_view parent, const absl::Status& status);

// Runs `work` on `workers`, with the call's log context in scope (CallLog), and finishes the
// call with what it returns. A full queue answers
// RESOURCE_EXHAUSTED at once; work still queued at shutdown answers UNAVAILABLE; a call whose
// client gave up or whose deadline passed while queued is finished without running `work`.
grpc::ServerUnaryReactor* Offload(grpc::CallbackServerContext* context, WorkerPool& workers,
                                  std::function<grpc::Status()> work);

// OK while the call is still worth running; CANCELLED if its client gave up, DEADLINE_EXCEEDED
// if its deadline passed while it waited.
absl::Status StillWanted(grpc::CallbackServerContext* context);

// Finishes a call at once, on the gRPC thread (for answers that need no database).
grpc::ServerUnaryReactor* FinishNow(grpc::CallbackServerContext* context, grpc::Status status);

}  // namespace giftwall::transport

#endif  // GIFTWALL_SERVER_TRANSPORT_GRPC_STATUS_H_
