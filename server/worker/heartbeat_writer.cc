#include "server/worker/heartbeat_writer.h"

#include "glog/logging.h"
#include "server/common/status_macros.h"
#include "server/storage/db_clock.h"

namespace giftwall::worker {
namespace {

constexpr absl::string_view kWrite =
    "INSERT INTO giftwall_heartbeat (name, written_at_ms, writer) VALUES "
    "('primary', " GIFTWALL_DB_NOW_MS
    ", ?) ON DUPLICATE KEY UPDATE written_at_ms = VALUES(written_at_ms), writer = VALUES(writer)";

}  // namespace

HeartbeatWriter::HeartbeatWriter(storage::ConnectionPool& pool, const storage::LeaseOptions& lease,
                                 absl::Duration every)
    : pool_(pool),
      holder_(storage::NewLeaseHolder(lease.who)),
      lease_duration_(lease.duration),
      every_(every) {}

HeartbeatWriter::~HeartbeatWriter() {
  stop_.Notify();
  if (!thread_.joinable()) return;
  thread_.join();
  Release();
}

void HeartbeatWriter::Release() {
  if (!held_.has_value()) return;
  absl::StatusOr<storage::PooledConnection> conn = pool_.Acquire();
  absl::Status s = conn.ok() ? storage::LeaseStatements(**conn).Release(*held_) : conn.status();
  LOG_IF(WARNING, !s.ok()) << "heartbeat: the lease is left to expire: " << s;
}

void HeartbeatWriter::Start() {
  thread_ = std::thread([this] { Loop(); });
}

absl::Status HeartbeatWriter::Beat() {
  ASSIGN_OR_RETURN(storage::PooledConnection conn, pool_.Acquire());
  storage::LeaseStatements leases(*conn);
  absl::StatusOr<storage::Lease> lease = leases.Acquire("heartbeat", holder_, lease_duration_);
  if (lease.status().code() == absl::StatusCode::kFailedPrecondition) {
    held_.reset();
    return absl::OkStatus();
  }
  if (!lease.ok()) return lease.status();
  held_ = *lease;
  ASSIGN_OR_RETURN(storage::Transaction tx, storage::Transaction::Begin(*conn));
  RETURN_IF_ERROR(leases.Fence(*lease));
  RETURN_IF_ERROR(conn->Execute(kWrite, {holder_}).status());
  return tx.Commit();
}

void HeartbeatWriter::Loop() {
  bool failing = false;
  do {
    absl::Status s = Beat();
    if (!s.ok() && !failing) LOG(WARNING) << "heartbeat: not written (tried every 2 s): " << s;
    if (s.ok() && failing) LOG(INFO) << "heartbeat: written again";
    failing = !s.ok();
  } while (!stop_.WaitForNotificationWithTimeout(every_));
}

}  // namespace giftwall::worker
