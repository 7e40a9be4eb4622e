// The rows a projection group reads and writes (DESIGN §2): its ledger rows, the sender rows and
// the wall rows its events touch. Each kind is one set-based statement whatever the group's size
// (the rows travel as one JSON parameter, see RowSet), run on the caller's session inside the
// caller's transaction. It decides nothing: the projector says what to write.
#ifndef GIFTWALL_SERVER_STORAGE_PROJECTION_STORE_H_
#define GIFTWALL_SERVER_STORAGE_PROJECTION_STORE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "server/domain/ledger_policy.h"
#include "server/domain/projection.h"
#include "server/domain/wall_fold.h"
#include "server/storage/sql_connection.h"

namespace giftwall::storage {

// The ledger rows that exist for some events of one app, as committed when read.
struct LedgerSnapshot {
  std::map<std::string, domain::LedgerRow> rows;  // by event id
  int64_t now_ms = 0;                             // the database's clock at the read
};

// A ledger row as a claim or a recorded failure writes it.
struct LedgerWrite {
  std::string event_id;
  domain::LedgerStatus status = domain::LedgerStatus::kDone;
  int retry_count = 0;
  bool requeued = false;       // requeue_count + 1
  std::string last_error;      // empty unless dead or failed
  int64_t retry_after_ms = 0;  // next_attempt_at_ms = now + this when > 0, else 0
  domain::ProjectedBy projected_by = domain::ProjectedBy::kRelay;
  int64_t target_user_id = 0;
  // Updates only: the row as it was read. It is written only if it still is so.
  domain::LedgerRow expected;
};

// Sender rows after a merge, by wall row and sender.
using MergedSenders = std::map<domain::WallKey, std::map<int64_t, domain::SenderRow>>;

class ProjectionStore {
 public:
  // `returning`: MariaDB's RETURNING, to merge and read back senders in one statement and to
  // learn which ledger rows an insert skipped; default: as the server supports it.
  explicit ProjectionStore(SqlConnection& conn) : ProjectionStore(conn, conn.is_mariadb()) {}
  ProjectionStore(SqlConnection& conn, bool returning) : conn_(conn), returning_(returning) {}

  // The ledger rows of `event_ids` (of `app_code`) that exist. A plain read: under READ COMMITTED
  // it sees what is committed and takes no lock.
  absl::StatusOr<LedgerSnapshot> ReadLedger(absl::string_view app_code,
                                            absl::Span<const std::string> event_ids);

  // Inserts new ledger rows and returns the event ids of those that exist by now (another
  // caller's claim, committed: its row stands), which are left as they are. Without RETURNING
  // (MySQL) a row that exists fails the whole insert instead (ALREADY_EXISTS, 1062).
  absl::StatusOr<std::vector<std::string>> InsertLedger(absl::string_view app_code,
                                                        absl::Span<const LedgerWrite> rows);
  // Inserts the rows that are still absent and leaves the others as they are.
  absl::Status InsertLedgerIfAbsent(absl::string_view app_code, absl::Span<const LedgerWrite> rows);
  // Updates the rows that are still as their `expected` says; returns how many were.
  absl::StatusOr<int64_t> UpdateLedger(absl::string_view app_code,
                                       absl::Span<const LedgerWrite> rows);

  // Adds the deltas' senders to their sender rows (inserting new ones), in key order, and returns
  // the rows as the merge left them: exactly what this transaction made of them, as it holds
  // their locks. On MariaDB one statement (RETURNING), on MySQL the merge and a read; the
  // all-time rows, then (if the deltas have any) the period rows.
  absl::StatusOr<MergedSenders> MergeSenders(absl::string_view app_code,
                                             const domain::WallDeltas& deltas);

  // Merges each delta into its wall row (inserting new ones), in key order, with what its
  // senders' merge did (`senders`, by the same keys; a key without one had no sender). This is
  // domain::MergeWallTotals in SQL. Strict mode makes an overflowing sum an error (1690).
  // The all-time rows, then the period rows. Returns how many of the all-time rows were new
  // (gifts new to their walls).
  absl::StatusOr<int64_t> MergeWalls(absl::string_view app_code, const domain::WallDeltas& deltas,
                                     const std::map<domain::WallKey, domain::SenderMerge>& senders);

  // The users of `user_ids` whose walls hold more than `cap` distinct gifts, with how many, as
  // this transaction sees them (its snapshot, and its own writes).
  absl::StatusOr<std::map<int64_t, int64_t>> WallsOverCap(absl::string_view app_code,
                                                          absl::Span<const int64_t> user_ids,
                                                          int64_t cap);

  // The gift_count of each wall row of `keys` that exists.
  absl::StatusOr<std::map<domain::WallKey, int64_t>> GiftCounts(
      absl::string_view app_code, absl::Span<const domain::WallKey> keys);

 private:
  SqlConnection& conn_;
  const bool returning_;
};

}  // namespace giftwall::storage

#endif  // GIFTWALL_SERVER_STORAGE_PROJECTION_STORE_H_
