#include "server/domain/wall_page.h"

#include <algorithm>
#include <limits>
#include <tuple>
#include <utility>

namespace giftwall::domain {
namespace {

bool Descending(WallSort sort) {
  return sort != WallSort::kFirstReceivedAsc && sort != WallSort::kCatalog;
}

int64_t SaturatingAdd(int64_t total, int64_t value) {
  int64_t sum = 0;
  if (!__builtin_add_overflow(total, value, &sum)) return sum;
  return value > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

}  // namespace

int64_t SortValue(const WallItem& item, WallSort sort) {
  if (!item.lit) return item.catalog->sort_order;
  switch (sort) {
    case WallSort::kCatalog:
      return item.catalog != nullptr ? item.catalog->sort_order
                                     : std::numeric_limits<int64_t>::max();
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

WallSummary SummarizeWall(const std::vector<WallItem>& wall, const CatalogIndex* catalog) {
  WallSummary summary;
  summary.distinct_gifts = static_cast<int64_t>(wall.size());
  for (const WallItem& item : wall) {
    summary.total_gift_count = SaturatingAdd(summary.total_gift_count, item.gift_count);
    summary.total_coins = SaturatingAdd(summary.total_coins, item.total_coins);
    summary.last_received_at_ms = std::max(summary.last_received_at_ms, item.last_received_at_ms);
  }
  if (catalog == nullptr || catalog->empty()) return summary;
  summary.catalogue_gifts = catalog->on_sale();
  summary.series.reserve(catalog->series().size());
  for (const CatalogIndex::Series& series : catalog->series()) {
    summary.series.push_back({series.name, 0, series.on_sale});
  }
  for (const WallItem& item : wall) {
    if (item.catalog == nullptr) {
      ++summary.lit_uncatalogued_gifts;
    } else if (item.catalog->status != GiftStatus::kOnSale) {
      ++summary.lit_retired_gifts;
    } else {
      ++summary.lit_gifts;
      const int series = catalog->SeriesOf(*item.catalog);
      if (series >= 0) ++summary.series[static_cast<size_t>(series)].lit_gifts;
    }
  }
  return summary;
}

namespace {

bool GiftIdLess(const WallItem& a, const WallItem& b) { return a.gift_id < b.gift_id; }

// `items` must be in gift_id order (a snapshot's are): an item's index then breaks the sort's
// ties, so that no comparison reads a gift id.
std::vector<uint32_t> Order(const std::vector<WallItem>& items, WallSort sort) {
  std::vector<std::pair<int64_t, uint32_t>> keyed(items.size());
  const bool descending = Descending(sort);
  for (uint32_t i = 0; i < keyed.size(); ++i) {
    const int64_t value = SortValue(items[i], sort);
    // Descending: ~value orders as -value would, without overflow at the int64 minimum.
    keyed[i] = {descending ? ~value : value, i};
  }
  std::sort(keyed.begin(), keyed.end());
  std::vector<uint32_t> order(keyed.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = keyed[i].second;
  return order;
}

}  // namespace

// The catalogue's on-sale gifts `wall` lacks, in catalogue order.
std::vector<const WallItem*> UnlitGifts(const std::vector<WallItem>& wall,
                                        const CatalogIndex& catalog) {
  std::vector<bool> lit(catalog.gifts().size());
  for (const WallItem& item : wall) {
    if (item.catalog != nullptr) lit[catalog.IndexOf(*item.catalog)] = true;
  }
  std::vector<const WallItem*> unlit;
  unlit.reserve(catalog.unlit_items().size());
  for (const WallItem& item : catalog.unlit_items()) {
    if (!lit[catalog.IndexOf(*item.catalog)]) unlit.push_back(&item);
  }
  return unlit;
}

WallSnapshot SnapshotWall(std::vector<WallItem> wall, const std::vector<WallSort>& sorts,
                          std::shared_ptr<const CatalogIndex> catalog, bool unlit) {
  WallSnapshot snapshot;
  if (catalog != nullptr && !catalog->empty()) {
    for (WallItem& item : wall) item.catalog = catalog->Find(item.gift_id);
    if (unlit) snapshot.unlit = UnlitGifts(wall, *catalog);
    snapshot.catalog = std::move(catalog);
  }
  snapshot.summary = SummarizeWall(wall, snapshot.catalog.get());
  // A wall is read in primary-key order, which is gift_id order: sorted only if it is not.
  if (!std::is_sorted(wall.begin(), wall.end(), GiftIdLess)) {
    std::sort(wall.begin(), wall.end(), GiftIdLess);
  }
  snapshot.items = std::move(wall);
  for (WallSort sort : sorts) {
    std::vector<uint32_t>& order = snapshot.orders[static_cast<size_t>(sort)];
    if (order.size() != snapshot.items.size()) order = Order(snapshot.items, sort);
  }
  return snapshot;
}

WallPage PageWall(const WallSnapshot& wall, WallSort sort, const std::optional<WallCursor>& after,
                  int limit, bool include_unlit) {
  std::vector<uint32_t> sorted_here;  // only if the snapshot was not taken for `sort`
  const std::vector<uint32_t>* order = &wall.orders[static_cast<size_t>(sort)];
  if (order->size() != wall.items.size()) order = &(sorted_here = Order(wall.items, sort));
  auto begin = order->begin();
  if (after.has_value() && after->unlit) {
    begin = order->end();  // past every lit gift
  } else if (after.has_value()) {
    const int64_t value = after->sort_value;
    const bool descending = Descending(sort);
    begin = std::partition_point(order->begin(), order->end(), [&](uint32_t i) {
      const WallItem& item = wall.items[i];
      const int64_t v = SortValue(item, sort);
      if (v != value) return descending ? v > value : v < value;
      return item.gift_id <= after->gift_id;
    });
  }
  WallPage page;
  size_t room = static_cast<size_t>(std::max(limit, 0));
  const auto take =
      std::min<std::ptrdiff_t>(order->end() - begin, static_cast<std::ptrdiff_t>(room));
  page.items.reserve(static_cast<size_t>(take));
  for (auto it = begin; it != begin + take; ++it) page.items.push_back(&wall.items[*it]);
  page.has_more = begin + take != order->end();
  if (!include_unlit || page.has_more) return page;
  // Then the unlit gifts, in catalogue order: (sort_order, gift_id) ascending.
  auto unlit = wall.unlit.begin();
  if (after.has_value() && after->unlit) {
    unlit = std::partition_point(wall.unlit.begin(), wall.unlit.end(), [&](const WallItem* item) {
      return std::tie(item->catalog->sort_order, item->gift_id) <=
             std::tie(after->sort_value, after->gift_id);
    });
  }
  room -= static_cast<size_t>(take);
  const auto take_unlit =
      std::min<std::ptrdiff_t>(wall.unlit.end() - unlit, static_cast<std::ptrdiff_t>(room));
  page.items.insert(page.items.end(), unlit, unlit + take_unlit);
  page.has_more = unlit + take_unlit != wall.unlit.end();
  return page;
}

CatalogIndex::CatalogIndex(std::vector<CatalogGift> gifts) : gifts_(std::move(gifts)) {
  std::sort(gifts_.begin(), gifts_.end(), CatalogOrderLess);
  by_id_.reserve(gifts_.size());
  series_of_.assign(gifts_.size(), -1);
  absl::flat_hash_map<absl::string_view, int> series_index;
  for (uint32_t i = 0; i < gifts_.size(); ++i) {
    const CatalogGift& gift = gifts_[i];
    by_id_.emplace(gift.gift_id, i);
    if (gift.status != GiftStatus::kOnSale) continue;
    ++on_sale_;
    WallItem& unlit = unlit_items_.emplace_back();
    unlit.gift_id = gift.gift_id;
    unlit.lit = false;
    unlit.catalog = &gift;
    if (gift.series.empty()) continue;
    auto [it, fresh] = series_index.emplace(gift.series, static_cast<int>(series_.size()));
    if (fresh) series_.push_back({gift.series, 0});
    ++series_[it->second].on_sale;
    series_of_[i] = it->second;
  }
}

const CatalogGift* CatalogIndex::Find(absl::string_view gift_id) const {
  auto it = by_id_.find(gift_id);
  return it == by_id_.end() ? nullptr : &gifts_[it->second];
}

}  // namespace giftwall::domain
