// What a reader sees of a wall: its gifts in one of four orders, a page at a time, and the summary
// of the whole wall. A wall is bounded by the cap (DESIGN §2.14, 1,000 gifts by default), so a
// page is cut from the whole wall, read in one statement: the page and the summary come from one
// snapshot, and the wall needs no index per order. A wall read for many readers at once is
// summarized and sorted once (WallSnapshot); each reader then copies only its page.
#ifndef GIFTWALL_SERVER_DOMAIN_WALL_PAGE_H_
#define GIFTWALL_SERVER_DOMAIN_WALL_PAGE_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "server/domain/page_token.h"

namespace giftwall::domain {

// What one sender gave of one gift to one wall.
struct SenderStats {
  int64_t user_id = 0;
  int64_t sent_count = 0;
  int64_t sent_coins = 0;
  int64_t first_sent_at_ms = 0;
  int64_t last_sent_at_ms = 0;
};

struct WallItem {
  std::string gift_id;
  int64_t gift_count = 0;
  int64_t total_coins = 0;
  int64_t first_received_at_ms = 0;
  int64_t last_received_at_ms = 0;
  std::string gift_name;  // empty if no event carried one
  std::string gift_icon;
  int64_t sender_count = 0;
  std::optional<SenderStats> top_sender;  // the 冠名; none while the gift has no sender
  int64_t first_sender_user_id = 0;       // 0 while the gift has no sender
};

struct WallSummary {
  int64_t distinct_gifts = 0;
  int64_t total_gift_count = 0;  // saturates at the int64 maximum
  int64_t total_coins = 0;       // saturates at the int64 maximum
  int64_t last_received_at_ms = 0;
};

// Where a page starts: strictly after the gift with this sort value and gift_id.
struct WallCursor {
  int64_t sort_value = 0;
  std::string gift_id;
};

// A page of a snapshot: its items point into the snapshot, which must outlive the page.
struct WallPage {
  std::vector<const WallItem*> items;
  bool has_more = false;
};

// The value a sort orders by, for the next page's cursor.
int64_t SortValue(const WallItem& item, WallSort sort);

WallSummary SummarizeWall(const std::vector<WallItem>& wall);

// One read of a wall, for all the readers that asked for it: its summary, and its gifts in each
// order one of them asked for.
struct WallSnapshot {
  std::vector<WallItem> items;  // as read
  WallSummary summary;
  // Per sort (by its value), the indexes of `items` in that order; filled for the sorts asked for.
  std::array<std::vector<uint32_t>, std::size(kAllWallSorts)> orders;
};

WallSnapshot SnapshotWall(std::vector<WallItem> wall, const std::vector<WallSort>& sorts);

// Up to `limit` gifts of `wall` in `sort` order (ties by gift_id ascending), after `after`: a
// binary search, the page pointing into `wall`, if the snapshot was taken for `sort` (else it is
// sorted here first).
WallPage PageWall(const WallSnapshot& wall, WallSort sort, const std::optional<WallCursor>& after,
                  int limit);
// A page of a temporary snapshot would point at nothing.
WallPage PageWall(const WallSnapshot&& wall, WallSort sort, const std::optional<WallCursor>& after,
                  int limit) = delete;

}  // namespace giftwall::domain

#endif  // GIFTWALL_SERVER_DOMAIN_WALL_PAGE_H_
