#include "server/storage/lease_store.h"

#include <unistd.h>

#include <algorithm>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "glog/logging.h"
#include "server/common/status_macros.h"
#include "server/domain/lease.h"
#include "server/storage/contention.h"
#include "server/storage/db_clock.h"
#include "server/storage/db_error.h"

namespace giftwall::storage {
namespace {

// A lease never taken gets its row first, outside the transaction that decides, so that the
// decision always reads (and locks) a row: two takers of a new lease then wait for each other
// (on a cluster, one of them meets a certification conflict) instead of both inserting.
constexpr absl::string_view kEnsureRow = R"sql(
INSERT IGNORE INTO giftwall_leases
  (name, holder, token, expires_at_ms, taken_at_ms, renewed_at_ms)
VALUES (?, '', 0, 0, 0, 0))sql";

constexpr absl::string_view kReadLocked = "SELECT holder, token, expires_at_ms, " GIFTWALL_DB_NOW_MS
                                          " FROM giftwall_leases WHERE name = ? FOR UPDATE";

constexpr absl::string_view kWrite = R"sql(
UPDATE giftwall_leases
SET holder = ?, token = ?, expires_at_ms = ?, taken_at_ms = IF(? = 1, ?, taken_at_ms),
    renewed_at_ms = ?
WHERE name = ?)sql";

constexpr absl::string_view kRelease =
    "UPDATE giftwall_leases SET expires_at_ms = LEAST(expires_at_ms, " GIFTWALL_DB_NOW_MS
    ") WHERE name = ? AND holder = ? AND token = ?";

constexpr absl::string_view kFence =
    "UPDATE giftwall_leases SET fenced_writes = fenced_writes + 1 "
    "WHERE name = ? AND holder = ? AND token = ? AND expires_at_ms > " GIFTWALL_DB_NOW_MS;

constexpr int kAcquireAttempts = 5;

constexpr absl::string_view kLostPayload = "giftwall.storage/lease-lost";

}  // namespace

std::string NewLeaseHolder(absl::string_view who) {
  static std::atomic<int64_t> sequence{0};
  static const uint64_t process_nonce = absl::Uniform<uint64_t>(absl::BitGen());
  return absl::StrFormat("%s/%d-%08x#%d", who, getpid(), process_nonce & 0xffffffffu, ++sequence);
}

absl::StatusOr<Lease> LeaseStatements::Acquire(absl::string_view name, absl::string_view holder,
                                               absl::Duration duration) {
  const int64_t duration_ms = absl::ToInt64Milliseconds(duration);
  for (int attempt = 1;; ++attempt) {
    absl::StatusOr<Lease> lease = [&]() -> absl::StatusOr<Lease> {
      RETURN_IF_ERROR(conn_.Execute(kEnsureRow, {name}).status());
      ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(conn_));
      domain::LeaseRow current;
      int64_t now_ms = 0;
      RETURN_IF_ERROR(conn_.Query(kReadLocked, {name}, [&](const SqlRow& row) {
        current = domain::LeaseRow{row.Str(0), row.Int(1), row.Int(2)};
        now_ms = row.Int(3);
      }));
      const domain::LeaseDecision d = domain::DecideLease(current, holder, now_ms, duration_ms);
      if (d.kind == domain::LeaseDecision::Kind::kRefused) {
        return absl::FailedPreconditionError(
            absl::StrCat("the lease ", name, " is ", domain::DescribeHolder(d.row, now_ms)));
      }
      const bool taken = d.kind == domain::LeaseDecision::Kind::kTake;
      RETURN_IF_ERROR(conn_
                          .Execute(kWrite, {d.row.holder, d.row.token, d.row.expires_at_ms,
                                            int64_t{taken}, now_ms, now_ms, name})
                          .status());
      RETURN_IF_ERROR(tx.Commit());
      return Lease{std::string(name), d.row.holder, d.row.token, d.row.expires_at_ms};
    }();
    // A failed COMMIT leaves the session broken (its state unknown): its owner opens another.
    if (lease.ok() || !IsContention(lease.status()) || conn_.broken() ||
        attempt == kAcquireAttempts) {
      return lease;
    }
    absl::SleepFor(absl::Milliseconds(5 + 20 * Jitter()));
  }
}

absl::Status LeaseStatements::Release(const Lease& lease) {
  return conn_.Execute(kRelease, {lease.name, lease.holder, lease.token}).status();
}

absl::Status LeaseStatements::Fence(const Lease& lease) {
  ASSIGN_OR_RETURN(const int64_t rows,
                   conn_.Execute(kFence, {lease.name, lease.holder, lease.token}));
  if (rows == 1) return absl::OkStatus();
  absl::Status lost = absl::FailedPreconditionError(absl::StrCat(
      "the lease ", lease.name, " (token ", lease.token, ") is no longer ", lease.holder,
      "'s: it expired or another took it, so nothing more is done under it"));
  lost.SetPayload(kLostPayload, absl::Cord("1"));
  return lost;
}

bool IsLeaseLost(const absl::Status& status) { return status.GetPayload(kLostPayload).has_value(); }

absl::StatusOr<std::unique_ptr<LeaseKeeper>> LeaseKeeper::Take(
    const MysqlEndpoint& endpoint, const SessionOptions& session, absl::string_view name,
    absl::string_view holder, absl::Duration duration, absl::Duration wait) {
  // The keeper's statements are short: a database that hangs must not hold its renewals (or its
  // owner, waiting for it to stop) for the session's own, maybe long, timeouts.
  SessionOptions keeper = session;
  keeper.read_timeout = std::min(keeper.read_timeout, duration / 3);
  keeper.write_timeout = std::min(keeper.write_timeout, duration / 3);
  keeper.statement_timeout = duration / 3;
  const absl::Time deadline = absl::Now() + wait;
  std::unique_ptr<SqlConnection> conn;
  for (;;) {
    if (conn == nullptr || conn->broken()) {
      ASSIGN_OR_RETURN(conn, SqlConnection::Open(endpoint, keeper));
    }
    absl::StatusOr<Lease> lease = LeaseStatements(*conn).Acquire(name, holder, duration);
    if (lease.ok()) {
      return std::unique_ptr<LeaseKeeper>(
          new LeaseKeeper(std::move(conn), *std::move(lease), duration, endpoint, keeper));
    }
    const absl::Duration left = deadline - absl::Now();
    const bool waits = lease.status().code() == absl::StatusCode::kFailedPrecondition ||
                       IsContention(lease.status());
    if (!waits || left <= absl::ZeroDuration()) return lease.status();
    absl::SleepFor(std::min(left, absl::Milliseconds(250)));
  }
}

LeaseKeeper::LeaseKeeper(std::unique_ptr<SqlConnection> conn, Lease lease, absl::Duration duration,
                         MysqlEndpoint endpoint, SessionOptions session)
    : endpoint_(std::move(endpoint)),
      session_(session),
      lease_(std::move(lease)),
      duration_(duration),
      conn_(std::move(conn)) {
  renewer_ = std::thread([this] { RenewUntilStopped(); });
}

LeaseKeeper::~LeaseKeeper() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  renewer_.join();
  if (conn_ == nullptr || conn_->broken() || lost()) return;
  absl::Status released = LeaseStatements(*conn_).Release(lease_);
  LOG_IF(WARNING, !released.ok()) << "releasing the lease " << lease_.name
                                  << " (it expires by itself): " << released;
}

void LeaseKeeper::RenewUntilStopped() {
  absl::Time renewed_at = absl::Now();
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      if (mu_.AwaitWithTimeout(absl::Condition(&stopping_), duration_ / 3)) return;
    }
    absl::Status s = [&]() -> absl::Status {
      if (conn_ == nullptr || conn_->broken()) {
        conn_.reset();
        ASSIGN_OR_RETURN(conn_, SqlConnection::Open(endpoint_, session_));
      }
      ASSIGN_OR_RETURN(const Lease renewed,
                       LeaseStatements(*conn_).Acquire(lease_.name, lease_.holder, duration_));
      // Lapsed, taken by another meanwhile and let go again: a new token, not this lease.
      if (renewed.token != lease_.token) {
        (void)LeaseStatements(*conn_).Release(renewed);  // not this keeper's to hold
        return absl::FailedPreconditionError(
            absl::StrCat("the lease went to token ", renewed.token, " meanwhile"));
      }
      return absl::OkStatus();
    }();
    if (s.ok()) {
      renewed_at = absl::Now();
      continue;
    }
    // Refused: another holds it. Unrenewed for a whole duration: another may.
    if (s.code() == absl::StatusCode::kFailedPrecondition ||
        absl::Now() - renewed_at >= duration_) {
      LOG(WARNING) << "lost the lease " << lease_.name << " (token " << lease_.token << "): " << s;
      lost_ = true;
      return;
    }
    LOG(WARNING) << "renewing the lease " << lease_.name << " (tried again in "
                 << absl::FormatDuration(duration_ / 3) << "): " << s;
  }
}

}  // namespace giftwall::storage
