// Where the wall reads go when a read replica is configured (--mysql_read_url): to the replica
// while it is usable, else to the primary (or, if told so, nowhere: UNAVAILABLE). Usable means,
// as a check every 2 s on a session of its own finds: reachable, its schema at the version this
// binary needs (a migration replicates like any write, and may not have yet), and trailing the
// primary by at most max_lag: the age of its copy of the primary's heartbeat row
// (HeartbeatWriter) less the age of the primary's own. Out of use, it comes back below half of
// max_lag. Each change is logged once.
#ifndef GIFTWALL_SERVER_STORAGE_REPLICA_ROUTER_H_
#define GIFTWALL_SERVER_STORAGE_REPLICA_ROUTER_H_

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "server/storage/connection_pool.h"

namespace giftwall::storage {

struct ReplicaOptions {
  absl::Duration max_lag = absl::Seconds(30);
  bool fall_back_to_primary = true;  // else reads answer UNAVAILABLE while it is not usable
  absl::Duration check_every = absl::Seconds(2);
};

class ReplicaRouter final : public SessionSource {
 public:
  // Checks the replica at once, then every options.check_every, until destroyed.
  ReplicaRouter(ConnectionPool& primary, ConnectionPool& replica, ReplicaOptions options);
  ~ReplicaRouter() override;
  ReplicaRouter(const ReplicaRouter&) = delete;
  ReplicaRouter& operator=(const ReplicaRouter&) = delete;

  // A session of the replica while it is usable (of the primary if the replica's pool fails and
  // the router falls back); else of the primary, or UNAVAILABLE saying why the replica is not
  // used.
  absl::StatusOr<PooledConnection> Acquire() override;

  // For the metrics: whether reads go to the replica now, and its lag as last measured.
  bool in_use() const { return in_use_.load(); }
  std::optional<double> lag_seconds() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void CheckLoop();
  // Empty when the replica is usable, else why not.
  std::string Check();
  // How old the heartbeat row is on the primary, read through its pool.
  absl::StatusOr<int64_t> PrimaryHeartbeatAgeMs();

  ConnectionPool& primary_;
  ConnectionPool& replica_;
  const ReplicaOptions options_;
  std::unique_ptr<SqlConnection> conn_;  // the checking thread's only
  std::atomic<bool> in_use_{false};
  mutable absl::Mutex mu_;
  std::string not_used_because_ ABSL_GUARDED_BY(mu_) = "not checked yet";
  std::optional<double> lag_seconds_ ABSL_GUARDED_BY(mu_);
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace giftwall::storage

#endif  // GIFTWALL_SERVER_STORAGE_REPLICA_ROUTER_H_
