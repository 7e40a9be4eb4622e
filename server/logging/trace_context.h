// W3C Trace Context (https://www.w3.org/TR/trace-context/): the `traceparent` a caller sends, and
// the ids this server starts when it sends none.
#ifndef GIFTWALL_SERVER_LOGGING_TRACE_CONTEXT_H_
#define GIFTWALL_SERVER_LOGGING_TRACE_CONTEXT_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace giftwall::logging {

struct TraceParent {
  std::string trace_id;   // 32 lowercase hex digits, not all zero
  std::string parent_id;  // the caller's span: 16 lowercase hex digits, not all zero
  bool sampled = false;   // trace-flags bit 0
};

// `value` as a traceparent header: "00-<trace-id>-<parent-id>-<flags>", or a later version's
// (which may append fields after a '-'). nullopt when it is not one, as the spec says a receiver
// must then start a new trace: wrong lengths, upper-case or non-hex digits, all-zero ids,
// version ff.
std::optional<TraceParent> ParseTraceParent(absl::string_view value);

// A random trace id (32 hex digits) and span id (16), never all zero.
std::string NewTraceId();
std::string NewSpanId();

}  // namespace giftwall::logging

#endif  // GIFTWALL_SERVER_LOGGING_TRACE_CONTEXT_H_
