#include "server/storage/sent_wall_store.h"

#include <algorithm>
#include <iterator>
#include <limits>

#include "absl/strings/str_cat.h"
#include "server/common/status_macros.h"
#include "server/storage/columns.h"
#include "server/storage/db_clock.h"
#include "server/storage/json_rows.h"
#include "server/storage/paging.h"

namespace giftwall::storage {
namespace {

using domain::SentKey;
using domain::SentRow;
using domain::SentWall;

constexpr int64_t kSendersPerChunk = 200;

enum SentDeltaColumn { kSender, kGift, kCount, kCoins, kReceivers, kFirst, kLast, kAnonymous };
constexpr JsonColumn kSentDeltaColumns[] = {
    {kSender, "j_sender", "BIGINT"},       {kGift, "j_gift", kHexGift},
    {kCount, "j_count", "BIGINT"},         {kCoins, "j_coins", "BIGINT"},
    {kReceivers, "j_receivers", "BIGINT"}, {kFirst, "j_first", "BIGINT"},
    {kLast, "j_last", "BIGINT"},           {kAnonymous, "j_anonymous", "TINYINT"},
};
static_assert(InPositionOrder(kSentDeltaColumns));

// The merge of domain::MergeSentRow: counts, coins and receivers add up, first and last take
// LEAST and GREATEST, anonymous is sticky.
const std::string& MergeSql() {
  static const auto* const sql = new std::string(absl::StrCat(
      R"sql(
INSERT INTO user_gift_sent
  (app_code, sender_user_id, gift_id, sent_count, sent_coins, receiver_count, first_sent_at_ms,
   last_sent_at_ms, anonymous, created_at_ms, updated_at_ms)
SELECT ?, jt.j_sender, UNHEX(jt.j_gift), jt.j_count, jt.j_coins, jt.j_receivers, jt.j_first,
       jt.j_last, jt.j_anonymous, )sql",
      GIFTWALL_DB_NOW_MS, ", ", GIFTWALL_DB_NOW_MS, "\nFROM ", JsonTableSql(kSentDeltaColumns),
      R"sql(
ON DUPLICATE KEY UPDATE
  sent_count = sent_count + VALUES(sent_count),
  sent_coins = sent_coins + VALUES(sent_coins),
  receiver_count = receiver_count + VALUES(receiver_count),
  first_sent_at_ms = LEAST(first_sent_at_ms, VALUES(first_sent_at_ms)),
  last_sent_at_ms = GREATEST(last_sent_at_ms, VALUES(last_sent_at_ms)),
  anonymous = GREATEST(anonymous, VALUES(anonymous)),
  updated_at_ms = VALUES(updated_at_ms))sql"));
  return *sql;
}

// The columns every read of sent rows, and every sum of sender rows, yields after its key.
enum SentColumn {
  kRowSender,
  kRowGift,
  kRowCount,
  kRowCoins,
  kRowReceivers,
  kRowFirst,
  kRowLast,
  kRowAnonymous
};
constexpr ResultColumn kSentColumns[] = {
    {kRowSender, "t.sender_user_id"},    {kRowGift, "t.gift_id"},
    {kRowCount, "t.sent_count"},         {kRowCoins, "t.sent_coins"},
    {kRowReceivers, "t.receiver_count"}, {kRowFirst, "t.first_sent_at_ms"},
    {kRowLast, "t.last_sent_at_ms"},     {kRowAnonymous, "t.anonymous"},
};
static_assert(InPositionOrder(kSentColumns));

constexpr absl::string_view kSumColumns = R"sql(
SELECT s.sender_user_id, s.gift_id, SUM(s.sent_count), SUM(s.sent_coins), COUNT(*),
       MIN(s.first_sent_at_ms), MAX(s.last_sent_at_ms), MAX(s.anonymous)
FROM user_gift_wall_sender s FORCE INDEX (idx_user_gift_wall_sender_by_sender))sql";

SentRow RowOf(const SqlRow& row) {
  return SentRow{row.Int(kRowCount), row.Int(kRowCoins), row.Int(kRowReceivers),
                 row.Int(kRowFirst), row.Int(kRowLast),  row.Int(kRowAnonymous) != 0};
}

const std::string& SumRangeSql() {
  static const auto* const sql = new std::string(absl::StrCat(kSumColumns, R"sql(
WHERE s.app_code = ? AND s.sender_user_id > ? AND s.sender_user_id <= ?
GROUP BY s.sender_user_id, s.gift_id)sql"));
  return *sql;
}

const std::string& SumOneSql() {
  static const auto* const sql = new std::string(absl::StrCat(kSumColumns, R"sql(
WHERE s.app_code = ? AND s.sender_user_id = ? AND s.gift_id = ?
GROUP BY s.sender_user_id, s.gift_id)sql"));
  return *sql;
}

const std::string& SentRangeSql() {
  static const auto* const sql =
      new std::string(absl::StrCat("SELECT ", SelectList(kSentColumns), R"sql(
FROM user_gift_sent t
WHERE t.app_code = ? AND t.sender_user_id > ? AND t.sender_user_id <= ?)sql"));
  return *sql;
}

constexpr absl::string_view kSenderRowSenders = R"sql(
SELECT DISTINCT sender_user_id
FROM user_gift_wall_sender FORCE INDEX (idx_user_gift_wall_sender_by_sender)
WHERE app_code = ? AND sender_user_id > ?
ORDER BY sender_user_id
LIMIT ?)sql";

constexpr absl::string_view kSentSenders = R"sql(
SELECT DISTINCT sender_user_id FROM user_gift_sent WHERE app_code = ? AND sender_user_id > ?
ORDER BY sender_user_id
LIMIT ?)sql";

// Locks one sent row, inserting it empty if it is absent (the placeholder never commits:
// Recompute sets or deletes it).
const std::string& LockRowSql() {
  static const auto* const sql =
      new std::string(absl::StrCat(R"sql(
INSERT INTO user_gift_sent
  (app_code, sender_user_id, gift_id, sent_count, sent_coins, receiver_count, first_sent_at_ms,
   last_sent_at_ms, anonymous, created_at_ms, updated_at_ms)
VALUES (?, ?, ?, 0, 0, 0, 0, 0, 0, )sql",
                                   GIFTWALL_DB_NOW_MS, ", ", GIFTWALL_DB_NOW_MS, R"sql()
ON DUPLICATE KEY UPDATE sent_count = sent_count)sql"));
  return *sql;
}

const std::string& SetRowSql() {
  static const auto* const sql = new std::string(absl::StrCat(R"sql(
UPDATE user_gift_sent
SET sent_count = ?, sent_coins = ?, receiver_count = ?, first_sent_at_ms = ?,
    last_sent_at_ms = ?, anonymous = ?, updated_at_ms = )sql",
                                                              GIFTWALL_DB_NOW_MS, R"sql(
WHERE app_code = ? AND sender_user_id = ? AND gift_id = ?)sql"));
  return *sql;
}

constexpr absl::string_view kDeleteRowSql = R"sql(
DELETE FROM user_gift_sent WHERE app_code = ? AND sender_user_id = ? AND gift_id = ?)sql";

// Pages of a sender's sent gifts, in gift_id order (the primary key's).
std::string SentGiftsSql(bool after_cursor, bool shown_only) {
  return absl::StrCat("SELECT ", SelectList(kSentColumns), R"sql(
FROM user_gift_sent t
WHERE t.app_code = ? AND t.sender_user_id = ?)sql",
                      after_cursor ? " AND t.gift_id > ?" : "",
                      shown_only ? " AND t.anonymous = 0" : "", R"sql(
ORDER BY t.gift_id
LIMIT ?)sql");
}

const std::string& GetSentSql() {
  static const auto* const sql = new std::string(absl::StrCat("SELECT ", SelectList(kSentColumns),
                                                              R"sql(
FROM user_gift_sent t
WHERE t.app_code = ? AND t.sender_user_id = ? AND t.gift_id = ?)sql"));
  return *sql;
}

enum ReceiverColumn { kReceiver, kRecvCount, kRecvCoins, kRecvFirst, kRecvLast, kRecvAnonymous };
constexpr ResultColumn kReceiverColumns[] = {
    {kReceiver, "s.user_id"},         {kRecvCount, "s.sent_count"},
    {kRecvCoins, "s.sent_coins"},     {kRecvFirst, "s.first_sent_at_ms"},
    {kRecvLast, "s.last_sent_at_ms"}, {kRecvAnonymous, "s.anonymous"},
};
static_assert(InPositionOrder(kReceiverColumns));

// The receivers of one sent gift: a range of the by-sender index.
std::string SentReceiversSql(bool after_cursor) {
  return absl::StrCat("SELECT ", SelectList(kReceiverColumns), R"sql(
FROM user_gift_wall_sender s FORCE INDEX (idx_user_gift_wall_sender_by_sender)
WHERE s.app_code = ? AND s.sender_user_id = ? AND s.gift_id = ?)sql",
                      after_cursor ? " AND s.user_id > ?" : "", R"sql(
ORDER BY s.user_id
LIMIT ?)sql");
}

absl::StatusOr<SentWall> ReadRows(SqlConnection& conn, absl::string_view sql,
                                  absl::Span<const SqlParam> params) {
  SentWall rows;
  RETURN_IF_ERROR(conn.Query(sql, params, [&](const SqlRow& row) {
    rows.emplace(SentKey{row.Int(kRowSender), row.Str(kRowGift)}, RowOf(row));
  }));
  return rows;
}

}  // namespace

absl::string_view SentGiftsQuery(bool after_cursor, bool shown_only) {
  static const auto* const sql =
      new std::string[4]{SentGiftsSql(false, false), SentGiftsSql(false, true),
                         SentGiftsSql(true, false), SentGiftsSql(true, true)};
  return sql[(after_cursor ? 2 : 0) + (shown_only ? 1 : 0)];
}

absl::string_view SentReceiversQuery(bool after_cursor) {
  static const auto* const sql =
      new std::string[2]{SentReceiversSql(false), SentReceiversSql(true)};
  return sql[after_cursor ? 1 : 0];
}

absl::Status SentStatements::Merge(absl::string_view app_code, const SentWall& deltas) {
  if (deltas.empty()) return absl::OkStatus();
  JsonRows json(kSentDeltaColumns);
  for (const auto& [key, d] : deltas) {
    json.Row()
        .Int(kSender, key.sender_user_id)
        .Bytes(kGift, key.gift_id)
        .Int(kCount, d.sent_count)
        .Int(kCoins, d.sent_coins)
        .Int(kReceivers, d.receiver_count)
        .Int(kFirst, d.first_sent_at_ms)
        .Int(kLast, d.last_sent_at_ms)
        .Int(kAnonymous, d.anonymous ? 1 : 0);
  }
  return conn_.Execute(MergeSql(), {app_code, json.Finish()}).status();
}

absl::StatusOr<int64_t> SentStatements::NextSenderChunkEnd(absl::string_view app_code,
                                                           int64_t after) {
  int64_t hi = std::numeric_limits<int64_t>::max();
  bool any = false;
  for (absl::string_view query : {kSenderRowSenders, kSentSenders}) {
    int64_t count = 0, last = 0;
    RETURN_IF_ERROR(conn_.Query(query, {app_code, after, kSendersPerChunk}, [&](const SqlRow& row) {
      ++count;
      last = row.Int(0);
    }));
    any = any || count > 0;
    if (count == kSendersPerChunk) hi = std::min(hi, last);  // more may follow: stop there
  }
  return any ? hi : after;
}

absl::StatusOr<SentWall> SentStatements::SumSenderRows(absl::string_view app_code, int64_t lo,
                                                       int64_t hi) {
  return ReadRows(conn_, SumRangeSql(), {app_code, lo, hi});
}

absl::StatusOr<SentWall> SentStatements::SentRows(absl::string_view app_code, int64_t lo,
                                                  int64_t hi) {
  return ReadRows(conn_, SentRangeSql(), {app_code, lo, hi});
}

absl::Status SentStatements::Recompute(absl::string_view app_code, absl::Span<const SentKey> keys) {
  for (const SentKey& key : keys) {
    RETURN_IF_ERROR(
        conn_.Execute(LockRowSql(), {app_code, key.sender_user_id, key.gift_id}).status());
    ASSIGN_OR_RETURN(const SentWall sum,
                     ReadRows(conn_, SumOneSql(), {app_code, key.sender_user_id, key.gift_id}));
    if (sum.empty()) {
      RETURN_IF_ERROR(
          conn_.Execute(kDeleteRowSql, {app_code, key.sender_user_id, key.gift_id}).status());
      continue;
    }
    const SentRow& row = sum.begin()->second;
    RETURN_IF_ERROR(conn_
                        .Execute(SetRowSql(),
                                 {row.sent_count, row.sent_coins, row.receiver_count,
                                  row.first_sent_at_ms, row.last_sent_at_ms, int64_t{row.anonymous},
                                  app_code, key.sender_user_id, key.gift_id})
                        .status());
  }
  return absl::OkStatus();
}

absl::StatusOr<SentPage> SentWallRepository::ListSent(absl::string_view app_code,
                                                      int64_t sender_user_id,
                                                      const std::optional<std::string>& after_gift,
                                                      bool shown_only, int limit) {
  std::vector<SqlParam> params = {app_code, sender_user_id};
  if (after_gift.has_value()) params.emplace_back(*after_gift);
  params.emplace_back(RowsToFetch(limit));
  ASSIGN_OR_RETURN(PooledConnection conn, pool_.Acquire());
  SentPage page;
  RETURN_IF_ERROR(conn->Query(SentGiftsQuery(after_gift.has_value(), shown_only), params,
                              [&](const SqlRow& row) {
                                page.gifts.push_back(SentGift{row.Str(kRowGift), RowOf(row)});
                              }));
  page.has_more = TrimToPage(&page.gifts, limit);
  return page;
}

absl::StatusOr<std::optional<SentRow>> SentWallRepository::GetSent(absl::string_view app_code,
                                                                   int64_t sender_user_id,
                                                                   absl::string_view gift_id) {
  ASSIGN_OR_RETURN(PooledConnection conn, pool_.Acquire());
  ASSIGN_OR_RETURN(const SentWall rows,
                   ReadRows(*conn, GetSentSql(), {app_code, sender_user_id, gift_id}));
  if (rows.empty()) return std::nullopt;
  return rows.begin()->second;
}

absl::StatusOr<ReceiverPage> SentWallRepository::ListReceivers(
    absl::string_view app_code, int64_t sender_user_id, absl::string_view gift_id,
    std::optional<int64_t> after_receiver, int limit) {
  std::vector<SqlParam> params = {app_code, sender_user_id, gift_id};
  if (after_receiver.has_value()) params.emplace_back(*after_receiver);
  params.emplace_back(RowsToFetch(limit));
  ASSIGN_OR_RETURN(PooledConnection conn, pool_.Acquire());
  ReceiverPage page;
  RETURN_IF_ERROR(
      conn->Query(SentReceiversQuery(after_receiver.has_value()), params, [&](const SqlRow& row) {
        page.receivers.push_back(SentReceiver{
            row.Int(kReceiver),
            domain::SenderRow{row.Int(kRecvCount), row.Int(kRecvCoins), row.Int(kRecvFirst),
                              row.Int(kRecvLast), row.Int(kRecvAnonymous) != 0}});
      }));
  page.has_more = TrimToPage(&page.receivers, limit);
  return page;
}

}  // namespace giftwall::storage
