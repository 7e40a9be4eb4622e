#include "server/storage/db_error.h"

#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/optional.h"

namespace giftwall::storage {
namespace {

constexpr absl::string_view kErrnoPayload = "giftwall.storage/mysql-errno";
constexpr absl::string_view kKindPayload = "giftwall.storage/error-kind";

// MySQL/MariaDB error numbers, by what they mean.
constexpr int kTooManyConnections = 1040;
constexpr int kWsrepNotReady = 1047;  // under wsrep: the node is not ready for queries
constexpr int kServerShutdown = 1053;
constexpr int kAbortedConnection = 1152;
constexpr int kDuplicateKey = 1062;
constexpr int kLockWaitTimeout = 1205;
constexpr int kDeadlock = 1213;  // also a Galera certification conflict
constexpr int kOutOfRange = 1264;
constexpr int kDataTooLong = 1406;
constexpr int kBigintOutOfRange = 1690;
constexpr int kConnectionKilled = 1927;  // MariaDB: KILL of this connection
constexpr int kStatementTimeoutMariadb = 1969;
constexpr int kStatementTimeoutMysql = 3024;
constexpr int kDisconnectedIdle = 4031;      // MySQL: disconnected for inactivity
constexpr int kReadOnly = 1290;              // --read-only (a replica, a secondary, a fenced node)
constexpr int kGroupReplicationHook = 3100;  // MySQL GR: the member cannot take a write
constexpr int kGroupReplicationRollback = 3101;  // MySQL GR: certification rolled it back

struct Meaning {
  DbErrorKind kind;
  absl::StatusCode code;
};

Meaning MeaningOf(int code) {
  if (IsSessionLost(code) || code == kTooManyConnections) {
    return {DbErrorKind::kUnavailable, absl::StatusCode::kUnavailable};
  }
  switch (code) {
    case kDeadlock:
      return {DbErrorKind::kConflict, absl::StatusCode::kAborted};
    // Retried as a deadlock is; past the retries, the member is not taking writes for now.
    case kGroupReplicationRollback:
      return {DbErrorKind::kConflict, absl::StatusCode::kUnavailable};
    case kLockWaitTimeout:
      return {DbErrorKind::kLockWait, absl::StatusCode::kAborted};
    case kDuplicateKey:
      return {DbErrorKind::kDuplicate, absl::StatusCode::kAlreadyExists};
    case kBigintOutOfRange:
    case kOutOfRange:
    case kDataTooLong:
      return {DbErrorKind::kPermanent, absl::StatusCode::kOutOfRange};
    case kStatementTimeoutMariadb:
    case kStatementTimeoutMysql:
      return {DbErrorKind::kTransient, absl::StatusCode::kDeadlineExceeded};
    default:
      return {DbErrorKind::kTransient, absl::StatusCode::kInternal};
  }
}

absl::Mutex counts_mu(absl::kConstInit);
std::map<int, int64_t>& Counts() ABSL_EXCLUSIVE_LOCKS_REQUIRED(counts_mu) {
  static auto* const counts = new std::map<int, int64_t>();
  return *counts;
}

}  // namespace

absl::string_view DbErrorKindName(DbErrorKind kind) {
  switch (kind) {
    case DbErrorKind::kNone:
      return "none";
    case DbErrorKind::kConflict:
      return "conflict";
    case DbErrorKind::kLockWait:
      return "lock_wait";
    case DbErrorKind::kDuplicate:
      return "duplicate";
    case DbErrorKind::kPermanent:
      return "permanent";
    case DbErrorKind::kUnavailable:
      return "unavailable";
    case DbErrorKind::kTransient:
      return "transient";
  }
  return "transient";
}

DbErrorKind ErrorKindOf(const absl::Status& status) {
  if (status.ok()) return DbErrorKind::kNone;
  absl::optional<absl::Cord> payload = status.GetPayload(kKindPayload);
  int kind = 0;
  if (payload && absl::SimpleAtoi(std::string(*payload), &kind) &&
      kind > static_cast<int>(DbErrorKind::kNone) &&
      kind <= static_cast<int>(DbErrorKind::kTransient)) {
    return static_cast<DbErrorKind>(kind);
  }
  return status.code() == absl::StatusCode::kUnavailable ? DbErrorKind::kUnavailable
                                                         : DbErrorKind::kTransient;
}

absl::Status WithErrorKind(absl::Status status, DbErrorKind kind) {
  status.SetPayload(kKindPayload, absl::Cord(absl::StrCat(static_cast<int>(kind))));
  return status;
}

absl::Status MysqlError(int code, absl::string_view sqlstate, absl::string_view message) {
  CountMysqlError(code);
  const Meaning meaning = MeaningOf(code);
  absl::Status status(meaning.code,
                      absl::StrFormat("mysql error %d (%s): %s", code, sqlstate, message));
  status.SetPayload(kErrnoPayload, absl::Cord(absl::StrCat(code)));
  return WithErrorKind(std::move(status), meaning.kind);
}

void CountMysqlError(int code) {
  absl::MutexLock lock(&counts_mu);
  ++Counts()[code];
}

bool IsSessionLost(int code) {
  return (code >= 2000 && code < 3000) || code == kConnectionKilled || code == kServerShutdown ||
         code == kAbortedConnection || code == kDisconnectedIdle || code == kWsrepNotReady ||
         code == kReadOnly || code == kGroupReplicationHook;
}

int MysqlErrno(const absl::Status& status) {
  absl::optional<absl::Cord> payload = status.GetPayload(kErrnoPayload);
  int code = 0;
  if (payload && absl::SimpleAtoi(std::string(*payload), &code)) return code;
  return 0;
}

std::map<int, int64_t> MysqlErrorCounts() {
  absl::MutexLock lock(&counts_mu);
  return Counts();
}

}  // namespace giftwall::storage
