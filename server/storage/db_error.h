// What a database error means for the caller, decided once, here: every error storage returns
// carries its kind (a status payload), and code above storage acts on the kind, never on a MySQL
// error number. This is also where the errors are counted (giftwall_db_errors_total{errno}).
#ifndef GIFTWALL_SERVER_STORAGE_DB_ERROR_H_
#define GIFTWALL_SERVER_STORAGE_DB_ERROR_H_

#include <cstdint>
#include <map>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace giftwall::storage {

enum class DbErrorKind {
  kNone,  // not an error
  // Contention: the work was sound and another transaction was in the way. Two kinds, because
  // they undo different amounts:
  kConflict,     // a deadlock or a cluster's certification conflict: the transaction rolled back
  kLockWait,     // a lock wait past the bound: only the statement rolled back
  kDuplicate,    // a unique key already taken
  kPermanent,    // a value out of range or too long for its column: no retry can fix it
  kUnavailable,  // the server is away, busy or not ready (a cluster node that is not synced)
  kTransient,    // anything else: a statement time limit, a bug, a schema that does not match
};

absl::string_view DbErrorKindName(DbErrorKind kind);

// The kind of an error returned by storage. A status that storage did not classify is
// kUnavailable if its code is UNAVAILABLE and kTransient otherwise; OK is kNone.
DbErrorKind ErrorKindOf(const absl::Status& status);

// `status` marked as of `kind`: for the few errors storage makes itself, and for fakes of
// storage in tests.
absl::Status WithErrorKind(absl::Status status, DbErrorKind kind);

inline bool IsContention(DbErrorKind kind) {
  return kind == DbErrorKind::kConflict || kind == DbErrorKind::kLockWait;
}
inline bool IsContention(const absl::Status& status) { return IsContention(ErrorKindOf(status)); }

// The status for a server error `code` (with its SQLSTATE and message), classified and counted.
absl::Status MysqlError(int code, absl::string_view sqlstate, absl::string_view message);
// Counts an error of the connector's own (no server error number, `code` 0) or one met while
// connecting, which is reported as UNAVAILABLE whatever its number.
void CountMysqlError(int code);

// Whether a server error `code` means the session itself is gone or cannot be trusted (lost,
// killed, the server shutting down, a cluster node not ready, a node that takes no writes): it
// must be discarded, so that the next session (through a proxy, to another node) is a new one.
bool IsSessionLost(int code);

// The server's error number behind a status returned by storage; 0 if there is none. For logs
// and tests: decisions go by ErrorKindOf.
int MysqlErrno(const absl::Status& status);

// How many errors sessions of this process have met, by MySQL/MariaDB error number (0: the
// connector's own, with no server error number): for the metrics.
std::map<int, int64_t> MysqlErrorCounts();

}  // namespace giftwall::storage

#endif  // GIFTWALL_SERVER_STORAGE_DB_ERROR_H_
