// Contention (DbErrorKind kConflict or kLockWait) is not failure: the work was sound and another
// transaction was in the way. The whole transaction is retried after a jittered
// pause, a few times, and never counted as a failure of the event.
#ifndef GIFTWALL_SERVER_STORAGE_CONTENTION_H_
#define GIFTWALL_SERVER_STORAGE_CONTENTION_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "server/domain/backoff.h"
#include "server/storage/connection_pool.h"
#include "server/storage/db_error.h"

namespace giftwall::storage {

// A uniform number in [0, 1) from a per-thread generator.
double Jitter();

// The pauses between the attempts of one piece of work that meets contention, and the point
// where it gives up: the one retry policy for contention, whoever retries.
class ContentionRetries {
 public:
  explicit ContentionRetries(const domain::RetryPolicy& policy) : policy_(policy) {}

  // After an attempt that met contention (`cause`): the pause before the next attempt, or
  // ABORTED (UNAVAILABLE for a cause that is) once policy.contention_attempts attempts have met
  // it.
  absl::StatusOr<absl::Duration> Next(const absl::Status& cause);

 private:
  const domain::RetryPolicy& policy_;
  int attempts_ = 0;
};

// Retries on contention this process has made, by kind ("conflict", "lock_wait"): for the
// metrics. Each retry is counted; they are logged at most once per 10 s, with their number.
std::map<std::string, int64_t> ContentionRetryCounts();

// Runs `body` with a pooled session; when it fails on contention, returns the session to the
// pool, pauses and runs it again, up to policy.contention_attempts times in all, then ABORTED.
// `body` must leave no transaction open when it returns (a Transaction guard does that).
template <typename T>
absl::StatusOr<T> RunWithContentionRetries(
    ConnectionPool& pool, const domain::RetryPolicy& policy,
    absl::FunctionRef<absl::StatusOr<T>(SqlConnection&)> body) {
  ContentionRetries retries(policy);
  for (;;) {
    absl::Status contention;
    {
      absl::StatusOr<PooledConnection> conn = pool.Acquire();
      if (!conn.ok()) return conn.status();
      absl::StatusOr<T> result = body(**conn);
      if (result.ok() || !IsContention(result.status())) return result;
      contention = result.status();
    }  // the session goes back to the pool before the pause
    absl::StatusOr<absl::Duration> pause = retries.Next(contention);
    if (!pause.ok()) return pause.status();
    absl::SleepFor(*pause);
  }
}

}  // namespace giftwall::storage

#endif  // GIFTWALL_SERVER_STORAGE_CONTENTION_H_
