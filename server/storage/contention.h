// Deadlocks (1213) and lock-wait timeouts (1205) are contention, not failure: the work was sound
// and another transaction was in the way. The whole transaction is retried after a jittered
// pause, a few times, and never counted as a failure of the event.
#ifndef GIFTWALL_SERVER_STORAGE_CONTENTION_H_
#define GIFTWALL_SERVER_STORAGE_CONTENTION_H_

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "server/domain/backoff.h"
#include "server/storage/connection_pool.h"

namespace giftwall::storage {

// A uniform number in [0, 1) from a per-thread generator.
double Jitter();

// Runs `body` with a pooled session; when it fails on contention, returns the session to the
// pool, pauses and runs it again, up to policy.contention_attempts times in all, then ABORTED.
// `body` must leave no transaction open when it returns (a Transaction guard does that).
template <typename T>
absl::StatusOr<T> RunWithContentionRetries(
    ConnectionPool& pool, const domain::RetryPolicy& policy,
    absl::FunctionRef<absl::StatusOr<T>(SqlConnection&)> body) {
  const int attempts = std::max(1, policy.contention_attempts);
  for (int attempt = 1;; ++attempt) {
    absl::Status contention;
    {
      absl::StatusOr<PooledConnection> conn = pool.Acquire();
      if (!conn.ok()) return conn.status();
      absl::StatusOr<T> result = body(**conn);
      if (result.ok() || !IsContention(result.status())) return result;
      contention = result.status();
    }  // the session goes back to the pool before the pause
    if (attempt >= attempts) {
      return absl::AbortedError(
          absl::StrFormat("gave up after %d attempts on lock contention; retry later: %s", attempts,
                          contention.message()));
    }
    absl::SleepFor(domain::ContentionBackoff(policy, attempt + 1, Jitter()));
  }
}

}  // namespace giftwall::storage

#endif  // GIFTWALL_SERVER_STORAGE_CONTENTION_H_
