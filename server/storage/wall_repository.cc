#include "server/storage/wall_repository.h"

#include <tuple>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "server/common/status_macros.h"
#include "server/domain/sponsor.h"
#include "server/storage/app_settings_store.h"
#include "server/storage/columns.h"
#include "server/storage/paging.h"
#include "server/storage/row_set.h"

namespace giftwall::storage {
namespace {

// A gift of a wall, as readers see it.
enum WallItemColumn {
  kUserId,
  kGiftId,
  kGiftCount,
  kTotalCoins,
  kFirstReceived,
  kLastReceived,
  kName,
  kIcon,
  kSenderCount,
  kTopUser,
  kTopCount,
  kTopCoins,
  kTopFirst,
  kTopLast,
  kFirstSender,
};
constexpr ResultColumn kWallItemColumns[] = {
    {kUserId, "w.user_id"},
    {kGiftId, "w.gift_id"},
    {kGiftCount, "w.gift_count"},
    {kTotalCoins, "w.total_coins"},
    {kFirstReceived, "w.first_received_at_ms"},
    {kLastReceived, "w.last_received_at_ms"},
    {kName, "w.gift_name"},
    {kIcon, "w.gift_icon"},
    {kSenderCount, "w.sender_count"},
    {kTopUser, "w.top_sender_user_id"},
    {kTopCount, "w.top_sender_count"},
    {kTopCoins, "w.top_sender_coins"},
    {kTopFirst, "w.top_sender_first_sent_at_ms"},
    {kTopLast, "w.top_sender_last_sent_at_ms"},
    {kFirstSender, "w.first_sender_user_id"},
};
static_assert(InPositionOrder(kWallItemColumns));

// An anonymous sender of a gift of a wall: its all-time sender row, whatever period is read (the
// safe side).
enum AnonymousSenderColumn { kAnonymousUser, kAnonymousGift, kAnonymousSender };
constexpr ResultColumn kAnonymousSenderColumns[] = {
    {kAnonymousUser, "s.user_id"},
    {kAnonymousGift, "s.gift_id"},
    {kAnonymousSender, "s.sender_user_id"},
};
static_assert(InPositionOrder(kAnonymousSenderColumns));

constexpr RowColumn kUserColumns[] = {{0, "j_user", "BIGINT"}};

// Whole walls: a primary-key range per user; of one period, with `period`.
std::string WallsSql(bool period) {
  return absl::StrCat("SELECT ", SelectList(kWallItemColumns), "\nFROM ", kRowsTable,
                      "\nSTRAIGHT_JOIN ", period ? "user_gift_wall_period" : "user_gift_wall",
                      " w ON w.app_code = ? AND w.user_id = jt.j_user",
                      period ? " AND w.period_kind = ? AND w.period_key = ?" : "");
}

const RowsSql& WallsSqlOf(bool period) {
  static const auto* const sqls =
      new RowsSql[2]{{kUserColumns, WallsSql(false)}, {kUserColumns, WallsSql(true)}};
  return sqls[period ? 1 : 0];
}

// The walls' anonymous senders: a range of idx_user_gift_wall_sender_anonymous per user, empty
// unless someone sent that wall a gift anonymously, read from the index alone.
const RowsSql& AnonymousSendersSql() {
  static const auto* const sql = new RowsSql(
      kUserColumns,
      absl::StrCat("SELECT ", SelectList(kAnonymousSenderColumns), "\nFROM ", kRowsTable, R"sql(
STRAIGHT_JOIN user_gift_wall_sender s FORCE INDEX (idx_user_gift_wall_sender_anonymous)
  ON s.app_code = ? AND s.user_id = jt.j_user AND s.anonymous = 1)sql"));
  return *sql;
}

domain::WallItem ReadWallItem(const SqlRow& row) {
  domain::WallItem item;
  item.gift_id = row.Str(kGiftId);
  item.gift_count = row.Int(kGiftCount);
  item.total_coins = row.Int(kTotalCoins);
  item.first_received_at_ms = row.Int(kFirstReceived);
  item.last_received_at_ms = row.Int(kLastReceived);
  item.gift_name = row.Str(kName);
  item.gift_icon = row.Str(kIcon);
  item.sender_count = row.Int(kSenderCount);
  if (const int64_t top = row.Int(kTopUser); top != 0) {
    item.top_sender = domain::SenderStats{top, row.Int(kTopCount), row.Int(kTopCoins),
                                          row.Int(kTopFirst), row.Int(kTopLast)};
  }
  item.first_sender_user_id = row.Int(kFirstSender);
  return item;
}

// What one sender gave of a gift, in the top-sender order, read from
// idx_user_gift_wall_sender_rank.
enum SenderStatsColumn { kSender, kSentCount, kSentCoins, kFirstSent, kLastSent };
constexpr ResultColumn kSenderStatsColumns[] = {
    {kSender, "sender_user_id"},      {kSentCount, "sent_count"},     {kSentCoins, "sent_coins"},
    {kFirstSent, "first_sent_at_ms"}, {kLastSent, "last_sent_at_ms"},
};
static_assert(InPositionOrder(kSenderStatsColumns));

std::string SendersSql(bool period, absl::string_view after) {
  return absl::StrCat(
      "SELECT ", SelectList(kSenderStatsColumns), "\nFROM ",
      period ? "user_gift_wall_period_sender FORCE INDEX (idx_user_gift_wall_period_sender_rank)"
             : "user_gift_wall_sender FORCE INDEX (idx_user_gift_wall_sender_rank)",
      "\nWHERE app_code = ? AND user_id = ?",
      period ? " AND period_kind = ? AND period_key = ?" : "", " AND gift_id = ?", after, R"sql(
ORDER BY sent_count DESC, last_sent_at_ms ASC, sender_user_id ASC
LIMIT ?)sql",
      after.empty() ? "" : " OFFSET ?");
}

// From the senders of the cursor's (sent_count, last_sent_at_ms) on: the query skips the cursor's
// tied_shown of them (OFFSET).
constexpr absl::string_view kAfterSender = R"sql(
  AND (sent_count < ? OR (sent_count = ? AND last_sent_at_ms >= ?)))sql";

// [period][after a cursor]
const std::string& SendersSqlOf(bool period, bool after) {
  static const auto* const sqls =
      new std::string[4]{SendersSql(false, ""), SendersSql(false, kAfterSender),
                         SendersSql(true, ""), SendersSql(true, kAfterSender)};
  return sqls[(period ? 2 : 0) + (after ? 1 : 0)];
}

// The key parameters of a wall: app code and user, and the period's kind and key.
std::vector<SqlParam> WallKeyParams(absl::string_view app_code, int64_t user_id,
                                    const std::optional<domain::Period>& period) {
  std::vector<SqlParam> params = {app_code, user_id};
  if (period.has_value()) {
    params.emplace_back(domain::PeriodKindName(period->kind));
    params.emplace_back(period->key);
  }
  return params;
}

// A past period's 冠名 of a gift, and how many of the queried periods they won it: a window
// over the user's rows of the queried periods, which the page is then cut from.
enum SponsorColumn {
  kSponsorPeriodKey,
  kSponsorGiftId,
  kSponsorUser,
  kSponsorCount,
  kSponsorCoins,
  kSponsorFirst,
  kSponsorLast,
  kSponsorWon,
};
constexpr ResultColumn kSponsorColumns[] = {
    {kSponsorPeriodKey, "period_key"},
    {kSponsorGiftId, "gift_id"},
    {kSponsorUser, "top_sender_user_id"},
    {kSponsorCount, "top_sender_count"},
    {kSponsorCoins, "top_sender_coins"},
    {kSponsorFirst, "top_sender_first_sent_at_ms"},
    {kSponsorLast, "top_sender_last_sent_at_ms"},
    {kSponsorWon, "periods_won"},
};
static_assert(InPositionOrder(kSponsorColumns));

std::string SponsorHistorySql(bool one_gift, bool after) {
  return absl::StrCat("SELECT ", SelectList(kSponsorColumns), R"sql(
FROM (
  SELECT period_key, gift_id, top_sender_user_id, top_sender_count, top_sender_coins,
         top_sender_first_sent_at_ms, top_sender_last_sent_at_ms,
         COUNT(*) OVER (PARTITION BY gift_id, top_sender_user_id) AS periods_won
  FROM user_gift_wall_period
  WHERE app_code = ? AND user_id = ? AND period_kind = ? AND period_key >= ? AND period_key < ?
    AND top_sender_user_id <> 0)sql",
                      one_gift ? " AND gift_id = ?" : "", "\n) h",
                      after ? "\nWHERE period_key < ? OR (period_key = ? AND gift_id > ?)" : "",
                      R"sql(
ORDER BY period_key DESC, gift_id ASC
LIMIT ?)sql");
}

// [one gift][after a cursor]
const std::string& SponsorHistorySqlOf(bool one_gift, bool after) {
  static const auto* const sqls =
      new std::string[4]{SponsorHistorySql(false, false), SponsorHistorySql(false, true),
                         SponsorHistorySql(true, false), SponsorHistorySql(true, true)};
  return sqls[(one_gift ? 2 : 0) + (after ? 1 : 0)];
}

// A gift's 冠名 (kind 0) and one sender's row (kind 1), each a primary-key read.
enum StandingColumn {
  kStandingKind,
  kStandingUser,
  kStandingCount,
  kStandingCoins,
  kStandingFirst,
  kStandingLast
};

std::string StandingSql(bool period) {
  const absl::string_view key =
      period ? "app_code = ? AND user_id = ? AND period_kind = ? AND period_key = ? AND gift_id = ?"
             : "app_code = ? AND user_id = ? AND gift_id = ?";
  return absl::StrCat(
      "SELECT 0, top_sender_user_id, top_sender_count, top_sender_coins, "
      "top_sender_first_sent_at_ms, top_sender_last_sent_at_ms\nFROM ",
      period ? "user_gift_wall_period" : "user_gift_wall", "\nWHERE ", key,
      "\nUNION ALL\nSELECT 1, sender_user_id, sent_count, sent_coins, first_sent_at_ms, "
      "last_sent_at_ms\nFROM ",
      period ? "user_gift_wall_period_sender" : "user_gift_wall_sender", "\nWHERE ", key,
      " AND sender_user_id = ?");
}

const std::string& StandingSqlOf(bool period) {
  static const auto* const sqls = new std::string[2]{StandingSql(false), StandingSql(true)};
  return sqls[period ? 1 : 0];
}

// The senders above one in the top-sender order, up to the exact-rank limit.
std::string SendersAheadSql(bool period) {
  return absl::StrCat(
      "SELECT COUNT(*) FROM (SELECT 1 FROM ",
      period ? "user_gift_wall_period_sender FORCE INDEX (idx_user_gift_wall_period_sender_rank)"
             : "user_gift_wall_sender FORCE INDEX (idx_user_gift_wall_sender_rank)",
      "\nWHERE app_code = ? AND user_id = ?",
      period ? " AND period_kind = ? AND period_key = ?" : "", R"sql( AND gift_id = ?
  AND (sent_count > ? OR (sent_count = ? AND (last_sent_at_ms < ?
       OR (last_sent_at_ms = ? AND sender_user_id < ?))))
LIMIT )sql",
      domain::kExactRankLimit, ") ahead");
}

const std::string& SendersAheadSqlOf(bool period) {
  static const auto* const sqls = new std::string[2]{SendersAheadSql(false), SendersAheadSql(true)};
  return sqls[period ? 1 : 0];
}

// Which shown senders hid: the ones whose all-time sender row of the gift is anonymous, or who
// opted out. A primary-key read of each table per sender asked about.
enum ShownSenderColumn { kShownIndex, kShownGift, kShownSender };
constexpr RowColumn kShownSenderColumns[] = {
    {kShownIndex, "j_i", "BIGINT"},
    {kShownGift, "j_gift", kHexGift},
    {kShownSender, "j_sender", "BIGINT"},
};
static_assert(InPositionOrder(kShownSenderColumns));

const RowsSql& HiddenSendersSql() {
  static const auto* const sql =
      new RowsSql(kShownSenderColumns, absl::StrCat("SELECT jt.j_i\nFROM ", kRowsTable, R"sql(
LEFT JOIN user_gift_wall_sender s
  ON s.app_code = ? AND s.user_id = ? AND s.gift_id = UNHEX(jt.j_gift)
     AND s.sender_user_id = jt.j_sender
LEFT JOIN giftwall_sender_privacy p ON p.app_code = ? AND p.sender_user_id = jt.j_sender
WHERE s.anonymous = 1 OR p.hidden = 1)sql"));
  return *sql;
}

}  // namespace

const RowsSql& HiddenSendersQuery() { return HiddenSendersSql(); }

absl::string_view SponsorHistoryQuerySql(bool one_gift, bool after) {
  return SponsorHistorySqlOf(one_gift, after);
}

absl::string_view SendersAheadQuery(bool period) { return SendersAheadSqlOf(period); }

absl::string_view SendersQuery(bool period, bool after) { return SendersSqlOf(period, after); }

const RowsSql& WallQuery(bool period) { return WallsSqlOf(period); }

const RowsSql& AnonymousSendersQuery() { return AnonymousSendersSql(); }

absl::StatusOr<std::map<int64_t, std::vector<domain::WallItem>>> WallRepository::ReadWalls(
    absl::string_view app_code, const std::optional<domain::Period>& period,
    absl::Span<const int64_t> user_ids) {
  std::map<int64_t, std::vector<domain::WallItem>> walls;
  if (user_ids.empty()) return walls;
  RowSet users(kUserColumns);
  for (int64_t user : user_ids) users.Row().Int(0, user);
  std::vector<SqlParam> params = {&users, app_code};
  if (period.has_value()) {
    params.emplace_back(domain::PeriodKindName(period->kind));
    params.emplace_back(period->key);
  }
  ASSIGN_OR_RETURN(PooledConnection conn, pool_.Acquire());
  RETURN_IF_ERROR(conn->Query(WallsSqlOf(period.has_value()), params, [&](const SqlRow& row) {
    walls[row.Int(kUserId)].push_back(ReadWallItem(row));
  }));
  if (walls.empty()) return walls;
  // Who sent anonymously, in a statement of its own (beside the walls' rows in a UNION ALL,
  // MariaDB would copy every row of the walls into a temporary table first). A sender row's
  // anonymous flag is sticky, so a flag the walls' snapshot saw is here too: this read can only
  // mask more (a send that turned anonymous since), never less.
  RowSet nonempty(kUserColumns);
  for (const auto& [user, items] : walls) nonempty.Row().Int(0, user);
  absl::flat_hash_set<std::tuple<int64_t, std::string, int64_t>> anonymous;
  RETURN_IF_ERROR(conn->Query(AnonymousSendersSql(), {&nonempty, app_code}, [&](const SqlRow& row) {
    anonymous.emplace(row.Int(kAnonymousUser), row.Str(kAnonymousGift), row.Int(kAnonymousSender));
  }));
  if (anonymous.empty()) return walls;
  for (auto& [user, items] : walls) {
    domain::MarkHidden(items, [&, user = user](const std::string& gift, int64_t sender) {
      return anonymous.contains({user, gift, sender});
    });
  }
  return walls;
}

absl::StatusOr<SenderPage> WallRepository::ListSenders(absl::string_view app_code, int64_t user_id,
                                                       const std::optional<domain::Period>& period,
                                                       absl::string_view gift_id,
                                                       const std::optional<SenderCursor>& after,
                                                       int limit) {
  std::vector<SqlParam> params = WallKeyParams(app_code, user_id, period);
  params.emplace_back(gift_id);
  if (after.has_value()) {
    for (int64_t v : {after->sent_count, after->sent_count, after->last_sent_at_ms}) {
      params.emplace_back(v);
    }
  }
  params.emplace_back(RowsToFetch(limit));
  if (after.has_value()) params.emplace_back(after->tied_shown);
  ASSIGN_OR_RETURN(PooledConnection conn, pool_.Acquire());
  SenderPage page;
  absl::Status s = conn->Query(
      SendersSqlOf(period.has_value(), after.has_value()), params, [&](const SqlRow& row) {
        page.senders.push_back(domain::SenderStats{row.Int(kSender), row.Int(kSentCount),
                                                   row.Int(kSentCoins), row.Int(kFirstSent),
                                                   row.Int(kLastSent)});
      });
  if (!s.ok()) return s;
  page.has_more = TrimToPage(&page.senders, limit);
  return page;
}

absl::StatusOr<SponsorHistoryPage> WallRepository::ListSponsorHistory(
    absl::string_view app_code, int64_t user_id, const SponsorHistoryQuery& query) {
  std::vector<SqlParam> params = {app_code, user_id, domain::PeriodKindName(query.kind),
                                  query.oldest_key, query.current_key};
  if (query.gift_id.has_value()) params.emplace_back(*query.gift_id);
  if (query.after.has_value()) {
    params.emplace_back(query.after->first);
    params.emplace_back(query.after->first);
    params.emplace_back(query.after->second);
  }
  params.emplace_back(RowsToFetch(query.limit));
  ASSIGN_OR_RETURN(PooledConnection conn, pool_.Acquire());
  SponsorHistoryPage page;
  absl::Status s =
      conn->Query(SponsorHistorySqlOf(query.gift_id.has_value(), query.after.has_value()), params,
                  [&](const SqlRow& row) {
                    page.records.push_back(SponsorRecord{
                        row.Str(kSponsorPeriodKey), row.Str(kSponsorGiftId),
                        domain::SenderStats{row.Int(kSponsorUser), row.Int(kSponsorCount),
                                            row.Int(kSponsorCoins), row.Int(kSponsorFirst),
                                            row.Int(kSponsorLast)},
                        row.Int(kSponsorWon)});
                  });
  if (!s.ok()) return s;
  page.has_more = TrimToPage(&page.records, query.limit);
  return page;
}

absl::StatusOr<StandingRead> WallRepository::ReadStanding(
    absl::string_view app_code, int64_t user_id, const std::optional<domain::Period>& period,
    absl::string_view gift_id, int64_t sender_user_id) {
  std::vector<SqlParam> key = WallKeyParams(app_code, user_id, period);
  key.emplace_back(gift_id);
  std::vector<SqlParam> params = key;
  params.insert(params.end(), key.begin(), key.end());
  params.emplace_back(sender_user_id);
  ASSIGN_OR_RETURN(PooledConnection conn, pool_.Acquire());
  StandingRead read;
  absl::Status s = conn->Query(StandingSqlOf(period.has_value()), params, [&](const SqlRow& row) {
    const domain::SenderStats stats{row.Int(kStandingUser), row.Int(kStandingCount),
                                    row.Int(kStandingCoins), row.Int(kStandingFirst),
                                    row.Int(kStandingLast)};
    if (row.Int(kStandingKind) == 1) {
      read.sent = stats;
    } else if (stats.user_id != 0) {
      read.sponsor = stats;
    }
  });
  if (!s.ok()) return s;
  if (!read.sent.has_value() ||
      (read.sponsor.has_value() && read.sponsor->user_id == sender_user_id)) {
    return read;
  }
  params = key;
  for (int64_t v : {read.sent->sent_count, read.sent->sent_count, read.sent->last_sent_at_ms,
                    read.sent->last_sent_at_ms, sender_user_id}) {
    params.emplace_back(v);
  }
  s = conn->Query(SendersAheadSqlOf(period.has_value()), params,
                  [&](const SqlRow& row) { read.senders_ahead = row.Int(0); });
  if (!s.ok()) return s;
  return read;
}

absl::StatusOr<std::vector<bool>> WallRepository::HiddenSenders(
    absl::string_view app_code, int64_t user_id, absl::Span<const domain::ShownSender> senders) {
  std::vector<bool> hidden(senders.size(), false);
  if (senders.empty()) return hidden;
  RowSet shown(kShownSenderColumns);
  for (size_t i = 0; i < senders.size(); ++i) {
    shown.Row()
        .Int(kShownIndex, static_cast<int64_t>(i))
        .Bytes(kShownGift, senders[i].gift_id)
        .Int(kShownSender, senders[i].sender_user_id);
  }
  ASSIGN_OR_RETURN(PooledConnection conn, pool_.Acquire());
  absl::Status s = conn->Query(HiddenSendersSql(), {&shown, app_code, user_id, app_code},
                               [&](const SqlRow& row) {
                                 const int64_t i = row.Int(0);
                                 if (i >= 0 && static_cast<size_t>(i) < hidden.size()) {
                                   hidden[i] = true;
                                 }
                               });
  if (!s.ok()) return s;
  return hidden;
}

absl::StatusOr<AppSettingsSnapshot> WallRepository::ReadSettings(absl::string_view app_code) {
  ASSIGN_OR_RETURN(PooledConnection conn, pool_.Acquire());
  const std::string app(app_code);
  return ReadAppSettings(*conn, {app}, /*shared_lock=*/false);
}

}  // namespace giftwall::storage
