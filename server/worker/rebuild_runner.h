// Rebuilds run by the server, not by the caller: a rebuild goes on when its client disconnects,
// and any number of watchers can follow its progress.
#ifndef GIFTWALL_SERVER_WORKER_REBUILD_RUNNER_H_
#define GIFTWALL_SERVER_WORKER_REBUILD_RUNNER_H_

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/projection/wall_audit.h"

namespace giftwall::worker {

inline constexpr int kDefaultMaxConcurrentRebuilds = 1;

struct RebuildProgress {
  std::string phase;  // "listing users", "rebuilding", "done"
  int64_t done = 0;   // users rebuilt (or left alone), of total
  int64_t total = 0;
  int64_t unverifiable = 0;
  bool finished = false;
  absl::Status result;  // once finished
};

// One rebuild's progress, shared by its thread and its watchers.
class RebuildJob {
 public:
  explicit RebuildJob(std::string app_code) : app_code_(std::move(app_code)) {}

  const std::string& app_code() const { return app_code_; }
  RebuildProgress Progress() const ABSL_LOCKS_EXCLUDED(mu_);

  // Waits until the progress has changed since version `*seen` (or `timeout` passes); returns
  // whether it did, with the progress and its version.
  bool WaitForChange(uint64_t* seen, absl::Duration timeout, RebuildProgress* progress) const
      ABSL_LOCKS_EXCLUDED(mu_);

  void Update(RebuildProgress progress) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const std::string app_code_;
  mutable absl::Mutex mu_;
  RebuildProgress progress_ ABSL_GUARDED_BY(mu_);
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 0;
};

class RebuildRunner {
 public:
  // At most `max_running` rebuilds (of different apps) at once in this process.
  explicit RebuildRunner(projection::WallAudit& audit,
                         int max_running = kDefaultMaxConcurrentRebuilds)
      : audit_(audit), max_running_(max_running) {}
  // Stops running rebuilds between two users and waits for them.
  ~RebuildRunner();

  // Starts rebuilding app_code's walls on a thread of the runner's: every user with a ledger
  // or a wall row, one transaction each, under the app's rebuild lease (each transaction checks
  // it; a rebuild that lost it stops). FAILED_PRECONDITION if a rebuild of the app is running
  // already, in this process or another; RESOURCE_EXHAUSTED if this process runs max_running
  // rebuilds already.
  absl::StatusOr<std::shared_ptr<RebuildJob>> Start(const std::string& app_code)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Run(std::unique_ptr<storage::LeaseKeeper> lease, std::shared_ptr<RebuildJob> job);

  projection::WallAudit& audit_;
  const int max_running_;
  std::atomic<bool> stopping_{false};
  absl::Mutex mu_;
  struct Running {
    std::shared_ptr<RebuildJob> job;
    std::thread thread;
  };
  std::list<Running> running_ ABSL_GUARDED_BY(mu_);
};

}  // namespace giftwall::worker

#endif  // GIFTWALL_SERVER_WORKER_REBUILD_RUNNER_H_
