#include "server/storage/contention.h"

#include <algorithm>

#include "absl/base/thread_annotations.h"
#include "absl/random/random.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "glog/logging.h"

namespace giftwall::storage {
namespace {

constexpr absl::Duration kLogEvery = absl::Seconds(10);

// Counts every retry; logs them at most once per kLogEvery, with how many since the last line.
class RetryLog {
 public:
  void Count(DbErrorKind kind, const absl::Status& cause) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    ++total_[kind];
    ++since_[kind];
    const absl::Time now = absl::Now();
    if (now - logged_at_ < kLogEvery) return;
    LOG(WARNING) << "contention: " << since_[DbErrorKind::kConflict]
                 << " retry(ies) on conflicts (deadlocks, or on a Galera cluster certification "
                    "conflicts) and "
                 << since_[DbErrorKind::kLockWait] << " on lock waits since "
                 << (logged_at_ == absl::InfinitePast() ? "start" : "the last such line")
                 << "; the last: " << cause.message();
    since_.clear();
    logged_at_ = now;
  }
  std::map<DbErrorKind, int64_t> Totals() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return total_;
  }

 private:
  absl::Mutex mu_;
  std::map<DbErrorKind, int64_t> total_ ABSL_GUARDED_BY(mu_);
  std::map<DbErrorKind, int64_t> since_ ABSL_GUARDED_BY(mu_);
  absl::Time logged_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

RetryLog& Retries() {
  static auto* const log = new RetryLog();
  return *log;
}

}  // namespace

double Jitter() {
  thread_local absl::BitGen gen;
  return absl::Uniform(gen, 0.0, 1.0);
}

absl::StatusOr<absl::Duration> ContentionRetries::Next(const absl::Status& cause) {
  const int attempts = std::max(1, policy_.contention_attempts);
  if (++attempts_ >= attempts) {
    // ABORTED, unless the cause said the node takes no writes for now (Group Replication's
    // certification rollback, 3101): the caller retries either, later.
    return absl::Status(
        cause.code() == absl::StatusCode::kUnavailable ? absl::StatusCode::kUnavailable
                                                       : absl::StatusCode::kAborted,
        absl::StrFormat("gave up after %d attempts on lock contention; retry later: %s", attempts_,
                        cause.message()));
  }
  Retries().Count(ErrorKindOf(cause), cause);
  return domain::ContentionBackoff(policy_, attempts_ + 1, Jitter());
}

std::map<std::string, int64_t> ContentionRetryCounts() {
  std::map<std::string, int64_t> counts;
  for (const auto& [kind, count] : Retries().Totals()) {
    counts[std::string(DbErrorKindName(kind))] = count;
  }
  return counts;
}

}  // namespace giftwall::storage
