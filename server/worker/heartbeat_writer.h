// The primary's heartbeat (giftwall_heartbeat): whoever holds the `heartbeat` lease (DESIGN
// §2.20) writes the database's now into its row every 2 s, so that a read replica's copy says how
// far it trails (storage::ReplicaRouter), with the scan on or off. Every server runs one; one at
// a time writes.
#ifndef GIFTWALL_SERVER_WORKER_HEARTBEAT_WRITER_H_
#define GIFTWALL_SERVER_WORKER_HEARTBEAT_WRITER_H_

#include <optional>
#include <string>
#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "server/storage/connection_pool.h"
#include "server/storage/lease_store.h"

namespace giftwall::worker {

class HeartbeatWriter {
 public:
  HeartbeatWriter(storage::ConnectionPool& pool, const storage::LeaseOptions& lease,
                  absl::Duration every = absl::Seconds(2));
  // Stops writing, and lets the lease go if it holds it: another server's writer takes over at
  // its next beat.
  ~HeartbeatWriter();
  HeartbeatWriter(const HeartbeatWriter&) = delete;
  HeartbeatWriter& operator=(const HeartbeatWriter&) = delete;

  void Start();

 private:
  void Loop();
  // One beat: the lease, then the row under it. OK also when another holds the lease.
  absl::Status Beat();
  void Release();

  storage::ConnectionPool& pool_;
  const std::string holder_;
  const absl::Duration lease_duration_;
  const absl::Duration every_;
  std::optional<storage::Lease> held_;  // the beating thread's; read after it stopped
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace giftwall::worker

#endif  // GIFTWALL_SERVER_WORKER_HEARTBEAT_WRITER_H_
