// The rows that verify and rebuild (projection/wall_audit) read and write: the walls of a range
// of users, the done events of the ledger with their outbox rows, one gift's rows replaced, done
// events written dead, the rebuild lock. It decides nothing.
#ifndef GIFTWALL_SERVER_STORAGE_WALL_AUDIT_REPOSITORY_H_
#define GIFTWALL_SERVER_STORAGE_WALL_AUDIT_REPOSITORY_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "server/domain/wall_fold.h"
#include "server/storage/connection_pool.h"

namespace giftwall::storage {

// A done event of the ledger, with its outbox row (the source of truth) as found under one of
// the codes the outbox holds the app's events under.
struct DoneEventRow {
  int64_t user_id = 0;  // the ledger's target_user_id
  std::string event_id;
  bool in_outbox = false;  // false: no outbox row under any of the codes (pruned)
  std::string event_type;
  std::string payload;
  int64_t created_at_ms = 0;
};

class WallAuditRepository {
 public:
  explicit WallAuditRepository(ConnectionPool& pool) : pool_(pool) {}

  // Every user of the app with a ledger row or a wall row, ascending.
  absl::StatusOr<std::vector<int64_t>> ListUsers(absl::string_view app_code);

 private:
  ConnectionPool& pool_;
};

// The statements of verify and rebuild, on the caller's session and in its transaction.
class AuditStatements {
 public:
  explicit AuditStatements(SqlConnection& conn) : conn_(conn) {}

  // Every code the outbox holds gift events under, as written (ReadOutboxAppCodes).
  absl::StatusOr<std::vector<std::string>> OutboxAppCodes();
  // The end of the next chunk of users after `after`, so that (after, end] holds at most a
  // chunk's users with a ledger or wall row; `after` itself when there are none.
  absl::StatusOr<int64_t> NextChunkEnd(absl::string_view app_code, int64_t after);
  // The wall and sender rows of the users in (lo, hi], by user; locked (FOR UPDATE, senders
  // before walls: the order every projection takes them in) if `lock`.
  absl::StatusOr<std::map<int64_t, domain::UserWall>> WallRows(absl::string_view app_code,
                                                               int64_t lo, int64_t hi, bool lock);
  // The same for the users' period walls (DESIGN §2.15), by user and period name
  // ("month:2026-12"); read after WallRows when locking, the order projection takes them in.
  absl::StatusOr<std::map<int64_t, std::map<std::string, domain::UserWall>>> PeriodWallRows(
      absl::string_view app_code, int64_t lo, int64_t hi, bool lock);
  // The done events of the users in (lo, hi], each once, with its outbox row under the first of
  // `outbox_codes` that holds one.
  absl::StatusOr<std::vector<DoneEventRow>> DoneEvents(absl::string_view app_code,
                                                       absl::Span<const std::string> outbox_codes,
                                                       int64_t lo, int64_t hi);
  // One done event (none if it is not done), as DoneEvents reads it.
  absl::StatusOr<std::vector<DoneEventRow>> DoneEvent(absl::string_view app_code,
                                                      absl::Span<const std::string> outbox_codes,
                                                      absl::string_view event_id);
  // The ids of one user's done events: index-only, cheap under locks.
  absl::StatusOr<std::set<std::string>> DoneEventIds(absl::string_view app_code, int64_t user_id);
  // Replaces one gift's wall and sender rows, all-time (`period` "") or of one period
  // ("month:2026-12"), with `row`, or removes them if null.
  absl::Status ReplaceGift(absl::string_view app_code, int64_t user_id, absl::string_view period,
                           const std::string& gift_id, const domain::WallRow* row);
  // Writes done events dead with `reason`, in batches.
  absl::Status KillDoneEvents(absl::string_view app_code, absl::Span<const std::string> event_ids,
                              absl::string_view reason);

 private:
  absl::StatusOr<std::vector<DoneEventRow>> ReadDoneEvents(
      absl::string_view query, absl::Span<const std::string> outbox_codes,
      absl::Span<const SqlParam> params);

  SqlConnection& conn_;
};

}  // namespace giftwall::storage

#endif  // GIFTWALL_SERVER_STORAGE_WALL_AUDIT_REPOSITORY_H_
