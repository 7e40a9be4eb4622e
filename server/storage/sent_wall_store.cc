#include "server/storage/sent_wall_store.h"

#include <algorithm>
#include <iterator>
#include <limits>

#include "absl/strings/str_cat.h"
#include "server/common/status_macros.h"
#include "server/storage/columns.h"
#include "server/storage/db_clock.h"
#include "server/storage/paging.h"
#include "server/storage/row_set.h"

namespace giftwall::storage {
namespace {

using domain::SentKey;
using domain::SentRow;
using domain::SentTotals;
using domain::SentWall;

constexpr int64_t kSendersPerChunk = 200;

// A period's kind and key ("month", "2026-12"); both empty for all-time, as the rows keep them.
struct KindAndKey {
  std::string kind;
  std::string key;
};
KindAndKey Split(absl::string_view period) {
  const size_t colon = period.find(':');
  if (colon == absl::string_view::npos) return {};
  return {std::string(period.substr(0, colon)), std::string(period.substr(colon + 1))};
}
std::string Join(std::string kind, absl::string_view key) {
  return kind.empty() ? kind : absl::StrCat(kind, ":", key);
}

enum SentDeltaColumn {
  kSender,
  kKind,
  kKey,
  kGift,
  kCount,
  kCoins,
  kReceivers,
  kFirst,
  kLast,
  kOpenCount,
  kOpenCoins,
  kOpenReceivers,
  kOpenFirst,
  kOpenLast,
  kAnonymous
};
constexpr RowColumn kSentDeltaColumns[] = {
    {kSender, "j_sender", "BIGINT"},
    {kKind, "j_kind", "VARCHAR(8) CHARACTER SET ascii"},
    {kKey, "j_key", "VARCHAR(10) CHARACTER SET ascii"},
    {kGift, "j_gift", kHexGift},
    {kCount, "j_count", "BIGINT"},
    {kCoins, "j_coins", "BIGINT"},
    {kReceivers, "j_receivers", "BIGINT"},
    {kFirst, "j_first", "BIGINT"},
    {kLast, "j_last", "BIGINT"},
    {kOpenCount, "j_open_count", "BIGINT"},
    {kOpenCoins, "j_open_coins", "BIGINT"},
    {kOpenReceivers, "j_open_receivers", "BIGINT"},
    {kOpenFirst, "j_open_first", "BIGINT"},
    {kOpenLast, "j_open_last", "BIGINT"},
    {kAnonymous, "j_anonymous", "TINYINT"},
};
static_assert(InPositionOrder(kSentDeltaColumns));

constexpr absl::string_view kSentRowColumns = R"sql(sent_count, sent_coins, receiver_count,
   first_sent_at_ms, last_sent_at_ms, open_sent_count, open_sent_coins, open_receiver_count,
   open_first_sent_at_ms, open_last_sent_at_ms, anonymous)sql";

// The head of both inserts: every column, keys first, the times last.
std::string InsertSentRowSql() {
  return absl::StrCat(R"sql(
INSERT INTO user_gift_sent
  (app_code, sender_user_id, period_kind, period_key, gift_id, )sql",
                      kSentRowColumns, R"sql(, created_at_ms, updated_at_ms))sql");
}

// The merge of domain::MergeSentRow: counts, coins and receivers add up, first and last take
// LEAST and GREATEST, of a non-empty delta into a non-empty row (the open part may be empty:
// its times are 0 then), anonymous is sticky. Assignments run left to right: the open part's
// times are decided on the count before it grows.
const RowsSql& MergeSql() {
  static const auto* const sql =
      new RowsSql(kSentDeltaColumns,
                  absl::StrCat(InsertSentRowSql(), R"sql(
SELECT ?, jt.j_sender, jt.j_kind, jt.j_key, UNHEX(jt.j_gift), jt.j_count, jt.j_coins,
       jt.j_receivers, jt.j_first, jt.j_last, jt.j_open_count, jt.j_open_coins,
       jt.j_open_receivers, jt.j_open_first, jt.j_open_last, jt.j_anonymous, )sql",
                               GIFTWALL_DB_NOW_MS, ", ", GIFTWALL_DB_NOW_MS, "\nFROM ", kRowsTable,
                               R"sql(
ON DUPLICATE KEY UPDATE
  sent_count = sent_count + VALUES(sent_count),
  sent_coins = sent_coins + VALUES(sent_coins),
  receiver_count = receiver_count + VALUES(receiver_count),
  first_sent_at_ms = LEAST(first_sent_at_ms, VALUES(first_sent_at_ms)),
  last_sent_at_ms = GREATEST(last_sent_at_ms, VALUES(last_sent_at_ms)),
  open_first_sent_at_ms = IF(VALUES(open_sent_count) = 0, open_first_sent_at_ms,
      IF(open_sent_count = 0, VALUES(open_first_sent_at_ms),
         LEAST(open_first_sent_at_ms, VALUES(open_first_sent_at_ms)))),
  open_last_sent_at_ms = IF(VALUES(open_sent_count) = 0, open_last_sent_at_ms,
      IF(open_sent_count = 0, VALUES(open_last_sent_at_ms),
         GREATEST(open_last_sent_at_ms, VALUES(open_last_sent_at_ms)))),
  open_sent_count = open_sent_count + VALUES(open_sent_count),
  open_sent_coins = open_sent_coins + VALUES(open_sent_coins),
  open_receiver_count = open_receiver_count + VALUES(open_receiver_count),
  anonymous = GREATEST(anonymous, VALUES(anonymous)),
  updated_at_ms = VALUES(updated_at_ms))sql"));
  return *sql;
}

// The columns every read of sent rows, and every sum of sender rows, yields.
enum SentColumn {
  kRowSender,
  kRowKind,
  kRowKey,
  kRowGift,
  kRowCount,
  kRowCoins,
  kRowReceivers,
  kRowFirst,
  kRowLast,
  kRowOpenCount,
  kRowOpenCoins,
  kRowOpenReceivers,
  kRowOpenFirst,
  kRowOpenLast,
  kRowAnonymous
};
constexpr ResultColumn kSentColumns[] = {
    {kRowSender, "t.sender_user_id"},
    {kRowKind, "t.period_kind"},
    {kRowKey, "t.period_key"},
    {kRowGift, "t.gift_id"},
    {kRowCount, "t.sent_count"},
    {kRowCoins, "t.sent_coins"},
    {kRowReceivers, "t.receiver_count"},
    {kRowFirst, "t.first_sent_at_ms"},
    {kRowLast, "t.last_sent_at_ms"},
    {kRowOpenCount, "t.open_sent_count"},
    {kRowOpenCoins, "t.open_sent_coins"},
    {kRowOpenReceivers, "t.open_receiver_count"},
    {kRowOpenFirst, "t.open_first_sent_at_ms"},
    {kRowOpenLast, "t.open_last_sent_at_ms"},
    {kRowAnonymous, "t.anonymous"},
};
static_assert(InPositionOrder(kSentColumns));

// Sums of sender rows, in kSentColumns' order: of the all-time sender rows (as period '', '') or
// of the period ones, along their by-sender index, grouped in its order. An all-time row's open
// part sums the sender rows that are not anonymous (its times 0 when there are none); a period's
// is not kept (domain::SentRow). SUM of BIGINT is DECIMAL: cast back, so that a sum past int64
// fails the statement rather than read wrong.
constexpr absl::string_view kOpenSums = R"sql(
       CAST(SUM(IF(s.anonymous = 0, s.sent_count, 0)) AS SIGNED),
       CAST(SUM(IF(s.anonymous = 0, s.sent_coins, 0)) AS SIGNED), SUM(s.anonymous = 0),
       COALESCE(MIN(IF(s.anonymous = 0, s.first_sent_at_ms, NULL)), 0),
       COALESCE(MAX(IF(s.anonymous = 0, s.last_sent_at_ms, NULL)), 0),)sql";
std::string SumSql(bool period, absl::string_view where) {
  return absl::StrCat(
      "SELECT s.sender_user_id, ", period ? "s.period_kind, s.period_key" : "'', ''", R"sql(,
       s.gift_id, CAST(SUM(s.sent_count) AS SIGNED), CAST(SUM(s.sent_coins) AS SIGNED),
       COUNT(*), MIN(s.first_sent_at_ms), MAX(s.last_sent_at_ms),)sql",
      period ? " 0, 0, 0, 0, 0," : kOpenSums, R"sql( MAX(s.anonymous)
FROM )sql",
      period ? "user_gift_wall_period_sender s FORCE INDEX "
               "(idx_user_gift_wall_period_sender_by_sender)"
             : "user_gift_wall_sender s FORCE INDEX (idx_user_gift_wall_sender_by_sender)",
      "\nWHERE s.app_code = ? AND ", where, "\nGROUP BY s.sender_user_id, ",
      period ? "s.period_kind, s.period_key, " : "", "s.gift_id");
}

// Of the senders in (lo, hi].
const std::string& SumRangeSql(bool period) {
  static const auto* const sql =
      new std::string[2]{SumSql(false, "s.sender_user_id > ? AND s.sender_user_id <= ?"),
                         SumSql(true, "s.sender_user_id > ? AND s.sender_user_id <= ?")};
  return sql[period ? 1 : 0];
}

// Of one sent row's key (the period one's parameters also name the period).
const std::string& SumOneSql(bool period) {
  static const auto* const sql = new std::string[2]{
      SumSql(false, "s.sender_user_id = ? AND s.gift_id = ?"),
      SumSql(true,
             "s.sender_user_id = ? AND s.period_kind = ? AND s.period_key = ? AND s.gift_id = ?")};
  return sql[period ? 1 : 0];
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
      new std::string(absl::StrCat(InsertSentRowSql(), R"sql(
VALUES (?, ?, ?, ?, ?, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, )sql",
                                   GIFTWALL_DB_NOW_MS, ", ", GIFTWALL_DB_NOW_MS, R"sql()
ON DUPLICATE KEY UPDATE sent_count = sent_count)sql"));
  return *sql;
}

constexpr absl::string_view kRowKeyWhere = R"sql(
WHERE app_code = ? AND sender_user_id = ? AND period_kind = ? AND period_key = ?
  AND gift_id = ?)sql";

// Sets a whole row, or (SetOpenSql) its open part, to a sum.
const std::string& SetRowSql() {
  static const auto* const sql = new std::string(absl::StrCat(R"sql(
UPDATE user_gift_sent
SET sent_count = ?, sent_coins = ?, receiver_count = ?, first_sent_at_ms = ?,
    last_sent_at_ms = ?, open_sent_count = ?, open_sent_coins = ?, open_receiver_count = ?,
    open_first_sent_at_ms = ?, open_last_sent_at_ms = ?, anonymous = ?, updated_at_ms = )sql",
                                                              GIFTWALL_DB_NOW_MS, kRowKeyWhere));
  return *sql;
}
const std::string& SetOpenSql() {
  static const auto* const sql = new std::string(absl::StrCat(R"sql(
UPDATE user_gift_sent
SET open_sent_count = ?, open_sent_coins = ?, open_receiver_count = ?,
    open_first_sent_at_ms = ?, open_last_sent_at_ms = ?, updated_at_ms = )sql",
                                                              GIFTWALL_DB_NOW_MS, kRowKeyWhere));
  return *sql;
}

constexpr absl::string_view kDeleteRowSql = R"sql(
DELETE FROM user_gift_sent
WHERE app_code = ? AND sender_user_id = ? AND period_kind = ? AND period_key = ? AND gift_id = ?)sql";

constexpr absl::string_view kOneSender =
    "\nWHERE t.app_code = ? AND t.sender_user_id = ? AND t.period_kind = ? AND t.period_key = ?";

// Pages of a sender's sent gifts of one period (or all-time), in gift_id order (the primary
// key's).
std::string SentGiftsSql(bool after_cursor, bool shown_only) {
  return absl::StrCat("SELECT ", SelectList(kSentColumns), "\nFROM user_gift_sent t", kOneSender,
                      after_cursor ? " AND t.gift_id > ?" : "",
                      shown_only ? " AND t.open_sent_count > 0" : "", R"sql(
ORDER BY t.gift_id
LIMIT ?)sql");
}

enum ReceiverColumn { kReceiver, kRecvCount, kRecvCoins, kRecvFirst, kRecvLast, kRecvAnonymous };
constexpr ResultColumn kReceiverColumns[] = {
    {kReceiver, "s.user_id"},         {kRecvCount, "s.sent_count"},
    {kRecvCoins, "s.sent_coins"},     {kRecvFirst, "s.first_sent_at_ms"},
    {kRecvLast, "s.last_sent_at_ms"}, {kRecvAnonymous, "s.anonymous"},
};
static_assert(InPositionOrder(kReceiverColumns));

// A period's sender rows whose walls show their sender: those whose all-time sender row is not
// anonymous (§2.18), one primary-key lookup each.
constexpr absl::string_view kShownOnTheirWall = R"sql(
STRAIGHT_JOIN user_gift_wall_sender a
  ON a.app_code = s.app_code AND a.user_id = s.user_id AND a.gift_id = s.gift_id
     AND a.sender_user_id = s.sender_user_id AND a.anonymous = 0)sql";

// The receivers of one sent gift: a range of a by-sender index; with `open_only`, those whose
// walls show the sender.
std::string SentReceiversSql(bool period, bool after_cursor, bool open_only) {
  return absl::StrCat(
      "SELECT ", SelectList(kReceiverColumns), "\nFROM ",
      period ? "user_gift_wall_period_sender s FORCE INDEX "
               "(idx_user_gift_wall_period_sender_by_sender)"
             : "user_gift_wall_sender s FORCE INDEX (idx_user_gift_wall_sender_by_sender)",
      period && open_only ? kShownOnTheirWall : "",
      "\nWHERE s.app_code = ? AND s.sender_user_id = ?",
      period ? " AND s.period_kind = ? AND s.period_key = ?" : "", " AND s.gift_id = ?",
      after_cursor ? " AND s.user_id > ?" : "", !period && open_only ? " AND s.anonymous = 0" : "",
      R"sql(
ORDER BY s.user_id
LIMIT ?)sql");
}

// A page of the open parts of a sender's gifts in one period, summed from the period's sender
// rows whose walls show the sender, in gift_id order (the by-sender index's), in kSentColumns'
// order (all of each gift is not read: 0).
std::string OpenSentSql(bool after_cursor) {
  return absl::StrCat(R"sql(
SELECT s.sender_user_id, s.period_kind, s.period_key, s.gift_id, 0, 0, 0, 0, 0,
       CAST(SUM(s.sent_count) AS SIGNED), CAST(SUM(s.sent_coins) AS SIGNED), COUNT(*),
       MIN(s.first_sent_at_ms), MAX(s.last_sent_at_ms), 0
FROM user_gift_wall_period_sender s FORCE INDEX (idx_user_gift_wall_period_sender_by_sender))sql",
                      kShownOnTheirWall, R"sql(
WHERE s.app_code = ? AND s.sender_user_id = ? AND s.period_kind = ? AND s.period_key = ?)sql",
                      after_cursor ? " AND s.gift_id > ?" : "", R"sql(
GROUP BY s.gift_id
ORDER BY s.gift_id
LIMIT ?)sql");
}

SentTotals TotalsOf(const SqlRow& row, int first) {
  return SentTotals{row.Int(first), row.Int(first + 1), row.Int(first + 2), row.Int(first + 3),
                    row.Int(first + 4)};
}

absl::Status ReadRows(SqlConnection& conn, absl::string_view sql, absl::Span<const SqlParam> params,
                      SentWall& rows) {
  return conn.Query(sql, params, [&](const SqlRow& row) {
    rows.emplace(
        SentKey{row.Int(kRowSender), row.Str(kRowGift), Join(row.Str(kRowKind), row.Str(kRowKey))},
        SentRow{TotalsOf(row, kRowCount), TotalsOf(row, kRowOpenCount),
                row.Int(kRowAnonymous) != 0});
  });
}

// The parameters naming one sent row (kRowKeyWhere), and those of its sum (SumOneSql).
std::vector<SqlParam> RowKey(absl::string_view app_code, const SentKey& key,
                             const KindAndKey& period) {
  return {app_code, key.sender_user_id, period.kind, period.key, key.gift_id};
}
std::vector<SqlParam> SumKey(absl::string_view app_code, const SentKey& key,
                             const KindAndKey& period) {
  if (key.period.empty()) return {app_code, key.sender_user_id, key.gift_id};
  return {app_code, key.sender_user_id, period.kind, period.key, key.gift_id};
}

void AddTotals(const SentTotals& t, std::vector<SqlParam>& params) {
  for (int64_t v :
       {t.sent_count, t.sent_coins, t.receiver_count, t.first_sent_at_ms, t.last_sent_at_ms}) {
    params.emplace_back(v);
  }
}

}  // namespace

absl::string_view OpenSentQuery(bool after_cursor) {
  static const auto* const sql = new std::string[2]{OpenSentSql(false), OpenSentSql(true)};
  return sql[after_cursor ? 1 : 0];
}

absl::string_view SentGiftsQuery(bool after_cursor, bool shown_only) {
  static const auto* const sql =
      new std::string[4]{SentGiftsSql(false, false), SentGiftsSql(false, true),
                         SentGiftsSql(true, false), SentGiftsSql(true, true)};
  return sql[(after_cursor ? 2 : 0) + (shown_only ? 1 : 0)];
}

absl::string_view SentReceiversQuery(bool period, bool after_cursor, bool open_only) {
  static const auto* const sql = [] {
    auto* all = new std::string[8];
    for (int i = 0; i < 8; ++i) all[i] = SentReceiversSql(i & 4, i & 2, i & 1);
    return all;
  }();
  return sql[(period ? 4 : 0) + (after_cursor ? 2 : 0) + (open_only ? 1 : 0)];
}

absl::Status SentStatements::Merge(absl::string_view app_code, const domain::SentDeltas& deltas) {
  if (!deltas.rows.empty()) {
    RowSet rows(kSentDeltaColumns);
    for (const auto& [key, d] : deltas.rows) {
      const KindAndKey period = Split(key.period);
      rows.Row()
          .Int(kSender, key.sender_user_id)
          .Text(kKind, period.kind)
          .Text(kKey, period.key)
          .Bytes(kGift, key.gift_id)
          .Int(kCount, d.all.sent_count)
          .Int(kCoins, d.all.sent_coins)
          .Int(kReceivers, d.all.receiver_count)
          .Int(kFirst, d.all.first_sent_at_ms)
          .Int(kLast, d.all.last_sent_at_ms)
          .Int(kOpenCount, d.open.sent_count)
          .Int(kOpenCoins, d.open.sent_coins)
          .Int(kOpenReceivers, d.open.receiver_count)
          .Int(kOpenFirst, d.open.first_sent_at_ms)
          .Int(kOpenLast, d.open.last_sent_at_ms)
          .Int(kAnonymous, d.anonymous ? 1 : 0);
    }
    RETURN_IF_ERROR(conn_.Execute(MergeSql(), {app_code, &rows}).status());
  }
  // The rows are locked by the merge: the sums see every sender row committed before, and the
  // transactions that merge one after this one add their part to the sum this one writes.
  for (const SentKey& key : deltas.recount_open) {
    const KindAndKey period = Split(key.period);
    SentWall sum;
    RETURN_IF_ERROR(
        ReadRows(conn_, SumOneSql(!key.period.empty()), SumKey(app_code, key, period), sum));
    std::vector<SqlParam> set;
    AddTotals(sum.empty() ? SentTotals{} : sum.begin()->second.open, set);
    const std::vector<SqlParam> row_key = RowKey(app_code, key, period);
    set.insert(set.end(), row_key.begin(), row_key.end());
    RETURN_IF_ERROR(conn_.Execute(SetOpenSql(), set).status());
  }
  return absl::OkStatus();
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
  SentWall sums;
  for (bool period : {false, true}) {
    RETURN_IF_ERROR(ReadRows(conn_, SumRangeSql(period), {app_code, lo, hi}, sums));
  }
  return sums;
}

absl::StatusOr<SentWall> SentStatements::SentRows(absl::string_view app_code, int64_t lo,
                                                  int64_t hi) {
  SentWall rows;
  RETURN_IF_ERROR(ReadRows(conn_, SentRangeSql(), {app_code, lo, hi}, rows));
  return rows;
}

absl::Status SentStatements::Recompute(absl::string_view app_code, absl::Span<const SentKey> keys) {
  for (const SentKey& key : keys) {
    const KindAndKey period = Split(key.period);
    const std::vector<SqlParam> row_key = RowKey(app_code, key, period);
    RETURN_IF_ERROR(conn_.Execute(LockRowSql(), row_key).status());
    SentWall sum;
    RETURN_IF_ERROR(
        ReadRows(conn_, SumOneSql(!key.period.empty()), SumKey(app_code, key, period), sum));
    if (sum.empty()) {
      RETURN_IF_ERROR(conn_.Execute(kDeleteRowSql, row_key).status());
      continue;
    }
    const SentRow& row = sum.begin()->second;
    std::vector<SqlParam> set;
    AddTotals(row.all, set);
    AddTotals(row.open, set);
    set.emplace_back(int64_t{row.anonymous});
    set.insert(set.end(), row_key.begin(), row_key.end());
    RETURN_IF_ERROR(conn_.Execute(SetRowSql(), set).status());
  }
  return absl::OkStatus();
}

absl::StatusOr<SentPage> SentWallRepository::ListSent(absl::string_view app_code,
                                                      int64_t sender_user_id,
                                                      absl::string_view period,
                                                      const std::optional<std::string>& after_gift,
                                                      bool shown_only, int limit) {
  return ReadPage(SentGiftsQuery(after_gift.has_value(), shown_only), app_code, sender_user_id,
                  period, after_gift, limit);
}

absl::StatusOr<SentPage> SentWallRepository::ListOpenSent(
    absl::string_view app_code, int64_t sender_user_id, absl::string_view period,
    const std::optional<std::string>& after_gift, int limit) {
  return ReadPage(OpenSentQuery(after_gift.has_value()), app_code, sender_user_id, period,
                  after_gift, limit);
}

absl::StatusOr<SentPage> SentWallRepository::ReadPage(
    absl::string_view sql, absl::string_view app_code, int64_t sender_user_id,
    absl::string_view period, const std::optional<std::string>& after_gift, int limit) {
  const KindAndKey of = Split(period);
  std::vector<SqlParam> params = {app_code, sender_user_id, of.kind, of.key};
  if (after_gift.has_value()) params.emplace_back(*after_gift);
  params.emplace_back(RowsToFetch(limit));
  ASSIGN_OR_RETURN(PooledConnection conn, pool_.Acquire());
  SentWall rows;
  RETURN_IF_ERROR(ReadRows(*conn, sql, params, rows));
  SentPage page;
  for (auto& [key, row] : rows) page.gifts.push_back(SentGift{key.gift_id, row});
  page.has_more = TrimToPage(&page.gifts, limit);
  return page;
}

absl::StatusOr<ReceiverPage> SentWallRepository::ListReceivers(
    absl::string_view app_code, int64_t sender_user_id, absl::string_view period,
    absl::string_view gift_id, std::optional<int64_t> after_receiver, bool open_only, int limit) {
  const KindAndKey of = Split(period);
  std::vector<SqlParam> params = {app_code, sender_user_id};
  if (!period.empty()) {
    params.emplace_back(of.kind);
    params.emplace_back(of.key);
  }
  params.emplace_back(gift_id);
  if (after_receiver.has_value()) params.emplace_back(*after_receiver);
  params.emplace_back(RowsToFetch(limit));
  ASSIGN_OR_RETURN(PooledConnection conn, pool_.Acquire());
  ReceiverPage page;
  RETURN_IF_ERROR(conn->Query(
      SentReceiversQuery(!period.empty(), after_receiver.has_value(), open_only), params,
      [&](const SqlRow& row) {
        page.receivers.push_back(SentReceiver{
            row.Int(kReceiver),
            domain::SenderRow{row.Int(kRecvCount), row.Int(kRecvCoins), row.Int(kRecvFirst),
                              row.Int(kRecvLast), row.Int(kRecvAnonymous) != 0}});
      }));
  page.has_more = TrimToPage(&page.receivers, limit);
  return page;
}

}  // namespace giftwall::storage
