// What a log line is about, beyond its text: the call (or the group of calls) that caused it.
// Whoever does work for a call puts the call's context in scope on its thread (ScopedLogContext);
// the log's formatters (log_sink.h) read it for every line logged there, so no call site changes.
#ifndef GIFTWALL_SERVER_LOGGING_LOG_CONTEXT_H_
#define GIFTWALL_SERVER_LOGGING_LOG_CONTEXT_H_

#include <cstddef>
#include <string>
#include <vector>

namespace giftwall::logging {

struct LogContext {
  // How many trace and event ids a group's lines name; `traces` and `events` count them all.
  static constexpr size_t kMaxIds = 8;

  std::string trace_id;  // W3C trace id (32 hex digits) of one call
  std::string span_id;   // this server's span of it (16 hex digits)
  std::string caller;    // the access policy's name for the caller
  std::string method;    // "/package.Service/Method"
  std::string app_code;
  std::vector<std::string> event_ids;  // at most kMaxIds
  size_t events = 0;                   // event ids in all
  std::vector<std::string> trace_ids;  // a group commit's calls: at most kMaxIds
  size_t traces = 0;                   // calls in the group

  bool empty() const {
    return trace_id.empty() && caller.empty() && method.empty() && app_code.empty() &&
           event_ids.empty() && trace_ids.empty();
  }
  // Adds an event id, keeping the first kMaxIds.
  void AddEventId(std::string id);
  // Adds a call's trace id to a group's, keeping the first kMaxIds.
  void AddTraceId(std::string id);
};

// The context in scope on this thread; null when none is.
const LogContext* CurrentLogContext();

// Puts `context` in scope on this thread until destroyed, then restores what was. `context` must
// outlive the scope; null puts none in scope.
class ScopedLogContext {
 public:
  explicit ScopedLogContext(const LogContext* context);
  ~ScopedLogContext();
  ScopedLogContext(const ScopedLogContext&) = delete;
  ScopedLogContext& operator=(const ScopedLogContext&) = delete;

 private:
  const LogContext* const previous_;
};

}  // namespace giftwall::logging

#endif  // GIFTWALL_SERVER_LOGGING_LOG_CONTEXT_H_
