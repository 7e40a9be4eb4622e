// Leases in the database (giftwall_leases, DESIGN §2.20): taken, renewed, released and checked
// by fencing. What a request for a lease gets is domain::DecideLease's; this is where it is read
// and written.
#ifndef GIFTWALL_SERVER_STORAGE_LEASE_STORE_H_
#define GIFTWALL_SERVER_STORAGE_LEASE_STORE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/storage/mysql_url.h"
#include "server/storage/sql_connection.h"

namespace giftwall::storage {

// A lease as its holder took it.
struct Lease {
  std::string name;
  std::string holder;
  int64_t token = 0;
  int64_t expires_at_ms = 0;  // database time, as of the last take or renewal
};

// Who takes a replica's leases, and for how long (--worker_id, --lease_duration).
struct LeaseOptions {
  std::string who = "giftwall";
  absl::Duration duration = absl::Seconds(30);
};

// A holder name no other process, and no other taker in this one, has: `who` (the worker id),
// the process and a sequence number.
std::string NewLeaseHolder(absl::string_view who);

// Whether `status` is a Fence's: the lease went to another (or expired) before the write.
bool IsLeaseLost(const absl::Status& status);

// The lease statements, on the caller's session.
class LeaseStatements {
 public:
  explicit LeaseStatements(SqlConnection& conn) : conn_(conn) {}

  // Takes the lease `name` for `holder` for `duration`, or renews it if `holder` has it, in a
  // transaction of its own (retried on contention, which on a cluster is also two nodes taking
  // it at once). FAILED_PRECONDITION, saying who holds it and for how long, if another does.
  absl::StatusOr<Lease> Acquire(absl::string_view name, absl::string_view holder,
                                absl::Duration duration);
  // Ends `lease` now if it is still its holder's, so that another may take it at once.
  absl::Status Release(const Lease& lease);
  // Inside the caller's transaction: OK only while `lease` is its holder's, with its token, and
  // unexpired; FAILED_PRECONDITION (IsLeaseLost) otherwise. It writes the lease row, so that a
  // takeover waits for the transaction (or, on another cluster node, cannot commit with it).
  absl::Status Fence(const Lease& lease);

 private:
  SqlConnection& conn_;
};

// A lease kept on a session of its own: renewed every third of its duration until destroyed,
// then released. Thread-safe.
class LeaseKeeper {
 public:
  // Takes `name` (FAILED_PRECONDITION if another holds it); `wait` > 0 asks again until then.
  static absl::StatusOr<std::unique_ptr<LeaseKeeper>> Take(
      const MysqlEndpoint& endpoint, const SessionOptions& session, absl::string_view name,
      absl::string_view holder, absl::Duration duration,
      absl::Duration wait = absl::ZeroDuration());
  ~LeaseKeeper();
  LeaseKeeper(const LeaseKeeper&) = delete;
  LeaseKeeper& operator=(const LeaseKeeper&) = delete;

  // The lease as taken: its name, holder and token do not change while it is kept.
  const Lease& lease() const { return lease_; }
  // Whether it may have gone to another: a renewal was refused, or none succeeded for a whole
  // duration. Work under it stops; its fenced writes fail anyway.
  bool lost() const { return lost_.load(); }

 private:
  LeaseKeeper(std::unique_ptr<SqlConnection> conn, Lease lease, absl::Duration duration,
              MysqlEndpoint endpoint, SessionOptions session);
  void RenewUntilStopped();

  const MysqlEndpoint endpoint_;
  const SessionOptions session_;
  const Lease lease_;
  const absl::Duration duration_;
  std::unique_ptr<SqlConnection> conn_;  // the renewing thread's, once it runs
  std::atomic<bool> lost_{false};
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread renewer_;
};

}  // namespace giftwall::storage

#endif  // GIFTWALL_SERVER_STORAGE_LEASE_STORE_H_
