#include "server/storage/wall_audit_repository.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "server/common/status_macros.h"
#include "server/storage/columns.h"
#include "server/storage/db_clock.h"
#include "server/storage/outbox_repository.h"
#include "server/storage/row_set.h"
#include "server/storage/wall_columns.h"

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

// A done event, with its outbox row (the source of truth) under one of the codes the outbox
// holds the app's events under.
enum DoneEventColumn { kTargetUser, kEventId, kInOutbox, kEventType, kPayload, kCreatedAt };
constexpr ResultColumn kDoneEventColumns[] = {
    {kTargetUser, "pe.target_user_id"},     {kEventId, "pe.event_id"},
    {kInOutbox, "wo.event_id IS NOT NULL"}, {kEventType, "COALESCE(wo.event_type, '')"},
    {kPayload, "COALESCE(wo.payload, '')"}, {kCreatedAt, "COALESCE(wo.created_at_ms, 0)"},
};
static_assert(InPositionOrder(kDoneEventColumns));

// The done events of the users in (?, ?].
const std::string& DoneEventsSql() {
  static const auto* const sql =
      new std::string(absl::StrCat("SELECT ", SelectList(kDoneEventColumns), R"sql(
FROM wallet_projection_events pe FORCE INDEX (idx_projection_events_user)
LEFT JOIN wallet_outbox wo ON wo.app_code = ? AND wo.event_id = pe.event_id
WHERE pe.projection_name = )sql",
                                   GIFTWALL_SQL_PROJECTION, R"sql( AND pe.app_code = ?
  AND pe.target_user_id > ? AND pe.target_user_id <= ? AND pe.status = 'done')sql"));
  return *sql;
}

// The ids of one user's done events: index-only (idx_projection_events_user), cheap under locks.
constexpr absl::string_view kDoneEventIds = R"sql(
SELECT event_id FROM wallet_projection_events FORCE INDEX (idx_projection_events_user)
WHERE projection_name = )sql" GIFTWALL_SQL_PROJECTION R"sql( AND app_code = ? AND target_user_id = ?
  AND status = 'done')sql";

const std::string& OneDoneEventSql() {
  static const auto* const sql = new std::string(
      absl::StrCat("SELECT ", SelectList(kDoneEventColumns), R"sql(
FROM wallet_projection_events pe
LEFT JOIN wallet_outbox wo ON wo.app_code = ? AND wo.event_id = pe.event_id
WHERE pe.projection_name = )sql",
                   GIFTWALL_SQL_PROJECTION,
                   " AND pe.app_code = ? AND pe.event_id = ?\n  AND pe.status = 'done'"));
  return *sql;
}

// Done events whose gifts a rebuild finds beyond the wall's cap (DESIGN §2.14) go dead.
constexpr RowColumn kEventIdColumns[] = {{0, "j_id", kHexId}};

const RowsSql& KillDoneEventsSql() {
  static const auto* const sql = new RowsSql(
      kEventIdColumns, absl::StrCat("UPDATE ", kRowsTable, R"sql(
STRAIGHT_JOIN wallet_projection_events pe
  ON pe.projection_name = )sql",
                                    GIFTWALL_SQL_PROJECTION,
                                    R"sql( AND pe.app_code = ? AND pe.event_id = UNHEX(jt.j_id)
SET pe.status = 'dead', pe.last_error = ?, pe.locked_by = '', pe.locked_until_ms = 0,
    pe.next_attempt_at_ms = 0, pe.updated_at_ms = )sql",
                                    GIFTWALL_DB_NOW_MS, R"sql(
WHERE pe.status = 'done')sql"));
  return *sql;
}

// Event ids per kKillDoneEvents statement.
constexpr size_t kKillBatch = 1000;

// The wall tables, all-time or of the periods (DESIGN §2.15), whose rows add the period's kind
// and key to the all-time columns.
struct WallTables {
  absl::string_view walls;
  absl::string_view senders;
  bool periods;
};
constexpr WallTables kAllTime = {"user_gift_wall", "user_gift_wall_sender", false};
constexpr WallTables kPeriods = {"user_gift_wall_period", "user_gift_wall_period_sender", true};

// Whole rows of the walls of the users in (?, ?], for the audit and the rebuild; a period row's
// "kind:key" after the columns.
std::string RowsOfUsers(absl::string_view table, bool periods,
                        absl::Span<const ResultColumn> columns, bool lock) {
  return absl::StrCat("SELECT ", SelectList(columns),
                      periods ? ", CONCAT(period_kind, ':', period_key)" : "", " FROM ", table,
                      " WHERE app_code = ? AND user_id > ? AND user_id <= ?",
                      lock ? " FOR UPDATE" : "");
}

// [periods][lock]
const std::string& WallRowsSql(const WallTables& t, bool lock) {
  static const auto* const sqls =
      new std::string[4]{RowsOfUsers(kAllTime.walls, false, wall_row::kColumns, false),
                         RowsOfUsers(kAllTime.walls, false, wall_row::kColumns, true),
                         RowsOfUsers(kPeriods.walls, true, wall_row::kColumns, false),
                         RowsOfUsers(kPeriods.walls, true, wall_row::kColumns, true)};
  return sqls[(t.periods ? 2 : 0) + (lock ? 1 : 0)];
}

const std::string& SenderRowsSql(const WallTables& t, bool lock) {
  static const auto* const sqls =
      new std::string[4]{RowsOfUsers(kAllTime.senders, false, sender_row::kColumns, false),
                         RowsOfUsers(kAllTime.senders, false, sender_row::kColumns, true),
                         RowsOfUsers(kPeriods.senders, true, sender_row::kColumns, false),
                         RowsOfUsers(kPeriods.senders, true, sender_row::kColumns, true)};
  return sqls[(t.periods ? 2 : 0) + (lock ? 1 : 0)];
}

// One row into `table`: its columns and the row's times; a period's kind and key after the app
// code.
std::string InsertRow(absl::string_view table, bool periods,
                      absl::Span<const ResultColumn> columns) {
  std::string placeholders;
  for (size_t i = 0; i < columns.size(); ++i) placeholders.append("?, ");
  return absl::StrCat("INSERT INTO ", table, " (app_code, ",
                      periods ? "period_kind, period_key, " : "", SelectList(columns),
                      ", created_at_ms, updated_at_ms)\nVALUES (?, ", periods ? "?, ?, " : "",
                      placeholders, GIFTWALL_DB_NOW_MS, ", ", GIFTWALL_DB_NOW_MS, ")");
}

const std::string& InsertWallRowSql(const WallTables& t) {
  static const auto* const sqls =
      new std::string[2]{InsertRow(kAllTime.walls, false, wall_row::kColumns),
                         InsertRow(kPeriods.walls, true, wall_row::kColumns)};
  return sqls[t.periods ? 1 : 0];
}

const std::string& InsertSenderRowSql(const WallTables& t) {
  static const auto* const sqls =
      new std::string[2]{InsertRow(kAllTime.senders, false, sender_row::kColumns),
                         InsertRow(kPeriods.senders, true, sender_row::kColumns)};
  return sqls[t.periods ? 1 : 0];
}

std::string DeleteGift(absl::string_view table, bool periods) {
  return absl::StrCat("DELETE FROM ", table, " WHERE app_code = ? AND user_id = ?",
                      periods ? " AND period_kind = ? AND period_key = ?" : "", " AND gift_id = ?");
}

// [periods]: the sender rows', then the wall row's.
const std::string* DeleteGiftSql(const WallTables& t) {
  static const auto* const sqls =
      new std::string[4]{DeleteGift(kAllTime.senders, false), DeleteGift(kAllTime.walls, false),
                         DeleteGift(kPeriods.senders, true), DeleteGift(kPeriods.walls, true)};
  return &sqls[t.periods ? 2 : 0];
}

domain::WallRow WallRowOf(const SqlRow& row) {
  namespace col = wall_row;
  domain::WallRow w;
  w.gift_count = row.Int(col::kGiftCount);
  w.total_coins = row.Int(col::kTotalCoins);
  w.first_received_at_ms = row.Int(col::kFirstReceived);
  w.last_received_at_ms = row.Int(col::kLastReceived);
  w.gift_name = row.Str(col::kName);
  w.gift_name_at_ms = row.Int(col::kNameAt);
  w.gift_name_event_id = row.Str(col::kNameEvent);
  w.gift_icon = row.Str(col::kIcon);
  w.gift_icon_at_ms = row.Int(col::kIconAt);
  w.gift_icon_event_id = row.Str(col::kIconEvent);
  w.sender_count = row.Int(col::kSenderCount);
  w.top_sender_user_id = row.Int(col::kTopUser);
  w.top_sender = domain::SenderRow{row.Int(col::kTopCount), row.Int(col::kTopCoins),
                                   row.Int(col::kTopFirst), row.Int(col::kTopLast)};
  w.first_sender_user_id = row.Int(col::kFirstSender);
  w.first_sender_at_ms = row.Int(col::kFirstSenderAt);
  w.first_sender_event_id = row.Str(col::kFirstSenderEvent);
  return w;
}

// The parameters of InsertWallRowSql: the app code (and the period's kind and key), then the
// row's columns by name.
std::vector<SqlParam> WallRowParams(absl::Span<const SqlParam> key, int64_t user_id,
                                    absl::string_view gift_id, const domain::WallRow& w) {
  namespace col = wall_row;
  std::vector<SqlParam> columns(std::size(col::kColumns));
  columns[col::kUserId] = user_id;
  columns[col::kGiftId] = gift_id;
  columns[col::kGiftCount] = w.gift_count;
  columns[col::kTotalCoins] = w.total_coins;
  columns[col::kFirstReceived] = w.first_received_at_ms;
  columns[col::kLastReceived] = w.last_received_at_ms;
  columns[col::kName] = w.gift_name;
  columns[col::kNameAt] = w.gift_name_at_ms;
  columns[col::kNameEvent] = w.gift_name_event_id;
  columns[col::kIcon] = w.gift_icon;
  columns[col::kIconAt] = w.gift_icon_at_ms;
  columns[col::kIconEvent] = w.gift_icon_event_id;
  columns[col::kSenderCount] = w.sender_count;
  columns[col::kTopUser] = w.top_sender_user_id;
  columns[col::kTopCount] = w.top_sender.sent_count;
  columns[col::kTopCoins] = w.top_sender.sent_coins;
  columns[col::kTopFirst] = w.top_sender.first_sent_at_ms;
  columns[col::kTopLast] = w.top_sender.last_sent_at_ms;
  columns[col::kFirstSender] = w.first_sender_user_id;
  columns[col::kFirstSenderAt] = w.first_sender_at_ms;
  columns[col::kFirstSenderEvent] = w.first_sender_event_id;
  columns.insert(columns.begin(), key.begin(), key.end());
  return columns;
}

std::vector<SqlParam> SenderRowParams(absl::Span<const SqlParam> key, int64_t user_id,
                                      absl::string_view gift_id, int64_t sender,
                                      const domain::SenderRow& s) {
  namespace col = sender_row;
  std::vector<SqlParam> columns(std::size(col::kColumns));
  columns[col::kUserId] = user_id;
  columns[col::kGiftId] = gift_id;
  columns[col::kSenderId] = sender;
  columns[col::kSentCount] = s.sent_count;
  columns[col::kSentCoins] = s.sent_coins;
  columns[col::kFirstSent] = s.first_sent_at_ms;
  columns[col::kLastSent] = s.last_sent_at_ms;
  columns[col::kAnonymous] = int64_t{s.anonymous ? 1 : 0};
  columns.insert(columns.begin(), key.begin(), key.end());
  return columns;
}

// The rows of the walls of the users in (lo, hi] of `t`, by user and wall name ("" all-time).
absl::StatusOr<std::map<int64_t, std::map<std::string, domain::UserWall>>> ReadWallRows(
    SqlConnection& conn, const WallTables& t, absl::string_view app_code, int64_t lo, int64_t hi,
    bool lock) {
  std::map<int64_t, std::map<std::string, domain::UserWall>> walls;
  // A row's wall: its user, and its period's name after the `columns` it has.
  auto wall_of = [&](const SqlRow& row, int user, size_t columns) -> domain::UserWall& {
    return walls[row.Int(user)][t.periods ? row.Str(static_cast<int>(columns)) : ""];
  };
  RETURN_IF_ERROR(conn.Query(SenderRowsSql(t, lock), {app_code, lo, hi}, [&](const SqlRow& row) {
    namespace col = sender_row;
    wall_of(row, col::kUserId, std::size(col::kColumns))[row.Str(col::kGiftId)]
        .senders[row.Int(col::kSenderId)] = domain::SenderRow{
        row.Int(col::kSentCount), row.Int(col::kSentCoins), row.Int(col::kFirstSent),
        row.Int(col::kLastSent), row.Int(col::kAnonymous) != 0};
  }));
  RETURN_IF_ERROR(conn.Query(WallRowsSql(t, lock), {app_code, lo, hi}, [&](const SqlRow& row) {
    domain::WallRow& w =
        wall_of(row, wall_row::kUserId, std::size(wall_row::kColumns))[row.Str(wall_row::kGiftId)];
    std::map<int64_t, domain::SenderRow> senders = std::move(w.senders);
    w = WallRowOf(row);
    w.senders = std::move(senders);
  }));
  return walls;
}

}  // namespace

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

absl::StatusOr<std::vector<std::string>> AuditStatements::OutboxAppCodes() {
  return ReadOutboxAppCodes(conn_);
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
  ASSIGN_OR_RETURN(auto rows, ReadWallRows(conn_, kAllTime, app_code, lo, hi, lock));
  std::map<int64_t, domain::UserWall> walls;
  for (auto& [user, of_user] : rows) walls[user] = std::move(of_user[""]);
  return walls;
}

absl::StatusOr<std::map<int64_t, std::map<std::string, domain::UserWall>>>
AuditStatements::PeriodWallRows(absl::string_view app_code, int64_t lo, int64_t hi, bool lock) {
  return ReadWallRows(conn_, kPeriods, app_code, lo, hi, lock);
}

absl::StatusOr<std::vector<DoneEventRow>> AuditStatements::ReadDoneEvents(
    absl::string_view query, absl::Span<const std::string> outbox_codes,
    absl::Span<const SqlParam> params) {
  std::map<std::string, DoneEventRow> events;  // by event id
  for (const std::string& code : outbox_codes) {
    std::vector<SqlParam> all = {code};
    all.insert(all.end(), params.begin(), params.end());
    RETURN_IF_ERROR(conn_.Query(query, all, [&](const SqlRow& row) {
      DoneEventRow& e = events[row.Str(kEventId)];
      if (e.in_outbox) return;  // found under an earlier code
      e = DoneEventRow{row.Int(kTargetUser), row.Str(kEventId), row.Int(kInOutbox) != 0,
                       row.Str(kEventType),  row.Str(kPayload), row.Int(kCreatedAt)};
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
  return ReadDoneEvents(DoneEventsSql(), outbox_codes, {app_code, lo, hi});
}

absl::StatusOr<std::vector<DoneEventRow>> AuditStatements::DoneEvent(
    absl::string_view app_code, absl::Span<const std::string> outbox_codes,
    absl::string_view event_id) {
  return ReadDoneEvents(OneDoneEventSql(), outbox_codes, {app_code, event_id});
}

absl::StatusOr<std::set<std::string>> AuditStatements::DoneEventIds(absl::string_view app_code,
                                                                    int64_t user_id) {
  std::set<std::string> done;
  RETURN_IF_ERROR(conn_.Query(kDoneEventIds, {app_code, user_id},
                              [&](const SqlRow& row) { done.insert(row.Str(0)); }));
  return done;
}

absl::Status AuditStatements::ReplaceGift(absl::string_view app_code, int64_t user_id,
                                          absl::string_view period, const std::string& gift_id,
                                          const domain::WallRow* row) {
  const WallTables& t = period.empty() ? kAllTime : kPeriods;
  // The row's key before its columns: the app code, and a period's kind and key.
  std::vector<SqlParam> key = {app_code};
  if (t.periods) {
    const size_t colon = period.find(':');
    key.push_back(period.substr(0, colon));
    key.push_back(period.substr(colon + 1));
  }
  std::vector<SqlParam> where = key;
  where.insert(where.begin() + 1, user_id);
  where.push_back(gift_id);
  const std::string* deletes = DeleteGiftSql(t);
  for (int i = 0; i < 2; ++i) RETURN_IF_ERROR(conn_.Execute(deletes[i], where).status());
  if (row == nullptr) return absl::OkStatus();
  RETURN_IF_ERROR(
      conn_.Execute(InsertWallRowSql(t), WallRowParams(key, user_id, gift_id, *row)).status());
  for (const auto& [sender, s] : row->senders) {
    RETURN_IF_ERROR(
        conn_.Execute(InsertSenderRowSql(t), SenderRowParams(key, user_id, gift_id, sender, s))
            .status());
  }
  return absl::OkStatus();
}

absl::Status AuditStatements::KillDoneEvents(absl::string_view app_code,
                                             absl::Span<const std::string> event_ids,
                                             absl::string_view reason) {
  for (size_t begin = 0; begin < event_ids.size(); begin += kKillBatch) {
    RowSet ids(kEventIdColumns);
    for (size_t i = begin; i < std::min(event_ids.size(), begin + kKillBatch); ++i) {
      ids.Row().Bytes(0, event_ids[i]);
    }
    RETURN_IF_ERROR(conn_.Execute(KillDoneEventsSql(), {&ids, app_code, reason}).status());
  }
  return absl::OkStatus();
}

}  // namespace giftwall::storage
