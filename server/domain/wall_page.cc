#include "server/domain/wall_page.h"

#include <algorithm>
#include <limits>
#include <utility>

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

namespace {

std::vector<uint32_t> Order(const std::vector<WallItem>& items, WallSort sort) {
  // The sort values are read once, not at every comparison; gift ids break ties.
  std::vector<std::pair<int64_t, uint32_t>> keyed(items.size());
  for (uint32_t i = 0; i < keyed.size(); ++i) keyed[i] = {SortValue(items[i], sort), i};
  const bool descending = Descending(sort);
  std::sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
    if (a.first != b.first) return descending ? a.first > b.first : a.first < b.first;
    return items[a.second].gift_id < items[b.second].gift_id;
  });
  std::vector<uint32_t> order(keyed.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = keyed[i].second;
  return order;
}

}  // namespace

WallSnapshot SnapshotWall(std::vector<WallItem> wall, const std::vector<WallSort>& sorts) {
  WallSnapshot snapshot;
  snapshot.summary = SummarizeWall(wall);
  snapshot.items = std::move(wall);
  for (WallSort sort : sorts) {
    std::vector<uint32_t>& order = snapshot.orders[static_cast<size_t>(sort)];
    if (order.size() != snapshot.items.size()) order = Order(snapshot.items, sort);
  }
  return snapshot;
}

WallPage PageWall(const WallSnapshot& wall, WallSort sort, const std::optional<WallCursor>& after,
                  int limit) {
  std::vector<uint32_t> sorted_here;  // only if the snapshot was not taken for `sort`
  const std::vector<uint32_t>* order = &wall.orders[static_cast<size_t>(sort)];
  if (order->size() != wall.items.size()) order = &(sorted_here = Order(wall.items, sort));
  auto begin = order->begin();
  if (after.has_value()) {
    WallItem cursor;
    cursor.gift_id = after->gift_id;
    cursor.gift_count = cursor.total_coins = cursor.last_received_at_ms =
        cursor.first_received_at_ms = after->sort_value;
    begin = std::partition_point(order->begin(), order->end(),
                                 [&](uint32_t i) { return !Before(cursor, wall.items[i], sort); });
  }
  WallPage page;
  const auto take = std::min<std::ptrdiff_t>(order->end() - begin, std::max(limit, 0));
  page.items.reserve(static_cast<size_t>(take));
  for (auto it = begin; it != begin + take; ++it) page.items.push_back(&wall.items[*it]);
  page.has_more = begin + take != order->end();
  return page;
}

}  // namespace giftwall::domain
