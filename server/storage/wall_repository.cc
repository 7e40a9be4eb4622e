#include "server/storage/wall_repository.h"

#include "server/storage/paging.h"

namespace giftwall::storage {
namespace {

// The whole wall: a primary-key range, one snapshot for the page and the summary.
constexpr absl::string_view kWall = R"sql(
SELECT gift_id, gift_count, total_coins, first_received_at_ms, last_received_at_ms, gift_name,
       gift_icon, sender_count, top_sender_user_id, top_sender_count, top_sender_coins,
       top_sender_first_sent_at_ms, top_sender_last_sent_at_ms, first_sender_user_id
FROM user_gift_wall WHERE app_code = ? AND user_id = ?)sql";

domain::WallItem ReadWallItem(const SqlRow& row) {
  domain::WallItem item;
  item.gift_id = row.Str(0);
  item.gift_count = row.Int(1);
  item.total_coins = row.Int(2);
  item.first_received_at_ms = row.Int(3);
  item.last_received_at_ms = row.Int(4);
  item.gift_name = row.Str(5);
  item.gift_icon = row.Str(6);
  item.sender_count = row.Int(7);
  if (const int64_t top = row.Int(8); top != 0) {
    item.top_sender = domain::SenderStats{top, row.Int(9), row.Int(10), row.Int(11), row.Int(12)};
  }
  item.first_sender_user_id = row.Int(13);
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

absl::string_view WallQuery() { return kWall; }

absl::StatusOr<std::vector<domain::WallItem>> WallRepository::ReadWall(absl::string_view app_code,
                                                                       int64_t user_id) {
  absl::StatusOr<PooledConnection> conn = pool_.Acquire();
  if (!conn.ok()) return conn.status();
  std::vector<domain::WallItem> wall;
  absl::Status s = (*conn)->Query(kWall, {app_code, user_id},
                                  [&](const SqlRow& row) { wall.push_back(ReadWallItem(row)); });
  if (!s.ok()) return s;
  return wall;
}

absl::StatusOr<SenderPage> WallRepository::ListSenders(absl::string_view app_code, int64_t user_id,
                                                       absl::string_view gift_id,
                                                       const std::optional<SenderCursor>& after,
                                                       int limit) {
  absl::StatusOr<PooledConnection> conn = pool_.Acquire();
  if (!conn.ok()) return conn.status();
  SenderPage page;
  auto on_row = [&](const SqlRow& row) {
    page.senders.push_back(
        domain::SenderStats{row.Int(0), row.Int(1), row.Int(2), row.Int(3), row.Int(4)});
  };
  const int64_t fetch = RowsToFetch(limit);
  absl::Status s =
      after.has_value()
          ? (*conn)->Query(
                kSendersNextPage,
                {app_code, user_id, gift_id, after->sent_count, after->sent_count,
                 after->last_sent_at_ms, after->last_sent_at_ms, after->sender_user_id, fetch},
                on_row)
          : (*conn)->Query(kSendersFirstPage, {app_code, user_id, gift_id, fetch}, on_row);
  if (!s.ok()) return s;
  page.has_more = TrimToPage(&page.senders, limit);
  return page;
}

}  // namespace giftwall::storage
