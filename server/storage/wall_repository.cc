#include "server/storage/wall_repository.h"

#include "absl/strings/str_cat.h"
#include "server/common/status_macros.h"
#include "server/storage/columns.h"
#include "server/storage/json_rows.h"
#include "server/storage/paging.h"

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

constexpr JsonColumn kUserColumns[] = {{0, "j_user", "BIGINT"}};

// Whole walls: a primary-key range per user, in one snapshot.
const std::string& WallsSql() {
  static const auto* const sql = new std::string(
      absl::StrCat("SELECT ", SelectList(kWallItemColumns), "\nFROM ", JsonTableSql(kUserColumns),
                   "\nSTRAIGHT_JOIN user_gift_wall w ON w.app_code = ? AND w.user_id = jt.j_user"));
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

std::string SendersSql(absl::string_view after) {
  return absl::StrCat("SELECT ", SelectList(kSenderStatsColumns), R"sql(
FROM user_gift_wall_sender FORCE INDEX (idx_user_gift_wall_sender_rank)
WHERE app_code = ? AND user_id = ? AND gift_id = ?)sql",
                      after, R"sql(
ORDER BY sent_count DESC, last_sent_at_ms ASC, sender_user_id ASC
LIMIT ?)sql");
}

const std::string& SendersFirstPageSql() {
  static const auto* const sql = new std::string(SendersSql(""));
  return *sql;
}

const std::string& SendersNextPageSql() {
  static const auto* const sql = new std::string(SendersSql(R"sql(
  AND (sent_count < ? OR (sent_count = ? AND (last_sent_at_ms > ?
       OR (last_sent_at_ms = ? AND sender_user_id > ?)))))sql"));
  return *sql;
}

}  // namespace

absl::string_view SendersQuery(bool after) {
  return after ? SendersNextPageSql() : SendersFirstPageSql();
}

absl::string_view WallQuery() { return WallsSql(); }

absl::StatusOr<std::map<int64_t, std::vector<domain::WallItem>>> WallRepository::ReadWalls(
    absl::string_view app_code, absl::Span<const int64_t> user_ids) {
  std::map<int64_t, std::vector<domain::WallItem>> walls;
  if (user_ids.empty()) return walls;
  JsonRows users(kUserColumns);
  for (int64_t user : user_ids) users.Row().Int(0, user);
  ASSIGN_OR_RETURN(PooledConnection conn, pool_.Acquire());
  absl::Status s = conn->Query(WallsSql(), {users.Finish(), app_code}, [&](const SqlRow& row) {
    walls[row.Int(kUserId)].push_back(ReadWallItem(row));
  });
  if (!s.ok()) return s;
  return walls;
}

absl::StatusOr<SenderPage> WallRepository::ListSenders(absl::string_view app_code, int64_t user_id,
                                                       absl::string_view gift_id,
                                                       const std::optional<SenderCursor>& after,
                                                       int limit) {
  ASSIGN_OR_RETURN(PooledConnection conn, pool_.Acquire());
  SenderPage page;
  auto on_row = [&](const SqlRow& row) {
    page.senders.push_back(domain::SenderStats{row.Int(kSender), row.Int(kSentCount),
                                               row.Int(kSentCoins), row.Int(kFirstSent),
                                               row.Int(kLastSent)});
  };
  const int64_t fetch = RowsToFetch(limit);
  absl::Status s =
      after.has_value()
          ? conn->Query(
                SendersNextPageSql(),
                {app_code, user_id, gift_id, after->sent_count, after->sent_count,
                 after->last_sent_at_ms, after->last_sent_at_ms, after->sender_user_id, fetch},
                on_row)
          : conn->Query(SendersFirstPageSql(), {app_code, user_id, gift_id, fetch}, on_row);
  if (!s.ok()) return s;
  page.has_more = TrimToPage(&page.senders, limit);
  return page;
}

}  // namespace giftwall::storage
