#include "server/storage/wall_audit_repository.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "server/common/status_macros.h"
#include "server/storage/db_clock.h"
#include "server/storage/json_rows.h"
#include "server/storage/outbox_repository.h"

namespace giftwall::storage {
namespace {

// Users are visited in chunks of this many, so that memory stays bounded on a large app.
constexpr int64_t kUsersPerChunk = 200;

constexpr absl::string_view kLedgerUsers = R"sql(
SELECT DISTINCT target_user_id FROM wallet_projection_events
  FORCE INDEX (idx_projection_events_user)
WHERE projection_name = )sql" GIFTWALL_SQL_PROJECTION R"sql( AND app_code = ? AND target_user_id > ?
ORDER BY target_user_id
LIMIT ?)sql";

constexpr absl::string_view kWallUsers = R"sql(
SELECT DISTINCT user_id FROM user_gift_wall WHERE app_code = ? AND user_id > ?
ORDER BY user_id
LIMIT ?)sql";

// The done events of the users in (?, ?], with their outbox rows (the source of truth) under one
// of the codes the outbox holds the app's events under.
constexpr absl::string_view kDoneEvents = R"sql(
SELECT pe.target_user_id, pe.event_id, wo.event_id IS NOT NULL, COALESCE(wo.event_type, ''),
       COALESCE(wo.payload, ''), COALESCE(wo.created_at_ms, 0)
FROM wallet_projection_events pe FORCE INDEX (idx_projection_events_user)
LEFT JOIN wallet_outbox wo ON wo.app_code = ? AND wo.event_id = pe.event_id
WHERE pe.projection_name = )sql" GIFTWALL_SQL_PROJECTION R"sql( AND pe.app_code = ?
  AND pe.target_user_id > ? AND pe.target_user_id <= ? AND pe.status = 'done')sql";

// The ids of one user's done events: index-only (idx_projection_events_user), cheap under locks.
constexpr absl::string_view kDoneEventIds = R"sql(
SELECT event_id FROM wallet_projection_events FORCE INDEX (idx_projection_events_user)
WHERE projection_name = )sql" GIFTWALL_SQL_PROJECTION R"sql( AND app_code = ? AND target_user_id = ?
  AND status = 'done')sql";

constexpr absl::string_view kOneDoneEvent = R"sql(
SELECT pe.target_user_id, pe.event_id, wo.event_id IS NOT NULL, COALESCE(wo.event_type, ''),
       COALESCE(wo.payload, ''), COALESCE(wo.created_at_ms, 0)
FROM wallet_projection_events pe
LEFT JOIN wallet_outbox wo ON wo.app_code = ? AND wo.event_id = pe.event_id
WHERE pe.projection_name = )sql" GIFTWALL_SQL_PROJECTION
                                            R"sql( AND pe.app_code = ? AND pe.event_id = ?
  AND pe.status = 'done')sql";

// Done events whose gifts a rebuild finds beyond the wall's cap (DESIGN §2.14) go dead:
// [[event_id_hex], ...].
constexpr absl::string_view kKillDoneEvents =
    R"sql(
UPDATE JSON_TABLE(?, '$[*]' COLUMNS (j_id VARCHAR(512) CHARACTER SET ascii PATH '$[0]')) AS jt
STRAIGHT_JOIN wallet_projection_events pe
  ON pe.projection_name = )sql" GIFTWALL_SQL_PROJECTION
    R"sql( AND pe.app_code = ? AND pe.event_id = UNHEX(jt.j_id)
SET pe.status = 'dead', pe.last_error = ?, pe.locked_by = '', pe.locked_until_ms = 0,
    pe.next_attempt_at_ms = 0, pe.updated_at_ms = )sql" GIFTWALL_DB_NOW_MS R"sql(
WHERE pe.status = 'done')sql";

// Event ids per kKillDoneEvents statement.
constexpr size_t kKillBatch = 1000;

constexpr absl::string_view kDeleteGiftSenders =
    "DELETE FROM user_gift_wall_sender WHERE app_code = ? AND user_id = ? AND gift_id = ?";
constexpr absl::string_view kDeleteGift =
    "DELETE FROM user_gift_wall WHERE app_code = ? AND user_id = ? AND gift_id = ?";

constexpr absl::string_view kWallRows = R"sql(
SELECT user_id, gift_id, gift_count, total_coins, first_received_at_ms, last_received_at_ms,
       gift_name, gift_name_at_ms, gift_name_event_id, gift_icon, gift_icon_at_ms,
       gift_icon_event_id, sender_count, top_sender_user_id, top_sender_count, top_sender_coins,
       top_sender_first_sent_at_ms, top_sender_last_sent_at_ms, first_sender_user_id,
       first_sender_at_ms, first_sender_event_id
FROM user_gift_wall WHERE app_code = ? AND user_id > ? AND user_id <= ?)sql";

constexpr absl::string_view kSenderRows = R"sql(
SELECT user_id, gift_id, sender_user_id, sent_count, sent_coins, first_sent_at_ms,
       last_sent_at_ms
FROM user_gift_wall_sender WHERE app_code = ? AND user_id > ? AND user_id <= ?)sql";

constexpr absl::string_view kInsertWallRow = R"sql(
INSERT INTO user_gift_wall
  (app_code, user_id, gift_id, gift_count, total_coins, first_received_at_ms,
   last_received_at_ms, gift_name, gift_name_at_ms, gift_name_event_id, gift_icon,
   gift_icon_at_ms, gift_icon_event_id, sender_count, top_sender_user_id, top_sender_count,
   top_sender_coins, top_sender_first_sent_at_ms, top_sender_last_sent_at_ms,
   first_sender_user_id, first_sender_at_ms, first_sender_event_id, created_at_ms, updated_at_ms)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, )sql" GIFTWALL_DB_NOW_MS
                                             R"sql(, )sql" GIFTWALL_DB_NOW_MS R"sql())sql";

constexpr absl::string_view kInsertSenderRow = R"sql(
INSERT INTO user_gift_wall_sender
  (app_code, user_id, gift_id, sender_user_id, sent_count, sent_coins, first_sent_at_ms,
   last_sent_at_ms, created_at_ms, updated_at_ms)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, )sql" GIFTWALL_DB_NOW_MS R"sql(, )sql" GIFTWALL_DB_NOW_MS
                                               R"sql())sql";

// User-level lock names are limited to 64 characters on MySQL: hash the variable part.
constexpr absl::string_view kGetRebuildLock = R"sql(
SELECT COALESCE(GET_LOCK(CONCAT('giftwall.rebuild.', SHA1(CONCAT(DATABASE(), '/', ?))), 0), 0))sql";
constexpr absl::string_view kReleaseRebuildLock = R"sql(
SELECT RELEASE_LOCK(CONCAT('giftwall.rebuild.', SHA1(CONCAT(DATABASE(), '/', ?)))))sql";

const std::string& Locking(absl::string_view select) {
  static const auto* const wall = new std::string(absl::StrCat(kWallRows, " FOR UPDATE"));
  static const auto* const senders = new std::string(absl::StrCat(kSenderRows, " FOR UPDATE"));
  return select == kWallRows ? *wall : *senders;
}

domain::WallRow WallRowOf(const SqlRow& row) {
  domain::WallRow w;
  w.gift_count = row.Int(2);
  w.total_coins = row.Int(3);
  w.first_received_at_ms = row.Int(4);
  w.last_received_at_ms = row.Int(5);
  w.gift_name = row.Str(6);
  w.gift_name_at_ms = row.Int(7);
  w.gift_name_event_id = row.Str(8);
  w.gift_icon = row.Str(9);
  w.gift_icon_at_ms = row.Int(10);
  w.gift_icon_event_id = row.Str(11);
  w.sender_count = row.Int(12);
  w.top_sender_user_id = row.Int(13);
  w.top_sender = domain::SenderRow{row.Int(14), row.Int(15), row.Int(16), row.Int(17)};
  w.first_sender_user_id = row.Int(18);
  w.first_sender_at_ms = row.Int(19);
  w.first_sender_event_id = row.Str(20);
  return w;
}

}  // namespace

RebuildLock::~RebuildLock() {
  if (!conn_.has_value()) return;
  absl::Status s = (*conn_)->Query(kReleaseRebuildLock, {app_code_}, [](const SqlRow&) {});
  if (!s.ok()) {
    // A session that cannot release its lock must not be reused while holding it.
    (*conn_)->MarkBroken();
    LOG(WARNING) << "releasing the rebuild lock of " << app_code_ << ": " << s;
  }
}

absl::StatusOr<RebuildLock> WallAuditRepository::LockRebuild(absl::string_view app_code) {
  ASSIGN_OR_RETURN(PooledConnection conn, pool_.Acquire());
  int64_t locked = 0;
  absl::Status s =
      conn->Query(kGetRebuildLock, {app_code}, [&](const SqlRow& row) { locked = row.Int(0); });
  if (!s.ok()) return s;
  if (locked != 1) {
    return absl::FailedPreconditionError(
        absl::StrCat("a rebuild of app_code ", app_code, " is already running"));
  }
  return RebuildLock(std::move(conn), std::string(app_code));
}

absl::StatusOr<std::vector<int64_t>> WallAuditRepository::ListUsers(absl::string_view app_code) {
  ASSIGN_OR_RETURN(PooledConnection conn, pool_.Acquire());
  std::vector<int64_t> users;
  for (absl::string_view query : {kLedgerUsers, kWallUsers}) {
    int64_t after = 0;
    for (;;) {
      int64_t count = 0;
      absl::Status s =
          conn->Query(query, {app_code, after, int64_t{10'000}}, [&](const SqlRow& row) {
            ++count;
            after = row.Int(0);
            users.push_back(after);
          });
      if (!s.ok()) return s;
      if (count < 10'000) break;
    }
  }
  std::sort(users.begin(), users.end());
  users.erase(std::unique(users.begin(), users.end()), users.end());
  return users;
}

absl::StatusOr<std::vector<std::string>> AuditStatements::OutboxCodesOf(
    absl::string_view app_code) {
  ASSIGN_OR_RETURN(const OutboxAppCodes codes, ReadOutboxAppCodes(conn_));
  return codes.Of(std::string(app_code));
}

absl::StatusOr<int64_t> AuditStatements::NextChunkEnd(absl::string_view app_code, int64_t after) {
  int64_t hi = std::numeric_limits<int64_t>::max();
  bool any = false;
  for (absl::string_view query : {kLedgerUsers, kWallUsers}) {
    int64_t count = 0, last = 0;
    RETURN_IF_ERROR(conn_.Query(query, {app_code, after, kUsersPerChunk}, [&](const SqlRow& row) {
      ++count;
      last = row.Int(0);
    }));
    any = any || count > 0;
    if (count == kUsersPerChunk) hi = std::min(hi, last);  // more may follow: stop there
  }
  return any ? hi : after;
}

absl::StatusOr<std::map<int64_t, domain::UserWall>> AuditStatements::WallRows(
    absl::string_view app_code, int64_t lo, int64_t hi, bool lock) {
  std::map<int64_t, domain::UserWall> walls;
  RETURN_IF_ERROR(conn_.Query(
      lock ? Locking(kSenderRows) : kSenderRows, {app_code, lo, hi}, [&](const SqlRow& row) {
        walls[row.Int(0)][row.Str(1)].senders[row.Int(2)] =
            domain::SenderRow{row.Int(3), row.Int(4), row.Int(5), row.Int(6)};
      }));
  RETURN_IF_ERROR(conn_.Query(lock ? Locking(kWallRows) : kWallRows, {app_code, lo, hi},
                              [&](const SqlRow& row) {
                                domain::WallRow& w = walls[row.Int(0)][row.Str(1)];
                                std::map<int64_t, domain::SenderRow> senders = std::move(w.senders);
                                w = WallRowOf(row);
                                w.senders = std::move(senders);
                              }));
  return walls;
}

absl::StatusOr<std::vector<DoneEventRow>> AuditStatements::ReadDoneEvents(
    absl::string_view query, absl::Span<const std::string> outbox_codes,
    absl::Span<const SqlParam> params) {
  std::map<std::string, DoneEventRow> events;  // by event id
  for (const std::string& code : outbox_codes) {
    std::vector<SqlParam> all = {code};
    all.insert(all.end(), params.begin(), params.end());
    RETURN_IF_ERROR(conn_.Query(query, all, [&](const SqlRow& row) {
      DoneEventRow& e = events[row.Str(1)];
      if (e.in_outbox) return;  // found under an earlier code
      e = DoneEventRow{row.Int(0), row.Str(1), row.Int(2) != 0, row.Str(3), row.Str(4), row.Int(5)};
    }));
  }
  std::vector<DoneEventRow> rows;
  rows.reserve(events.size());
  for (auto& [id, e] : events) rows.push_back(std::move(e));
  return rows;
}

absl::StatusOr<std::vector<DoneEventRow>> AuditStatements::DoneEvents(
    absl::string_view app_code, absl::Span<const std::string> outbox_codes, int64_t lo,
    int64_t hi) {
  return ReadDoneEvents(kDoneEvents, outbox_codes, {app_code, lo, hi});
}

absl::StatusOr<std::vector<DoneEventRow>> AuditStatements::DoneEvent(
    absl::string_view app_code, absl::Span<const std::string> outbox_codes,
    absl::string_view event_id) {
  return ReadDoneEvents(kOneDoneEvent, outbox_codes, {app_code, event_id});
}

absl::StatusOr<std::set<std::string>> AuditStatements::DoneEventIds(absl::string_view app_code,
                                                                    int64_t user_id) {
  std::set<std::string> done;
  RETURN_IF_ERROR(conn_.Query(kDoneEventIds, {app_code, user_id},
                              [&](const SqlRow& row) { done.insert(row.Str(0)); }));
  return done;
}

absl::Status AuditStatements::ReplaceGift(absl::string_view app_code, int64_t user_id,
                                          const std::string& gift_id, const domain::WallRow* row) {
  for (absl::string_view sql : {kDeleteGiftSenders, kDeleteGift}) {
    RETURN_IF_ERROR(conn_.Execute(sql, {app_code, user_id, gift_id}).status());
  }
  if (row == nullptr) return absl::OkStatus();
  const domain::WallRow& w = *row;
  RETURN_IF_ERROR(conn_
                      .Execute(kInsertWallRow, {app_code,
                                                user_id,
                                                gift_id,
                                                w.gift_count,
                                                w.total_coins,
                                                w.first_received_at_ms,
                                                w.last_received_at_ms,
                                                w.gift_name,
                                                w.gift_name_at_ms,
                                                w.gift_name_event_id,
                                                w.gift_icon,
                                                w.gift_icon_at_ms,
                                                w.gift_icon_event_id,
                                                w.sender_count,
                                                w.top_sender_user_id,
                                                w.top_sender.sent_count,
                                                w.top_sender.sent_coins,
                                                w.top_sender.first_sent_at_ms,
                                                w.top_sender.last_sent_at_ms,
                                                w.first_sender_user_id,
                                                w.first_sender_at_ms,
                                                w.first_sender_event_id})
                      .status());
  for (const auto& [sender, s] : w.senders) {
    RETURN_IF_ERROR(
        conn_
            .Execute(kInsertSenderRow, {app_code, user_id, gift_id, sender, s.sent_count,
                                        s.sent_coins, s.first_sent_at_ms, s.last_sent_at_ms})
            .status());
  }
  return absl::OkStatus();
}

absl::Status AuditStatements::KillDoneEvents(absl::string_view app_code,
                                             absl::Span<const std::string> event_ids,
                                             absl::string_view reason) {
  for (size_t begin = 0; begin < event_ids.size(); begin += kKillBatch) {
    JsonRows json;
    for (size_t i = begin; i < std::min(event_ids.size(), begin + kKillBatch); ++i) {
      json.Row().Bytes(event_ids[i]);
    }
    RETURN_IF_ERROR(conn_.Execute(kKillDoneEvents, {json.Finish(), app_code, reason}).status());
  }
  return absl::OkStatus();
}

}  // namespace giftwall::storage
