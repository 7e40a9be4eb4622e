#include "server/logging/log_context.h"

#include <utility>

namespace giftwall::logging {
namespace {

thread_local const LogContext* current = nullptr;

}  // namespace

void LogContext::AddEventId(std::string id) {
  ++events;
  if (event_ids.size() < kMaxIds) event_ids.push_back(std::move(id));
}

void LogContext::AddTraceId(std::string id) {
  ++traces;
  if (trace_ids.size() < kMaxIds) trace_ids.push_back(std::move(id));
}

const LogContext* CurrentLogContext() { return current; }

ScopedLogContext::ScopedLogContext(const LogContext* context) : previous_(current) {
  current = context;
}

ScopedLogContext::~ScopedLogContext() { current = previous_; }

}  // namespace giftwall::logging
