#include "server/domain/wall_page.h"

#include <algorithm>
#include <limits>
#include <tuple>

namespace giftwall::domain {
namespace {

bool Descending(WallSort sort) { return sort != WallSort::kFirstReceivedAsc; }

// Whether a comes before b in `sort` order.
bool Before(const WallItem& a, const WallItem& b, WallSort sort) {
  const int64_t va = SortValue(a, sort), vb = SortValue(b, sort);
  if (va != vb) return Descending(sort) ? va > vb : va < vb;
  return a.gift_id < b.gift_id;
}

int64_t SaturatingAdd(int64_t total, int64_t value) {
  int64_t sum = 0;
  if (!__builtin_add_overflow(total, value, &sum)) return sum;
  return value > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

}  // namespace

int64_t SortValue(const WallItem& item, WallSort sort) {
  switch (sort) {
    case WallSort::kLastReceivedDesc:
      return item.last_received_at_ms;
    case WallSort::kCoinsDesc:
      return item.total_coins;
    case WallSort::kFirstReceivedAsc:
      return item.first_received_at_ms;
    case WallSort::kCountDesc:
      break;
  }
  return item.gift_count;
}

WallPage PageWall(std::vector<WallItem> wall, WallSort sort, const std::optional<WallCursor>& after,
                  int limit) {
  if (after.has_value()) {
    WallItem cursor;
    cursor.gift_id = after->gift_id;
    cursor.gift_count = cursor.total_coins = cursor.last_received_at_ms =
        cursor.first_received_at_ms = after->sort_value;
    wall.erase(std::remove_if(wall.begin(), wall.end(),
                              [&](const WallItem& item) { return !Before(cursor, item, sort); }),
               wall.end());
  }
  WallPage page;
  const size_t take = std::min(wall.size(), static_cast<size_t>(std::max(limit, 0)));
  std::partial_sort(wall.begin(), wall.begin() + static_cast<std::ptrdiff_t>(take), wall.end(),
                    [sort](const WallItem& a, const WallItem& b) { return Before(a, b, sort); });
  page.has_more = wall.size() > take;
  wall.resize(take);
  page.items = std::move(wall);
  return page;
}

WallSummary SummarizeWall(const std::vector<WallItem>& wall) {
  WallSummary summary;
  summary.distinct_gifts = static_cast<int64_t>(wall.size());
  for (const WallItem& item : wall) {
    summary.total_gift_count = SaturatingAdd(summary.total_gift_count, item.gift_count);
    summary.total_coins = SaturatingAdd(summary.total_coins, item.total_coins);
    summary.last_received_at_ms = std::max(summary.last_received_at_ms, item.last_received_at_ms);
  }
  return summary;
}

}  // namespace giftwall::domain
