// Per-caller limits (the access policy's max_concurrent_calls and max_calls_per_second): calls
// in flight, and a token bucket of calls a second that holds one second's worth. Pure: the time
// is given, nothing here knows gRPC.
#ifndef GIFTWALL_SERVER_TRANSPORT_CALLER_LIMITS_H_
#define GIFTWALL_SERVER_TRANSPORT_CALLER_LIMITS_H_

#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace giftwall::transport {

class CallerLimits {
 public:
  // An admitted call's place among its caller's calls in flight, given back when the last copy
  // of it goes. It may outlive the CallerLimits.
  class Permit;

  CallerLimits();

  // Admits one call of `caller`, whose limits are `max_concurrent` calls in flight and
  // `per_second` calls a second (0: none): OK with *permit set, or RESOURCE_EXHAUSTED naming the
  // limit (and nothing counted).
  absl::Status Admit(const std::string& caller, int max_concurrent, int per_second, absl::Time now,
                     std::shared_ptr<const Permit>* permit);

  // The caller's calls in flight.
  int InFlight(const std::string& caller) const;

 private:
  struct Shared;
  std::shared_ptr<Shared> shared_;
};

}  // namespace giftwall::transport

#endif  // GIFTWALL_SERVER_TRANSPORT_CALLER_LIMITS_H_
