// How long to wait before trying again: after a failed projection, and after contention.
#ifndef GIFTWALL_SERVER_DOMAIN_BACKOFF_H_
#define GIFTWALL_SERVER_DOMAIN_BACKOFF_H_

#include "absl/time/time.h"

namespace giftwall::domain {

struct RetryPolicy {
  // A failed event goes dead when its retry_count reaches this (the seed's projectionMaxRetries).
  int max_retries = 10;
  // The scanner retries a failed event after about base * 2^(failures - 1), at most cap.
  absl::Duration backoff_base = absl::Seconds(1);
  absl::Duration backoff_cap = absl::Minutes(5);
  // Deadlocks and lock-wait timeouts are retried this many times in all before ABORTED.
  int contention_attempts = 6;
  absl::Duration contention_base = absl::Milliseconds(5);
};

// Delay before the scanner may retry an event that has now failed `failures` times (>= 1):
// capped exponential, with "equal jitter" (half fixed, half scaled by `jitter` in [0, 1]) so
// that events failing together do not come back together.
absl::Duration FailureBackoff(const RetryPolicy& policy, int failures, double jitter);

// Pause before attempt `attempt` (>= 2) of a transaction that hit contention: linear growth,
// fully jittered, so the contending transactions spread out.
absl::Duration ContentionBackoff(const RetryPolicy& policy, int attempt, double jitter);

}  // namespace giftwall::domain

#endif  // GIFTWALL_SERVER_DOMAIN_BACKOFF_H_
