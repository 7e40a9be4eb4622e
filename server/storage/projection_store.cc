#include "server/storage/projection_store.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "server/common/status_macros.h"
#include "server/storage/db_clock.h"
#include "server/storage/json_rows.h"

namespace giftwall::storage {

using domain::LedgerStatus;
using domain::WallDeltas;
using domain::WallKey;

namespace {

// The JSON rows are read in array order, which the callers sort by key: every group takes its
// row locks in one order. The JSON_TABLE drives each join (STRAIGHT_JOIN): one primary-key
// lookup per row, whatever the table's size. Identifiers travel hex-encoded (UNHEX).

// Read by event id: [[id_hex], ...]
constexpr absl::string_view kReadLedger =
    R"sql(
SELECT pe.event_id, pe.status, pe.retry_count, pe.locked_by, pe.locked_until_ms, pe.last_error,
       )sql" GIFTWALL_DB_NOW_MS R"sql(
FROM JSON_TABLE(?, '$[*]' COLUMNS (j_id VARCHAR(512) CHARACTER SET ascii PATH '$[0]')) AS jt
STRAIGHT_JOIN wallet_projection_events pe
  ON pe.projection_name = )sql" GIFTWALL_SQL_PROJECTION
    R"sql( AND pe.app_code = ? AND pe.event_id = UNHEX(jt.j_id))sql";

// A LedgerWrite: [id_hex, status, retry_count, requeued, last_error, retry_after_ms,
// projected_by, target_user_id, was_status, was_retry_count, was_locked_until_ms]
#define GIFTWALL_LEDGER_WRITE_TABLE                                                                \
  "JSON_TABLE(?, '$[*]' COLUMNS (j_id VARCHAR(512) CHARACTER SET ascii PATH '$[0]',"               \
  " j_status VARCHAR(16) CHARACTER SET ascii PATH '$[1]', j_retry_count INT PATH '$[2]',"          \
  " j_requeued INT PATH '$[3]', j_last_error VARCHAR(1024) CHARACTER SET utf8mb4 PATH '$[4]',"     \
  " j_retry_after BIGINT PATH '$[5]', j_projected_by VARCHAR(16) CHARACTER SET ascii PATH '$[6]'," \
  " j_target_user_id BIGINT PATH '$[7]', j_was_status VARCHAR(16) CHARACTER SET ascii PATH "       \
  "'$[8]',"                                                                                        \
  " j_was_retry_count INT PATH '$[9]', j_was_locked_until BIGINT PATH '$[10]')) AS jt"

constexpr absl::string_view kInsertLedger =
    R"sql(
INSERT INTO wallet_projection_events
  (projection_name, app_code, event_id, status, retry_count, requeue_count, last_error,
   next_attempt_at_ms, processed_at_ms, projected_by, target_user_id, created_at_ms, updated_at_ms)
SELECT )sql" GIFTWALL_SQL_PROJECTION
    R"sql(, ?, UNHEX(jt.j_id), jt.j_status, jt.j_retry_count, jt.j_requeued,
       jt.j_last_error,
       IF(jt.j_retry_after > 0, )sql" GIFTWALL_DB_NOW_MS R"sql( + jt.j_retry_after, 0),
       IF(jt.j_status = 'done', )sql" GIFTWALL_DB_NOW_MS R"sql(, 0), jt.j_projected_by,
       jt.j_target_user_id, )sql" GIFTWALL_DB_NOW_MS R"sql(, )sql" GIFTWALL_DB_NOW_MS R"sql(
FROM )sql" GIFTWALL_LEDGER_WRITE_TABLE;

// A failure is recorded after its transaction rolled back. If a row appeared meanwhile, another
// caller claimed the event: its outcome stands.
const std::string& InsertLedgerIfAbsentSql() {
  static const auto* const sql = new std::string(
      absl::StrCat(kInsertLedger, "\nON DUPLICATE KEY UPDATE updated_at_ms = updated_at_ms"));
  return *sql;
}

// Only a row that is still as it was read is written: if another caller moved it on meanwhile,
// the caller sees fewer rows updated than it asked for and reads again.
constexpr absl::string_view kUpdateLedger =
    R"sql(
UPDATE )sql" GIFTWALL_LEDGER_WRITE_TABLE R"sql(
STRAIGHT_JOIN wallet_projection_events pe
  ON pe.projection_name = )sql" GIFTWALL_SQL_PROJECTION
    R"sql( AND pe.app_code = ? AND pe.event_id = UNHEX(jt.j_id)
SET pe.status = jt.j_status, pe.retry_count = jt.j_retry_count,
    pe.requeue_count = pe.requeue_count + jt.j_requeued, pe.locked_by = '',
    pe.locked_until_ms = 0,
    pe.next_attempt_at_ms = IF(jt.j_retry_after > 0,
                               )sql" GIFTWALL_DB_NOW_MS R"sql( + jt.j_retry_after, 0),
    pe.last_error = jt.j_last_error,
    pe.processed_at_ms = IF(jt.j_status = 'done', )sql" GIFTWALL_DB_NOW_MS R"sql(,
                            pe.processed_at_ms),
    pe.projected_by = jt.j_projected_by, pe.target_user_id = jt.j_target_user_id,
    pe.updated_at_ms = )sql" GIFTWALL_DB_NOW_MS R"sql(
WHERE pe.status = jt.j_was_status AND pe.retry_count = jt.j_was_retry_count
  AND pe.locked_until_ms = jt.j_was_locked_until)sql";

#undef GIFTWALL_LEDGER_WRITE_TABLE

// A sender delta: [user_id, gift_id_hex, sender_user_id, sent_count, sent_coins,
// first_sent_at_ms, last_sent_at_ms]. ReadSenders reads the first three of the same rows.
constexpr absl::string_view kMergeSenders = R"sql(
INSERT INTO user_gift_wall_sender
  (app_code, user_id, gift_id, sender_user_id, sent_count, sent_coins, first_sent_at_ms,
   last_sent_at_ms, created_at_ms, updated_at_ms)
SELECT ?, jt.j_user, UNHEX(jt.j_gift), jt.j_sender, jt.j_count, jt.j_coins, jt.j_first,
       jt.j_last, )sql" GIFTWALL_DB_NOW_MS R"sql(, )sql" GIFTWALL_DB_NOW_MS R"sql(
FROM JSON_TABLE(?, '$[*]' COLUMNS (j_user BIGINT PATH '$[0]',
       j_gift VARCHAR(256) CHARACTER SET ascii PATH '$[1]', j_sender BIGINT PATH '$[2]',
       j_count BIGINT PATH '$[3]', j_coins BIGINT PATH '$[4]', j_first BIGINT PATH '$[5]',
       j_last BIGINT PATH '$[6]')) AS jt
ON DUPLICATE KEY UPDATE
  sent_count = sent_count + VALUES(sent_count),
  sent_coins = sent_coins + VALUES(sent_coins),
  first_sent_at_ms = LEAST(first_sent_at_ms, VALUES(first_sent_at_ms)),
  last_sent_at_ms = GREATEST(last_sent_at_ms, VALUES(last_sent_at_ms)),
  updated_at_ms = VALUES(updated_at_ms))sql";

// MariaDB returns the rows as the merge left them (inserted or updated) from the same statement.
const std::string& MergeSendersReturningSql() {
  static const auto* const sql = new std::string(absl::StrCat(
      kMergeSenders,
      "\nRETURNING user_id, gift_id, sender_user_id, sent_count, sent_coins, first_sent_at_ms, "
      "last_sent_at_ms"));
  return *sql;
}

constexpr absl::string_view kReadSenders = R"sql(
SELECT s.user_id, s.gift_id, s.sender_user_id, s.sent_count, s.sent_coins, s.first_sent_at_ms,
       s.last_sent_at_ms
FROM JSON_TABLE(?, '$[*]' COLUMNS (j_user BIGINT PATH '$[0]',
       j_gift VARCHAR(256) CHARACTER SET ascii PATH '$[1]', j_sender BIGINT PATH '$[2]')) AS jt
STRAIGHT_JOIN user_gift_wall_sender s
  ON s.app_code = ? AND s.user_id = jt.j_user AND s.gift_id = UNHEX(jt.j_gift)
     AND s.sender_user_id = jt.j_sender)sql";

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
// A wall delta: [user_id, gift_id_hex, gift_count, total_coins, first_received_at_ms,
// last_received_at_ms, gift_name, gift_name_at_ms, gift_name_event_id_hex, gift_icon,
// gift_icon_at_ms, gift_icon_event_id_hex, new_senders, top_sender_user_id, top_sender_count,
// top_sender_coins, top_sender_first_sent_at_ms, top_sender_last_sent_at_ms,
// first_sender_user_id, first_sender_at_ms, first_sender_event_id_hex]
// The wall sizes of a group's users, for the cap (DESIGN §2.14): a primary-key range each.
constexpr absl::string_view kWallsOverCap = R"sql(
SELECT w.user_id, COUNT(*)
FROM JSON_TABLE(?, '$[*]' COLUMNS (j_user BIGINT PATH '$[0]')) AS jt
STRAIGHT_JOIN user_gift_wall w ON w.app_code = ? AND w.user_id = jt.j_user
GROUP BY w.user_id
HAVING COUNT(*) > ?)sql";

// [[user_id, gift_id_hex], ...]
constexpr absl::string_view kGiftCounts = R"sql(
SELECT w.user_id, w.gift_id, w.gift_count
FROM JSON_TABLE(?, '$[*]' COLUMNS (j_user BIGINT PATH '$[0]',
       j_gift VARCHAR(256) CHARACTER SET ascii PATH '$[1]')) AS jt
STRAIGHT_JOIN user_gift_wall w
  ON w.app_code = ? AND w.user_id = jt.j_user AND w.gift_id = UNHEX(jt.j_gift))sql";

constexpr absl::string_view kMergeWalls = R"sql(
INSERT INTO user_gift_wall
  (app_code, user_id, gift_id, gift_count, total_coins, first_received_at_ms,
   last_received_at_ms, gift_name, gift_name_at_ms, gift_name_event_id, gift_icon,
   gift_icon_at_ms, gift_icon_event_id, sender_count, top_sender_user_id, top_sender_count,
   top_sender_coins, top_sender_first_sent_at_ms, top_sender_last_sent_at_ms,
   first_sender_user_id, first_sender_at_ms, first_sender_event_id, created_at_ms, updated_at_ms)
SELECT ?, jt.j_user, UNHEX(jt.j_gift), jt.j_count, jt.j_coins, jt.j_first, jt.j_last,
       jt.j_name, jt.j_name_at, UNHEX(jt.j_name_event), jt.j_icon, jt.j_icon_at,
       UNHEX(jt.j_icon_event), jt.j_new_senders, jt.j_top_user, jt.j_top_count, jt.j_top_coins,
       jt.j_top_first, jt.j_top_last, jt.j_first_sender, jt.j_first_sender_at,
       UNHEX(jt.j_first_sender_event), )sql" GIFTWALL_DB_NOW_MS R"sql(, )sql" GIFTWALL_DB_NOW_MS
                                          R"sql(
FROM JSON_TABLE(?, '$[*]' COLUMNS (j_user BIGINT PATH '$[0]',
       j_gift VARCHAR(256) CHARACTER SET ascii PATH '$[1]', j_count BIGINT PATH '$[2]',
       j_coins BIGINT PATH '$[3]', j_first BIGINT PATH '$[4]', j_last BIGINT PATH '$[5]',
       j_name VARCHAR(512) CHARACTER SET utf8mb4 PATH '$[6]', j_name_at BIGINT PATH '$[7]',
       j_name_event VARCHAR(512) CHARACTER SET ascii PATH '$[8]',
       j_icon VARCHAR(2048) CHARACTER SET utf8mb4 PATH '$[9]', j_icon_at BIGINT PATH '$[10]',
       j_icon_event VARCHAR(512) CHARACTER SET ascii PATH '$[11]',
       j_new_senders BIGINT PATH '$[12]', j_top_user BIGINT PATH '$[13]',
       j_top_count BIGINT PATH '$[14]', j_top_coins BIGINT PATH '$[15]',
       j_top_first BIGINT PATH '$[16]', j_top_last BIGINT PATH '$[17]',
       j_first_sender BIGINT PATH '$[18]', j_first_sender_at BIGINT PATH '$[19]',
       j_first_sender_event VARCHAR(512) CHARACTER SET ascii PATH '$[20]')) AS jt
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
  updated_at_ms = VALUES(updated_at_ms))sql";

std::string LedgerRowsJson(absl::Span<const LedgerWrite> rows) {
  JsonRows json;
  for (const LedgerWrite& w : rows) {
    json.Row()
        .Bytes(w.event_id)
        .Text(domain::LedgerStatusName(w.status))
        .Int(w.retry_count)
        .Int(w.requeued ? 1 : 0)
        .Text(w.last_error)
        .Int(w.retry_after_ms)
        .Text(domain::ProjectedByName(w.projected_by))
        .Int(w.target_user_id)
        .Text(domain::LedgerStatusName(w.expected.status))
        .Int(w.expected.retry_count)
        .Int(w.expected.locked_until_ms);
  }
  return json.Finish();
}

JsonRows SenderRows(const WallDeltas& deltas) {
  JsonRows json;
  for (const auto& [key, delta] : deltas) {
    for (const auto& [sender, sent] : delta.senders) {
      json.Row()
          .Int(key.user_id)
          .Bytes(key.gift_id)
          .Int(sender)
          .Int(sent.sent_count)
          .Int(sent.sent_coins)
          .Int(sent.first_sent_at_ms)
          .Int(sent.last_sent_at_ms);
    }
  }
  return json;
}

}  // namespace

absl::StatusOr<LedgerSnapshot> ProjectionStore::ReadLedger(
    absl::string_view app_code, absl::Span<const std::string> event_ids) {
  JsonRows json;
  for (const std::string& id : event_ids) json.Row().Bytes(id);
  LedgerSnapshot snapshot;
  absl::Status s = conn_.Query(kReadLedger, {json.Finish(), app_code}, [&](const SqlRow& row) {
    std::optional<LedgerStatus> status = domain::ParseLedgerStatus(row.Str(1));
    CHECK(status.has_value()) << "ledger status \"" << row.Str(1) << "\" outside its CHECK";
    snapshot.rows[row.Str(0)] = domain::LedgerRow{*status, static_cast<int>(row.Int(2)), row.Str(3),
                                                  row.Int(4), row.Str(5)};
    snapshot.now_ms = row.Int(6);
  });
  if (!s.ok()) return s;
  return snapshot;
}

absl::Status ProjectionStore::InsertLedger(absl::string_view app_code,
                                           absl::Span<const LedgerWrite> rows) {
  if (rows.empty()) return absl::OkStatus();
  return conn_.Execute(kInsertLedger, {app_code, LedgerRowsJson(rows)}).status();
}

absl::Status ProjectionStore::InsertLedgerIfAbsent(absl::string_view app_code,
                                                   absl::Span<const LedgerWrite> rows) {
  if (rows.empty()) return absl::OkStatus();
  return conn_.Execute(InsertLedgerIfAbsentSql(), {app_code, LedgerRowsJson(rows)}).status();
}

absl::StatusOr<int64_t> ProjectionStore::UpdateLedger(absl::string_view app_code,
                                                      absl::Span<const LedgerWrite> rows) {
  if (rows.empty()) return 0;
  return conn_.Execute(kUpdateLedger, {LedgerRowsJson(rows), app_code});
}

absl::StatusOr<MergedSenders> ProjectionStore::MergeSenders(absl::string_view app_code,
                                                            const WallDeltas& deltas) {
  MergedSenders merged;
  JsonRows rows = SenderRows(deltas);
  if (rows.empty()) return merged;
  const std::string& json = rows.Finish();
  auto collect = [&](const SqlRow& row) {
    merged[WallKey{row.Int(0), row.Str(1)}][row.Int(2)] =
        domain::SenderRow{row.Int(3), row.Int(4), row.Int(5), row.Int(6)};
  };
  if (returning_) {
    if (absl::Status s = conn_.Query(MergeSendersReturningSql(), {app_code, json}, collect);
        !s.ok()) {
      return s;
    }
    return merged;
  }
  if (absl::Status s = conn_.Execute(kMergeSenders, {app_code, json}).status(); !s.ok()) return s;
  if (absl::Status s = conn_.Query(kReadSenders, {json, app_code}, collect); !s.ok()) return s;
  return merged;
}

absl::StatusOr<int64_t> ProjectionStore::MergeWalls(
    absl::string_view app_code, const WallDeltas& deltas,
    const std::map<WallKey, domain::SenderMerge>& senders) {
  if (deltas.empty()) return 0;
  JsonRows json;
  for (const auto& [key, d] : deltas) {
    auto it = senders.find(key);
    const domain::SenderMerge merge = it == senders.end() ? domain::SenderMerge{} : it->second;
    json.Row()
        .Int(key.user_id)
        .Bytes(key.gift_id)
        .Int(d.gift_count)
        .Int(d.total_coins)
        .Int(d.first_received_at_ms)
        .Int(d.last_received_at_ms)
        .Text(d.gift_name)
        .Int(d.gift_name_at_ms)
        .Bytes(d.gift_name_event_id)
        .Text(d.gift_icon)
        .Int(d.gift_icon_at_ms)
        .Bytes(d.gift_icon_event_id)
        .Int(merge.new_senders)
        .Int(merge.best_user_id)
        .Int(merge.best.sent_count)
        .Int(merge.best.sent_coins)
        .Int(merge.best.first_sent_at_ms)
        .Int(merge.best.last_sent_at_ms)
        .Int(d.first_sender_user_id)
        .Int(d.first_sender_at_ms)
        .Bytes(d.first_sender_event_id);
  }
  ASSIGN_OR_RETURN(const int64_t affected, conn_.Execute(kMergeWalls, {app_code, json.Finish()}));
  // Every merge changes its row (gift_count grows): an insert counts 1, an update 2, with or
  // without CLIENT_FOUND_ROWS.
  return 2 * static_cast<int64_t>(deltas.size()) - affected;
}

absl::StatusOr<std::map<int64_t, int64_t>> ProjectionStore::WallsOverCap(
    absl::string_view app_code, absl::Span<const int64_t> user_ids, int64_t cap) {
  JsonRows json;
  for (int64_t user : user_ids) json.Row().Int(user);
  std::map<int64_t, int64_t> over;
  RETURN_IF_ERROR(conn_.Query(kWallsOverCap, {json.Finish(), app_code, cap},
                              [&](const SqlRow& row) { over[row.Int(0)] = row.Int(1); }));
  return over;
}

absl::StatusOr<std::map<WallKey, int64_t>> ProjectionStore::GiftCounts(
    absl::string_view app_code, absl::Span<const WallKey> keys) {
  JsonRows json;
  for (const WallKey& key : keys) json.Row().Int(key.user_id).Bytes(key.gift_id);
  std::map<WallKey, int64_t> counts;
  RETURN_IF_ERROR(conn_.Query(kGiftCounts, {json.Finish(), app_code}, [&](const SqlRow& row) {
    counts[WallKey{row.Int(0), row.Str(1)}] = row.Int(2);
  }));
  return counts;
}

}  // namespace giftwall::storage
