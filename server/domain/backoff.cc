#include "server/domain/backoff.h"

#include <algorithm>

namespace giftwall::domain {

absl::Duration FailureBackoff(const RetryPolicy& policy, int failures, double jitter) {
  jitter = std::clamp(jitter, 0.0, 1.0);
  absl::Duration delay = policy.backoff_base;
  for (int i = 1; i < failures && delay < policy.backoff_cap; ++i) delay *= 2;
  delay = std::min(delay, policy.backoff_cap);
  return delay / 2 + (delay / 2) * jitter;
}

absl::Duration ContentionBackoff(const RetryPolicy& policy, int attempt, double jitter) {
  jitter = std::clamp(jitter, 0.0, 1.0);
  return policy.contention_base * std::max(attempt - 1, 1) * (0.5 + jitter);
}

}  // namespace giftwall::domain
