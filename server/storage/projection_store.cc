#include "server/storage/projection_store.h"

#include <optional>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "glog/logging.h"
#include "server/common/status_macros.h"
#include "server/storage/columns.h"
#include "server/storage/db_clock.h"
#include "server/storage/row_set.h"
#include "server/storage/wall_columns.h"

namespace giftwall::storage {

using domain::LedgerStatus;
using domain::WallDeltas;
using domain::WallKey;

namespace {

// The rows (row_set.h) are read in their order, which the callers sort by key: every group takes
// its row locks in one order. The table of rows drives each join (STRAIGHT_JOIN): one primary-key
// lookup per row, whatever the table's size. Identifiers travel hex-encoded (UNHEX).

// Where a merge writes: the all-time tables, or the period tables (DESIGN §2.15), whose rows are
// keyed also by their period: their rows carry its kind and key in two more columns, after
// the others. Each scope is merged in a statement of its own, all-time first.
enum class Scope { kAllTime, kPeriods };
constexpr Scope kScopes[] = {Scope::kAllTime, Scope::kPeriods};

bool InScope(const WallKey& key, Scope scope) {
  return key.period.empty() == (scope == Scope::kAllTime);
}
const char* SenderTable(Scope scope) {
  return scope == Scope::kAllTime ? "user_gift_wall_sender" : "user_gift_wall_period_sender";
}
const char* WallTable(Scope scope) {
  return scope == Scope::kAllTime ? "user_gift_wall" : "user_gift_wall_period";
}
// The period's columns, in a column list and in a SELECT from the rows.
const char* PeriodColumns(Scope scope) {
  return scope == Scope::kAllTime ? "" : ", period_kind, period_key";
}
const char* PeriodValues(Scope scope) {
  return scope == Scope::kAllTime ? "" : ", jt.j_kind, jt.j_key";
}

// `base`, then (for the period scope) the period's kind and key.
std::vector<RowColumn> ScopedColumns(absl::Span<const RowColumn> base, Scope scope) {
  std::vector<RowColumn> columns(base.begin(), base.end());
  if (scope == Scope::kPeriods) {
    const int next = static_cast<int>(columns.size());
    columns.push_back({next, "j_kind", "VARCHAR(8) CHARACTER SET ascii"});
    columns.push_back({next + 1, "j_key", "VARCHAR(10) CHARACTER SET ascii"});
  }
  return columns;
}

// Appends the period's kind and key to a row of the period scope ("month:2026-12").
void PeriodOf(const WallKey& key, Scope scope, int first_column, RowSet& row) {
  if (scope == Scope::kAllTime) return;
  const size_t colon = key.period.find(':');
  CHECK(colon != std::string::npos) << "period \"" << key.period << "\" is not kind:key";
  row.Text(first_column, absl::string_view(key.period).substr(0, colon))
      .Text(first_column + 1, absl::string_view(key.period).substr(colon + 1));
}

// The statement `Build` writes for `scope`, reading rows of `Columns(scope)`, written once.
template <std::string (*Build)(Scope), const std::vector<RowColumn>& (*Columns)(Scope)>
const RowsSql& PerScope(Scope scope) {
  static const auto* const sqls =
      new RowsSql[2]{{Columns(Scope::kAllTime), Build(Scope::kAllTime)},
                     {Columns(Scope::kPeriods), Build(Scope::kPeriods)}};
  return sqls[scope == Scope::kAllTime ? 0 : 1];
}

// Rows of event ids.
constexpr RowColumn kEventIdColumns[] = {{0, "j_id", kHexId}};

// A ledger row as read, with the database's clock.
enum LedgerColumn { kEventId, kStatus, kRetryCount, kLockedBy, kLockedUntil, kLastError, kNow };
constexpr ResultColumn kLedgerColumns[] = {
    {kEventId, "pe.event_id"},
    {kStatus, "pe.status"},
    {kRetryCount, "pe.retry_count"},
    {kLockedBy, "pe.locked_by"},
    {kLockedUntil, "pe.locked_until_ms"},
    {kLastError, "pe.last_error"},
    {kNow, GIFTWALL_DB_NOW_MS},
};
static_assert(InPositionOrder(kLedgerColumns));

const RowsSql& ReadLedgerSql() {
  static const auto* const sql = new RowsSql(
      kEventIdColumns, absl::StrCat("SELECT ", SelectList(kLedgerColumns), "\nFROM ", kRowsTable,
                                    R"sql(
STRAIGHT_JOIN wallet_projection_events pe
  ON pe.projection_name = )sql",
                                    GIFTWALL_SQL_PROJECTION,
                                    " AND pe.app_code = ? AND pe.event_id = UNHEX(jt.j_id)"));
  return *sql;
}

// A LedgerWrite: what to write, and (was_*) the row as it was read.
enum LedgerWriteColumn {
  kWriteId,
  kWriteStatus,
  kWriteRetryCount,
  kRequeued,
  kWriteLastError,
  kRetryAfter,
  kProjectedBy,
  kTargetUser,
  kWasStatus,
  kWasRetryCount,
  kWasLockedUntil,
};
constexpr RowColumn kLedgerWriteColumns[] = {
    {kWriteId, "j_id", kHexId},
    {kWriteStatus, "j_status", "VARCHAR(16) CHARACTER SET ascii"},
    {kWriteRetryCount, "j_retry_count", "INT"},
    {kRequeued, "j_requeued", "INT"},
    {kWriteLastError, "j_last_error", "VARCHAR(1024) CHARACTER SET utf8mb4"},
    {kRetryAfter, "j_retry_after", "BIGINT"},
    {kProjectedBy, "j_projected_by", "VARCHAR(16) CHARACTER SET ascii"},
    {kTargetUser, "j_target_user_id", "BIGINT"},
    {kWasStatus, "j_was_status", "VARCHAR(16) CHARACTER SET ascii"},
    {kWasRetryCount, "j_was_retry_count", "INT"},
    {kWasLockedUntil, "j_was_locked_until", "BIGINT"},
};
static_assert(InPositionOrder(kLedgerWriteColumns));

std::string InsertLedgerSql() {
  return absl::StrCat(R"sql(
INSERT INTO wallet_projection_events
  (projection_name, app_code, event_id, status, retry_count, requeue_count, last_error,
   next_attempt_at_ms, processed_at_ms, projected_by, target_user_id, created_at_ms, updated_at_ms)
SELECT )sql",
                      GIFTWALL_SQL_PROJECTION,
                      R"sql(, ?, UNHEX(jt.j_id), jt.j_status, jt.j_retry_count,
       jt.j_requeued, jt.j_last_error,
       IF(jt.j_retry_after > 0, )sql",
                      GIFTWALL_DB_NOW_MS, R"sql( + jt.j_retry_after, 0),
       IF(jt.j_status = 'done', )sql",
                      GIFTWALL_DB_NOW_MS, R"sql(, 0), jt.j_projected_by,
       jt.j_target_user_id, )sql",
                      GIFTWALL_DB_NOW_MS, ", ", GIFTWALL_DB_NOW_MS, R"sql(
FROM )sql",
                      kRowsTable);
}

const RowsSql& InsertLedgerAlwaysSql() {
  static const auto* const sql = new RowsSql(kLedgerWriteColumns, InsertLedgerSql());
  return *sql;
}

// MariaDB: a row that exists by now is skipped, not an error, and only the rows inserted are
// returned. Failing the statement would roll back the rows it had inserted before the duplicate,
// and two callers waiting for one of those rows would then deadlock (each inherits a gap lock
// that the other's insert needs). IGNORE skips nothing else here: every value written is checked
// before (the envelope, a cut last_error, the enums).
const RowsSql& InsertLedgerSkippingSql() {
  static const auto* const sql = new RowsSql(
      kLedgerWriteColumns,
      absl::StrCat(
          absl::StrReplaceAll(InsertLedgerSql(), {{"\nINSERT INTO", "\nINSERT IGNORE INTO"}}),
          "\nRETURNING event_id"));
  return *sql;
}

// A failure is recorded after its transaction rolled back. If a row appeared meanwhile, another
// caller claimed the event: its outcome stands.
const RowsSql& InsertLedgerIfAbsentSql() {
  static const auto* const sql = new RowsSql(
      kLedgerWriteColumns,
      absl::StrCat(InsertLedgerSql(), "\nON DUPLICATE KEY UPDATE updated_at_ms = updated_at_ms"));
  return *sql;
}

// Only a row that is still as it was read is written: if another caller moved it on meanwhile,
// the caller sees fewer rows updated than it asked for and reads again.
const RowsSql& UpdateLedgerSql() {
  static const auto* const sql = new RowsSql(
      kLedgerWriteColumns, absl::StrCat("UPDATE ", kRowsTable, R"sql(
STRAIGHT_JOIN wallet_projection_events pe
  ON pe.projection_name = )sql",
                                        GIFTWALL_SQL_PROJECTION,
                                        R"sql( AND pe.app_code = ? AND pe.event_id = UNHEX(jt.j_id)
SET pe.status = jt.j_status, pe.retry_count = jt.j_retry_count,
    pe.requeue_count = pe.requeue_count + jt.j_requeued, pe.locked_by = '',
    pe.locked_until_ms = 0,
    pe.next_attempt_at_ms = IF(jt.j_retry_after > 0, )sql",
                                        GIFTWALL_DB_NOW_MS,
                                        R"sql( + jt.j_retry_after, 0),
    pe.last_error = jt.j_last_error,
    pe.processed_at_ms = IF(jt.j_status = 'done', )sql",
                                        GIFTWALL_DB_NOW_MS,
                                        R"sql(, pe.processed_at_ms),
    pe.projected_by = jt.j_projected_by, pe.target_user_id = jt.j_target_user_id,
    pe.updated_at_ms = )sql",
                                        GIFTWALL_DB_NOW_MS, R"sql(
WHERE pe.status = jt.j_was_status AND pe.retry_count = jt.j_was_retry_count
  AND pe.locked_until_ms = jt.j_was_locked_until)sql"));
  return *sql;
}

// A sender delta. ReadSenders reads the first three columns (the row's key) of the same rows.
enum SenderDeltaColumn {
  kUser,
  kGift,
  kSender,
  kSentCount,
  kSentCoins,
  kFirstSent,
  kLastSent,
  kAnonymous
};
constexpr RowColumn kSenderDeltaColumns[] = {
    {kUser, "j_user", "BIGINT"},       {kGift, "j_gift", kHexGift},
    {kSender, "j_sender", "BIGINT"},   {kSentCount, "j_count", "BIGINT"},
    {kSentCoins, "j_coins", "BIGINT"}, {kFirstSent, "j_first", "BIGINT"},
    {kLastSent, "j_last", "BIGINT"},   {kAnonymous, "j_anonymous", "TINYINT"},
};
static_assert(InPositionOrder(kSenderDeltaColumns));

const std::vector<RowColumn>& SenderColumns(Scope scope) {
  static const auto* const columns = new std::vector<RowColumn>[2] {
    ScopedColumns(kSenderDeltaColumns, Scope::kAllTime),
        ScopedColumns(kSenderDeltaColumns, Scope::kPeriods)
  };
  return columns[scope == Scope::kAllTime ? 0 : 1];
}

std::string MergeSendersSql(Scope scope) {
  return absl::StrCat("\nINSERT INTO ", SenderTable(scope), "\n  (app_code, ",
                      SelectList(sender_row::kColumns), PeriodColumns(scope),
                      R"sql(, created_at_ms, updated_at_ms)
SELECT ?, jt.j_user, UNHEX(jt.j_gift), jt.j_sender, jt.j_count, jt.j_coins, jt.j_first,
       jt.j_last, jt.j_anonymous)sql",
                      PeriodValues(scope), ", ", GIFTWALL_DB_NOW_MS, ", ", GIFTWALL_DB_NOW_MS,
                      "\nFROM ", kRowsTable, R"sql(
ON DUPLICATE KEY UPDATE
  sent_count = sent_count + VALUES(sent_count),
  sent_coins = sent_coins + VALUES(sent_coins),
  first_sent_at_ms = LEAST(first_sent_at_ms, VALUES(first_sent_at_ms)),
  last_sent_at_ms = GREATEST(last_sent_at_ms, VALUES(last_sent_at_ms)),
  anonymous = GREATEST(anonymous, VALUES(anonymous)),
  updated_at_ms = VALUES(updated_at_ms))sql");
}

// MariaDB returns the rows as the merge left them (inserted or updated) from the same statement.
std::string MergeSendersReturningSql(Scope scope) {
  return absl::StrCat(MergeSendersSql(scope), "\nRETURNING ", SelectList(sender_row::kColumns),
                      PeriodColumns(scope));
}

std::string ReadSendersSql(Scope scope) {
  return absl::StrCat(
      "SELECT ", SelectList(sender_row::kColumns), PeriodColumns(scope), "\nFROM ", kRowsTable,
      "\nSTRAIGHT_JOIN ", SenderTable(scope), R"sql( s
  ON s.app_code = ? AND s.user_id = jt.j_user AND s.gift_id = UNHEX(jt.j_gift)
     AND s.sender_user_id = jt.j_sender)sql",
      scope == Scope::kAllTime ? "" : " AND s.period_kind = jt.j_kind AND s.period_key = jt.j_key");
}

// Rows of wall keys; rows of users are their first column.
enum WallKeyColumn { kKeyUser, kKeyGift };
constexpr RowColumn kWallKeyColumns[] = {{kKeyUser, "j_user", "BIGINT"},
                                         {kKeyGift, "j_gift", kHexGift}};
static_assert(InPositionOrder(kWallKeyColumns));
constexpr absl::Span<const RowColumn> kUserColumns = absl::MakeConstSpan(kWallKeyColumns).first(1);

// The wall sizes of a group's users, for the cap (DESIGN §2.14): a primary-key range each.
const RowsSql& WallsOverCapSql() {
  static const auto* const sql =
      new RowsSql(kUserColumns, absl::StrCat("SELECT w.user_id, COUNT(*)\nFROM ", kRowsTable, R"sql(
STRAIGHT_JOIN user_gift_wall w ON w.app_code = ? AND w.user_id = jt.j_user
GROUP BY w.user_id
HAVING COUNT(*) > ?)sql"));
  return *sql;
}

enum GiftCountColumn { kCountUser, kCountGift, kCount };
constexpr ResultColumn kGiftCountColumns[] = {
    {kCountUser, "w.user_id"}, {kCountGift, "w.gift_id"}, {kCount, "w.gift_count"}};
static_assert(InPositionOrder(kGiftCountColumns));

const RowsSql& GiftCountsSql() {
  static const auto* const sql = new RowsSql(
      kWallKeyColumns,
      absl::StrCat("SELECT ", SelectList(kGiftCountColumns), "\nFROM ", kRowsTable, R"sql(
STRAIGHT_JOIN user_gift_wall w
  ON w.app_code = ? AND w.user_id = jt.j_user AND w.gift_id = UNHEX(jt.j_gift))sql"));
  return *sql;
}

// A wall delta, with the sender merge's outcome for its gift.
enum WallDeltaColumn {
  kDeltaUser,
  kDeltaGift,
  kDeltaCount,
  kDeltaCoins,
  kDeltaFirst,
  kDeltaLast,
  kName,
  kNameAt,
  kNameEvent,
  kIcon,
  kIconAt,
  kIconEvent,
  kNewSenders,
  kTopUser,
  kTopCount,
  kTopCoins,
  kTopFirst,
  kTopLast,
  kFirstSender,
  kFirstSenderAt,
  kFirstSenderEvent,
};
constexpr RowColumn kWallDeltaColumns[] = {
    {kDeltaUser, "j_user", "BIGINT"},
    {kDeltaGift, "j_gift", kHexGift},
    {kDeltaCount, "j_count", "BIGINT"},
    {kDeltaCoins, "j_coins", "BIGINT"},
    {kDeltaFirst, "j_first", "BIGINT"},
    {kDeltaLast, "j_last", "BIGINT"},
    {kName, "j_name", "VARCHAR(512) CHARACTER SET utf8mb4"},
    {kNameAt, "j_name_at", "BIGINT"},
    {kNameEvent, "j_name_event", kHexId},
    {kIcon, "j_icon", "VARCHAR(2048) CHARACTER SET utf8mb4"},
    {kIconAt, "j_icon_at", "BIGINT"},
    {kIconEvent, "j_icon_event", kHexId},
    {kNewSenders, "j_new_senders", "BIGINT"},
    {kTopUser, "j_top_user", "BIGINT"},
    {kTopCount, "j_top_count", "BIGINT"},
    {kTopCoins, "j_top_coins", "BIGINT"},
    {kTopFirst, "j_top_first", "BIGINT"},
    {kTopLast, "j_top_last", "BIGINT"},
    {kFirstSender, "j_first_sender", "BIGINT"},
    {kFirstSenderAt, "j_first_sender_at", "BIGINT"},
    {kFirstSenderEvent, "j_first_sender_event", kHexId},
};
static_assert(InPositionOrder(kWallDeltaColumns));

// domain::MergeWallTotals in one statement (DESIGN §2.10): counts and coins add up; first/last
// received use LEAST/GREATEST; name and icon come from the latest (occurred_at_ms, event_id) that
// carries them; the first sender is the sender of the earliest such event; the sender count grows
// by the senders new to the gift; the top sender is the better of the stored one and the best
// sender of the delta after the sender merge. Strict mode makes an overflowing sum an error.
//
// Assignments run left to right. Each "pick one event's values" group first moves its
// *_event_id (or the top sender's id) when the delta wins, then copies the other columns only if
// that id now names the delta's: so every column of a group is decided on the old values.
//
const std::vector<RowColumn>& WallDeltaColumns(Scope scope) {
  static const auto* const columns = new std::vector<RowColumn>[2] {
    ScopedColumns(kWallDeltaColumns, Scope::kAllTime),
        ScopedColumns(kWallDeltaColumns, Scope::kPeriods)
  };
  return columns[scope == Scope::kAllTime ? 0 : 1];
}

std::string MergeWallsSql(Scope scope) {
  return absl::StrCat("\nINSERT INTO ", WallTable(scope), R"sql(
  (app_code, user_id, gift_id, gift_count, total_coins, first_received_at_ms,
   last_received_at_ms, gift_name, gift_name_at_ms, gift_name_event_id, gift_icon,
   gift_icon_at_ms, gift_icon_event_id, sender_count, top_sender_user_id, top_sender_count,
   top_sender_coins, top_sender_first_sent_at_ms, top_sender_last_sent_at_ms,
   first_sender_user_id, first_sender_at_ms, first_sender_event_id)sql",
                      PeriodColumns(scope), R"sql(, created_at_ms, updated_at_ms)
SELECT ?, jt.j_user, UNHEX(jt.j_gift), jt.j_count, jt.j_coins, jt.j_first, jt.j_last,
       jt.j_name, jt.j_name_at, UNHEX(jt.j_name_event), jt.j_icon, jt.j_icon_at,
       UNHEX(jt.j_icon_event), jt.j_new_senders, jt.j_top_user, jt.j_top_count, jt.j_top_coins,
       jt.j_top_first, jt.j_top_last, jt.j_first_sender, jt.j_first_sender_at,
       UNHEX(jt.j_first_sender_event))sql",
                      PeriodValues(scope), ", ", GIFTWALL_DB_NOW_MS, ", ", GIFTWALL_DB_NOW_MS,
                      "\nFROM ", kRowsTable, R"sql(
ON DUPLICATE KEY UPDATE
  gift_count = gift_count + VALUES(gift_count),
  total_coins = total_coins + VALUES(total_coins),
  first_received_at_ms = LEAST(first_received_at_ms, VALUES(first_received_at_ms)),
  last_received_at_ms = GREATEST(last_received_at_ms, VALUES(last_received_at_ms)),

  gift_name_event_id = IF(VALUES(gift_name_event_id) <> ''
      AND (VALUES(gift_name_at_ms) > gift_name_at_ms OR (VALUES(gift_name_at_ms) = gift_name_at_ms
           AND VALUES(gift_name_event_id) > gift_name_event_id)),
      VALUES(gift_name_event_id), gift_name_event_id),
  gift_name = IF(gift_name_event_id = VALUES(gift_name_event_id), VALUES(gift_name), gift_name),
  gift_name_at_ms = IF(gift_name_event_id = VALUES(gift_name_event_id), VALUES(gift_name_at_ms),
                       gift_name_at_ms),

  gift_icon_event_id = IF(VALUES(gift_icon_event_id) <> ''
      AND (VALUES(gift_icon_at_ms) > gift_icon_at_ms OR (VALUES(gift_icon_at_ms) = gift_icon_at_ms
           AND VALUES(gift_icon_event_id) > gift_icon_event_id)),
      VALUES(gift_icon_event_id), gift_icon_event_id),
  gift_icon = IF(gift_icon_event_id = VALUES(gift_icon_event_id), VALUES(gift_icon), gift_icon),
  gift_icon_at_ms = IF(gift_icon_event_id = VALUES(gift_icon_event_id), VALUES(gift_icon_at_ms),
                       gift_icon_at_ms),

  sender_count = sender_count + VALUES(sender_count),

  top_sender_user_id = IF(VALUES(top_sender_count) > top_sender_count
      OR (VALUES(top_sender_count) = top_sender_count
          AND (VALUES(top_sender_last_sent_at_ms) < top_sender_last_sent_at_ms
               OR (VALUES(top_sender_last_sent_at_ms) = top_sender_last_sent_at_ms
                   AND VALUES(top_sender_user_id) < top_sender_user_id))),
      VALUES(top_sender_user_id), top_sender_user_id),
  top_sender_count = IF(top_sender_user_id = VALUES(top_sender_user_id),
                        VALUES(top_sender_count), top_sender_count),
  top_sender_coins = IF(top_sender_user_id = VALUES(top_sender_user_id),
                        VALUES(top_sender_coins), top_sender_coins),
  top_sender_first_sent_at_ms = IF(top_sender_user_id = VALUES(top_sender_user_id),
                                   VALUES(top_sender_first_sent_at_ms), top_sender_first_sent_at_ms),
  top_sender_last_sent_at_ms = IF(top_sender_user_id = VALUES(top_sender_user_id),
                                  VALUES(top_sender_last_sent_at_ms), top_sender_last_sent_at_ms),

  first_sender_event_id = IF(VALUES(first_sender_user_id) > 0
      AND (first_sender_user_id = 0 OR VALUES(first_sender_at_ms) < first_sender_at_ms
           OR (VALUES(first_sender_at_ms) = first_sender_at_ms
               AND VALUES(first_sender_event_id) < first_sender_event_id)),
      VALUES(first_sender_event_id), first_sender_event_id),
  first_sender_user_id = IF(first_sender_event_id = VALUES(first_sender_event_id),
                            VALUES(first_sender_user_id), first_sender_user_id),
  first_sender_at_ms = IF(first_sender_event_id = VALUES(first_sender_event_id),
                          VALUES(first_sender_at_ms), first_sender_at_ms),
  updated_at_ms = VALUES(updated_at_ms))sql");
}

RowSet LedgerRows(absl::Span<const LedgerWrite> rows) {
  RowSet set(kLedgerWriteColumns);
  for (const LedgerWrite& w : rows) {
    set.Row()
        .Bytes(kWriteId, w.event_id)
        .Text(kWriteStatus, domain::LedgerStatusName(w.status))
        .Int(kWriteRetryCount, w.retry_count)
        .Int(kRequeued, w.requeued ? 1 : 0)
        .Text(kWriteLastError, w.last_error)
        .Int(kRetryAfter, w.retry_after_ms)
        .Text(kProjectedBy, domain::ProjectedByName(w.projected_by))
        .Int(kTargetUser, w.target_user_id)
        .Text(kWasStatus, domain::LedgerStatusName(w.expected.status))
        .Int(kWasRetryCount, w.expected.retry_count)
        .Int(kWasLockedUntil, w.expected.locked_until_ms);
  }
  return set;
}

RowSet SenderRows(const WallDeltas& deltas, Scope scope) {
  RowSet rows(SenderColumns(scope));
  for (const auto& [key, delta] : deltas) {
    if (!InScope(key, scope)) continue;
    for (const auto& [sender, sent] : delta.senders) {
      rows.Row()
          .Int(kUser, key.user_id)
          .Bytes(kGift, key.gift_id)
          .Int(kSender, sender)
          .Int(kSentCount, sent.sent_count)
          .Int(kSentCoins, sent.sent_coins)
          .Int(kFirstSent, sent.first_sent_at_ms)
          .Int(kLastSent, sent.last_sent_at_ms)
          .Int(kAnonymous, sent.anonymous ? 1 : 0);
      PeriodOf(key, scope, std::size(kSenderDeltaColumns), rows);
    }
  }
  return rows;
}

}  // namespace

absl::StatusOr<LedgerSnapshot> ProjectionStore::ReadLedger(
    absl::string_view app_code, absl::Span<const std::string> event_ids) {
  RowSet ids(kEventIdColumns);
  for (const std::string& id : event_ids) ids.Row().Bytes(0, id);
  LedgerSnapshot snapshot;
  absl::Status s = conn_.Query(ReadLedgerSql(), {&ids, app_code}, [&](const SqlRow& row) {
    std::optional<LedgerStatus> status = domain::ParseLedgerStatus(row.Str(kStatus));
    CHECK(status.has_value()) << "ledger status \"" << row.Str(kStatus) << "\" outside its CHECK";
    snapshot.rows[row.Str(kEventId)] =
        domain::LedgerRow{*status, static_cast<int>(row.Int(kRetryCount)), row.Str(kLockedBy),
                          row.Int(kLockedUntil), row.Str(kLastError)};
    snapshot.now_ms = row.Int(kNow);
  });
  if (!s.ok()) return s;
  return snapshot;
}

absl::StatusOr<std::vector<std::string>> ProjectionStore::InsertLedger(
    absl::string_view app_code, absl::Span<const LedgerWrite> rows) {
  std::vector<std::string> existing;
  if (rows.empty()) return existing;
  const RowSet ledger = LedgerRows(rows);
  if (!returning_) {
    RETURN_IF_ERROR(conn_.Execute(InsertLedgerAlwaysSql(), {app_code, &ledger}).status());
    return existing;
  }
  absl::flat_hash_set<std::string> inserted;
  RETURN_IF_ERROR(conn_.Query(InsertLedgerSkippingSql(), {app_code, &ledger},
                              [&](const SqlRow& row) { inserted.insert(row.Str(0)); }));
  for (const LedgerWrite& w : rows) {
    if (!inserted.contains(w.event_id)) existing.push_back(w.event_id);
  }
  return existing;
}

absl::Status ProjectionStore::InsertLedgerIfAbsent(absl::string_view app_code,
                                                   absl::Span<const LedgerWrite> rows) {
  if (rows.empty()) return absl::OkStatus();
  const RowSet ledger = LedgerRows(rows);
  return conn_.Execute(InsertLedgerIfAbsentSql(), {app_code, &ledger}).status();
}

absl::StatusOr<int64_t> ProjectionStore::UpdateLedger(absl::string_view app_code,
                                                      absl::Span<const LedgerWrite> rows) {
  if (rows.empty()) return 0;
  const RowSet ledger = LedgerRows(rows);
  return conn_.Execute(UpdateLedgerSql(), {&ledger, app_code});
}

absl::StatusOr<MergedSenders> ProjectionStore::MergeSenders(absl::string_view app_code,
                                                            const WallDeltas& deltas) {
  MergedSenders merged;
  for (Scope scope : kScopes) {
    const RowSet rows = SenderRows(deltas, scope);
    if (rows.empty()) continue;
    auto collect = [&](const SqlRow& row) {
      namespace col = sender_row;
      WallKey key{row.Int(col::kUserId), row.Str(col::kGiftId)};
      if (scope == Scope::kPeriods) {
        const int kind = static_cast<int>(std::size(col::kColumns));
        key.period = absl::StrCat(row.Str(kind), ":", row.Str(kind + 1));
      }
      merged[std::move(key)][row.Int(col::kSenderId)] = domain::SenderRow{
          row.Int(col::kSentCount), row.Int(col::kSentCoins), row.Int(col::kFirstSent),
          row.Int(col::kLastSent), row.Int(col::kAnonymous) != 0};
    };
    if (returning_) {
      RETURN_IF_ERROR(conn_.Query(PerScope<MergeSendersReturningSql, SenderColumns>(scope),
                                  {app_code, &rows}, collect));
      continue;
    }
    RETURN_IF_ERROR(
        conn_.Execute(PerScope<MergeSendersSql, SenderColumns>(scope), {app_code, &rows}).status());
    RETURN_IF_ERROR(
        conn_.Query(PerScope<ReadSendersSql, SenderColumns>(scope), {&rows, app_code}, collect));
  }
  return merged;
}

absl::StatusOr<int64_t> ProjectionStore::MergeWalls(
    absl::string_view app_code, const WallDeltas& deltas,
    const std::map<WallKey, domain::SenderMerge>& senders) {
  int64_t new_all_time_rows = 0;
  for (Scope scope : kScopes) {
    RowSet deltas_rows(WallDeltaColumns(scope));
    for (const auto& [key, d] : deltas) {
      if (!InScope(key, scope)) continue;
      auto it = senders.find(key);
      const domain::SenderMerge merge = it == senders.end() ? domain::SenderMerge{} : it->second;
      deltas_rows.Row()
          .Int(kDeltaUser, key.user_id)
          .Bytes(kDeltaGift, key.gift_id)
          .Int(kDeltaCount, d.gift_count)
          .Int(kDeltaCoins, d.total_coins)
          .Int(kDeltaFirst, d.first_received_at_ms)
          .Int(kDeltaLast, d.last_received_at_ms)
          .Text(kName, d.gift_name)
          .Int(kNameAt, d.gift_name_at_ms)
          .Bytes(kNameEvent, d.gift_name_event_id)
          .Text(kIcon, d.gift_icon)
          .Int(kIconAt, d.gift_icon_at_ms)
          .Bytes(kIconEvent, d.gift_icon_event_id)
          .Int(kNewSenders, merge.new_senders)
          .Int(kTopUser, merge.best_user_id)
          .Int(kTopCount, merge.best.sent_count)
          .Int(kTopCoins, merge.best.sent_coins)
          .Int(kTopFirst, merge.best.first_sent_at_ms)
          .Int(kTopLast, merge.best.last_sent_at_ms)
          .Int(kFirstSender, d.first_sender_user_id)
          .Int(kFirstSenderAt, d.first_sender_at_ms)
          .Bytes(kFirstSenderEvent, d.first_sender_event_id);
      PeriodOf(key, scope, std::size(kWallDeltaColumns), deltas_rows);
    }
    if (deltas_rows.empty()) continue;
    const int64_t rows = static_cast<int64_t>(deltas_rows.rows());
    ASSIGN_OR_RETURN(
        const int64_t affected,
        conn_.Execute(PerScope<MergeWallsSql, WallDeltaColumns>(scope), {app_code, &deltas_rows}));
    // Every merge changes its row (gift_count grows): an insert counts 1, an update 2, with or
    // without CLIENT_FOUND_ROWS. The cap (§2.14) counts the all-time wall's new rows only.
    if (scope == Scope::kAllTime) new_all_time_rows = 2 * rows - affected;
  }
  return new_all_time_rows;
}

absl::StatusOr<std::map<int64_t, int64_t>> ProjectionStore::WallsOverCap(
    absl::string_view app_code, absl::Span<const int64_t> user_ids, int64_t cap) {
  RowSet users(kUserColumns);
  for (int64_t user : user_ids) users.Row().Int(kKeyUser, user);
  std::map<int64_t, int64_t> over;
  RETURN_IF_ERROR(conn_.Query(WallsOverCapSql(), {&users, app_code, cap},
                              [&](const SqlRow& row) { over[row.Int(0)] = row.Int(1); }));
  return over;
}

absl::StatusOr<std::map<WallKey, int64_t>> ProjectionStore::GiftCounts(
    absl::string_view app_code, absl::Span<const WallKey> keys) {
  RowSet rows(kWallKeyColumns);
  for (const WallKey& key : keys)
    rows.Row().Int(kKeyUser, key.user_id).Bytes(kKeyGift, key.gift_id);
  std::map<WallKey, int64_t> counts;
  RETURN_IF_ERROR(conn_.Query(GiftCountsSql(), {&rows, app_code}, [&](const SqlRow& row) {
    counts[WallKey{row.Int(kCountUser), row.Str(kCountGift)}] = row.Int(kCount);
  }));
  return counts;
}

}  // namespace giftwall::storage
