// The server's log: every glog line, and gRPC core's own, written to stderr one line each, with
// the context of the call that caused it (log_context.h) — as text, glog's lines with the context
// appended, or as JSON, one object a line for a log pipeline (--log_format).
#ifndef GIFTWALL_SERVER_LOGGING_LOG_SINK_H_
#define GIFTWALL_SERVER_LOGGING_LOG_SINK_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "glog/logging.h"
#include "server/logging/log_context.h"

namespace giftwall::logging {

enum class LogFormat { kText, kJson };

// "text" or "json"; INVALID_ARGUMENT naming the value otherwise.
absl::StatusOr<LogFormat> ParseLogFormat(absl::string_view name);

// Starts glog for the program `argv0`, writing to stderr in `format` only (no log files), and
// routes gRPC core's lines into it. Call once, before any thread logs.
void InitLogging(const char* argv0, LogFormat format);

// One line of the log, without its newline. `thread_id` and `file:line` are in the text form
// only. JSON fields: time (RFC 3339, UTC, milliseconds), severity (INFO, WARNING, ERROR, FATAL),
// message, and from `context` where known trace_id, span_id, caller, method, app_code, event_ids
// (and events when there were more), trace_ids and traces (a group commit's calls).
std::string FormatLogLine(LogFormat format, absl::Time time, google::LogSeverity severity,
                          absl::string_view file, int line, long thread_id,
                          absl::string_view message, const LogContext* context);

}  // namespace giftwall::logging

#endif  // GIFTWALL_SERVER_LOGGING_LOG_SINK_H_
