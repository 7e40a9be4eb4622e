#include "server/storage/wall_repository.h"

#include "server/common/status_macros.h"
#include "server/storage/json_rows.h"
#include "server/storage/paging.h"

namespace giftwall::storage {
namespace {

// Whole walls: a primary-key range per user ([[user_id], ...] as JSON), in one snapshot.
constexpr absl::string_view kWalls = R"sql(
SELECT w.user_id, w.gift_id, w.gift_count, w.total_coins, w.first_received_at_ms,
       w.last_received_at_ms, w.gift_name, w.gift_icon, w.sender_count, w.top_sender_user_id,
       w.top_sender_count, w.top_sender_coins, w.top_sender_first_sent_at_ms,
       w.top_sender_last_sent_at_ms, w.first_sender_user_id
FROM JSON_TABLE(?, '$[*]' COLUMNS (j_user BIGINT PATH '$[0]')) AS jt
STRAIGHT_JOIN user_gift_wall w ON w.app_code = ? AND w.user_id = jt.j_user)sql";

// A row of kWalls, from its second column on.
domain::WallItem ReadWallItem(const SqlRow& row) {
  domain::WallItem item;
  item.gift_id = row.Str(1);
  item.gift_count = row.Int(2);
  item.total_coins = row.Int(3);
  item.first_received_at_ms = row.Int(4);
  item.last_received_at_ms = row.Int(5);
  item.gift_name = row.Str(6);
  item.gift_icon = row.Str(7);
  item.sender_count = row.Int(8);
  if (const int64_t top = row.Int(9); top != 0) {
    item.top_sender = domain::SenderStats{top, row.Int(10), row.Int(11), row.Int(12), row.Int(13)};
  }
  item.first_sender_user_id = row.Int(14);
  return item;
}

// The top-sender order, read from idx_user_gift_wall_sender_rank.
constexpr absl::string_view kSendersFirstPage = R"sql(
SELECT sender_user_id, sent_count, sent_coins, first_sent_at_ms, last_sent_at_ms
FROM user_gift_wall_sender FORCE INDEX (idx_user_gift_wall_sender_rank)
WHERE app_code = ? AND user_id = ? AND gift_id = ?
ORDER BY sent_count DESC, last_sent_at_ms ASC, sender_user_id ASC
LIMIT ?)sql";

constexpr absl::string_view kSendersNextPage = R"sql(
SELECT sender_user_id, sent_count, sent_coins, first_sent_at_ms, last_sent_at_ms
FROM user_gift_wall_sender FORCE INDEX (idx_user_gift_wall_sender_rank)
WHERE app_code = ? AND user_id = ? AND gift_id = ?
  AND (sent_count < ? OR (sent_count = ? AND (last_sent_at_ms > ?
       OR (last_sent_at_ms = ? AND sender_user_id > ?))))
ORDER BY sent_count DESC, last_sent_at_ms ASC, sender_user_id ASC
LIMIT ?)sql";

}  // namespace

absl::string_view SendersQuery(bool after) { return after ? kSendersNextPage : kSendersFirstPage; }

absl::string_view WallQuery() { return kWalls; }

absl::StatusOr<std::map<int64_t, std::vector<domain::WallItem>>> WallRepository::ReadWalls(
    absl::string_view app_code, absl::Span<const int64_t> user_ids) {
  std::map<int64_t, std::vector<domain::WallItem>> walls;
  if (user_ids.empty()) return walls;
  JsonRows users;
  for (int64_t user : user_ids) users.Row().Int(user);
  ASSIGN_OR_RETURN(PooledConnection conn, pool_.Acquire());
  absl::Status s = conn->Query(kWalls, {users.Finish(), app_code}, [&](const SqlRow& row) {
    walls[row.Int(0)].push_back(ReadWallItem(row));
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
    page.senders.push_back(
        domain::SenderStats{row.Int(0), row.Int(1), row.Int(2), row.Int(3), row.Int(4)});
  };
  const int64_t fetch = RowsToFetch(limit);
  absl::Status s =
      after.has_value()
          ? conn->Query(
                kSendersNextPage,
                {app_code, user_id, gift_id, after->sent_count, after->sent_count,
                 after->last_sent_at_ms, after->last_sent_at_ms, after->sender_user_id, fetch},
                on_row)
          : conn->Query(kSendersFirstPage, {app_code, user_id, gift_id, fetch}, on_row);
  if (!s.ok()) return s;
  page.has_more = TrimToPage(&page.senders, limit);
  return page;
}

}  // namespace giftwall::storage
