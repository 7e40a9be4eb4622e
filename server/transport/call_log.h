// Every call's log context (logging::LogContext), from its first byte to its answer: its W3C
// trace id (the caller's `traceparent`, or a new trace), its caller, method, app and event ids.
// The interceptor starts it, returns the trace id in the trailing metadata key `trace-id`, and
// writes one access line per refused or failed call; the handlers put it in scope on the threads
// that work for the call (CallScope, Offload), so every line the call causes carries it.
#ifndef GIFTWALL_SERVER_TRANSPORT_CALL_LOG_H_
#define GIFTWALL_SERVER_TRANSPORT_CALL_LOG_H_

#include <cstdint>
#include <memory>
#include <string>
#include <tuple>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "google/protobuf/message.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/support/server_interceptor.h"
#include "server/logging/log_context.h"
#include "server/transport/access_control.h"

namespace giftwall::transport {

// The metadata key the trace id is returned under.
inline constexpr char kTraceIdKey[] = "trace-id";

struct CallContext {
  logging::LogContext log;
  absl::Time start;
};

// The call's trace from its metadata: the caller's `traceparent` trace id if it is valid, else a
// new one; a new span id for this server's part either way.
logging::LogContext TraceOf(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata);

// A method path ("/package.Service/Method") as logs show it, and whether the server's descriptors
// declare it, spelled exactly as gRPC routes it. A caller may send any path: one no service
// declares is shown escaped and cut to 100 bytes, and repeated lines of such calls are bounded as
// one method.
struct LoggedMethod {
  std::string name;
  bool known = false;
};
LoggedMethod MethodForLog(absl::string_view path);

// Fills `log`'s app_code and event ids from a request: its own app_code and event_id(s) fields,
// or those of its `message` or `messages` (ProjectMessage(s)). Ids are cut to 128 bytes.
void DescribeRequest(const google::protobuf::Message& request, logging::LogContext* log);

// Bounds repeated lines: at most one per key every `period`; the line that passes says how many
// were held back since the last. Keys are bounded too (a caller controls the method path).
class RepeatLimiter {
 public:
  explicit RepeatLimiter(absl::Duration period) : period_(period) {}
  // Whether to log the line of `key` now; *suppressed: how many of its lines were not logged
  // since the last that was.
  bool Allow(const std::string& key, absl::Time now, int64_t* suppressed) ABSL_LOCKS_EXCLUDED(mu_);
  // How many keys it holds now.
  size_t keys() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  static constexpr size_t kMaxKeys = 4096;
  struct Entry {
    absl::Time last = absl::InfinitePast();
    int64_t suppressed = 0;
  };
  const absl::Duration period_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
};

class CallLog {
 public:
  // `access` names each call's caller (null: none is named); it must outlive the CallLog.
  explicit CallLog(const AccessControl* access);
  // How repeated lines are bounded: one per caller, method and code every 10 s.
  static constexpr absl::Duration kRepeatPeriod = absl::Seconds(10);

  // For grpc::ServerBuilder::experimental().SetInterceptorCreators, after any interceptor that
  // changes the answer's code. The factory refers to this object, which must outlive the server.
  std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> InterceptorFactory();

  // The context of the call `context` serves; null for a call no CallLog interceptor saw.
  static std::shared_ptr<const CallContext> Find(const grpc::ServerContextBase* context);

  // The access line of a call answered `status`: every failed projection and every INTERNAL
  // (UNKNOWN, DATA_LOSS); other failures (a read's UNAVAILABLE, DEADLINE_EXCEEDED) and refusals
  // (bad arguments, unknown callers, missing rights, limits) at most once every 10 s per caller,
  // method and code, with how many were held back.
  void LogAnswer(const CallContext& call, const grpc::Status& status);

  class Interceptor;

 private:
  const AccessControl* const access_;
  RepeatLimiter repeats_{kRepeatPeriod};
};

// Puts the call's context in scope on this thread (a handler's first line).
class CallScope {
 public:
  explicit CallScope(const grpc::ServerContextBase* context)
      : call_(CallLog::Find(context)), scope_(call_ != nullptr ? &call_->log : nullptr) {}

 private:
  const std::shared_ptr<const CallContext> call_;
  const logging::ScopedLogContext scope_;
};

}  // namespace giftwall::transport

#endif  // GIFTWALL_SERVER_TRANSPORT_CALL_LOG_H_
