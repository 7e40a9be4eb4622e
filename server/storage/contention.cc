#include "server/storage/contention.h"

#include <algorithm>

#include "absl/random/random.h"
#include "absl/strings/str_format.h"

namespace giftwall::storage {

double Jitter() {
  thread_local absl::BitGen gen;
  return absl::Uniform(gen, 0.0, 1.0);
}

absl::StatusOr<absl::Duration> ContentionRetries::Next(const absl::Status& cause) {
  const int attempts = std::max(1, policy_.contention_attempts);
  if (++attempts_ >= attempts) {
    return absl::AbortedError(
        absl::StrFormat("gave up after %d attempts on lock contention; retry later: %s", attempts_,
                        cause.message()));
  }
  return domain::ContentionBackoff(policy_, attempts_ + 1, Jitter());
}

}  // namespace giftwall::storage
