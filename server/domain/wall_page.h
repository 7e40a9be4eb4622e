// What a reader sees of a wall: its gifts in one of five orders, a page at a time, and the summary
// of the whole wall. A wall is bounded by the cap (DESIGN §2.14, 1,000 gifts by default), so a
// page is cut from the whole wall, read in one statement: the page and the summary come from one
// snapshot, and the wall needs no index per order. A wall read for many readers at once is
// summarized and sorted once (WallSnapshot); each reader then copies only its page. With the app's
// catalogue, the snapshot names its gifts from it, counts "lit N of M", and may list the
// catalogue's on-sale gifts the wall lacks (the unlit ones), which page after every lit gift.
#ifndef GIFTWALL_SERVER_DOMAIN_WALL_PAGE_H_
#define GIFTWALL_SERVER_DOMAIN_WALL_PAGE_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "server/domain/gift_catalog.h"
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
  // The top and the first sender hid from strangers (DESIGN §2.18): sent the gift to the wall
  // anonymously, or opted out. Whether a reader sees them masked depends on who looks.
  bool top_sender_hidden = false;
  bool first_sender_hidden = false;
  // False for a catalogue gift the wall lacks (all counts 0).
  bool lit = true;
  // The catalogue's entry for the gift, if it has one: points into the snapshot's catalogue.
  const CatalogGift* catalog = nullptr;
};

// A catalogue as walls read it: its gifts in catalogue order, found by id, and its on-sale gifts
// counted per series. Built once per load and shared, read-only, by every wall read of the app.
class CatalogIndex {
 public:
  // A series that has an on-sale gift, and how many it has.
  struct Series {
    std::string name;
    int64_t on_sale = 0;
  };

  explicit CatalogIndex(std::vector<CatalogGift> gifts);
  CatalogIndex(const CatalogIndex&) = delete;
  CatalogIndex& operator=(const CatalogIndex&) = delete;

  bool empty() const { return gifts_.empty(); }
  // In catalogue order.
  const std::vector<CatalogGift>& gifts() const { return gifts_; }
  // The gift with this id, or null.
  const CatalogGift* Find(absl::string_view gift_id) const;
  int64_t on_sale() const { return on_sale_; }
  // In catalogue order of each series' first on-sale gift.
  const std::vector<Series>& series() const { return series_; }
  // The index in series() of an on-sale gift's series; -1 for a gift without one, or retired.
  int SeriesOf(const CatalogGift& gift) const { return series_of_[IndexOf(gift)]; }
  // Each on-sale gift as an unlit wall item (counts 0), in catalogue order: built once, so that
  // a wall lists its unlit gifts without building any.
  const std::vector<WallItem>& unlit_items() const { return unlit_items_; }
  size_t IndexOf(const CatalogGift& gift) const {
    return static_cast<size_t>(&gift - gifts_.data());
  }

 private:
  std::vector<CatalogGift> gifts_;
  absl::flat_hash_map<std::string, uint32_t> by_id_;
  int64_t on_sale_ = 0;
  std::vector<Series> series_;
  std::vector<int> series_of_;  // parallel to gifts_
  std::vector<WallItem> unlit_items_;
};

// Lit N of M for one series of the catalogue.
struct SeriesSummary {
  std::string series;
  int64_t lit_gifts = 0;
  int64_t catalogue_gifts = 0;
};

struct WallSummary {
  int64_t distinct_gifts = 0;
  int64_t total_gift_count = 0;  // saturates at the int64 maximum
  int64_t total_coins = 0;       // saturates at the int64 maximum
  int64_t last_received_at_ms = 0;
  // Against the catalogue (zero without one): on-sale gifts lit and in all; lit gifts the
  // catalogue retired or lacks; per series with an on-sale gift, in catalogue order.
  int64_t lit_gifts = 0;
  int64_t catalogue_gifts = 0;
  int64_t lit_retired_gifts = 0;
  int64_t lit_uncatalogued_gifts = 0;
  std::vector<SeriesSummary> series;
};

// Where a page starts: strictly after the gift with this sort value and gift_id among the lit
// gifts, or with `unlit`, after the unlit gift with this catalogue sort_order and gift_id.
struct WallCursor {
  int64_t sort_value = 0;
  std::string gift_id;
  bool unlit = false;
};

// A page of a snapshot: its items point into the snapshot, which must outlive the page.
struct WallPage {
  std::vector<const WallItem*> items;
  bool has_more = false;
};

// The value a sort orders by, for the next page's cursor. An unlit gift's is its catalogue
// sort_order, whatever the sort.
int64_t SortValue(const WallItem& item, WallSort sort);

// The summary of `wall`, whose items point at their entries of `catalog` (null: none).
WallSummary SummarizeWall(const std::vector<WallItem>& wall, const CatalogIndex* catalog = nullptr);

// One read of a wall, for all the readers that asked for it: its summary, and its gifts in each
// order one of them asked for.
struct WallSnapshot {
  std::vector<WallItem> items;  // lit, in gift_id order
  // The catalogue's on-sale gifts `items` lack, in catalogue order, if a reader asked for them:
  // the catalogue's unlit items.
  std::vector<const WallItem*> unlit;
  WallSummary summary;
  // Per sort (by its value), the indexes of `items` in that order; filled for the sorts asked for.
  std::array<std::vector<uint32_t>, std::size(kAllWallSorts)> orders;
  // What the items' catalogue entries point into; null for an app without a catalogue.
  std::shared_ptr<const CatalogIndex> catalog;
};

// `wall` sorted in `sorts`, its gifts found in `catalog` (null: none), and with `unlit`, the
// catalogue's gifts it lacks listed.
WallSnapshot SnapshotWall(std::vector<WallItem> wall, const std::vector<WallSort>& sorts,
                          std::shared_ptr<const CatalogIndex> catalog = nullptr,
                          bool unlit = false);

// Up to `limit` gifts of `wall` in `sort` order (ties by gift_id ascending), after `after`, and
// with `include_unlit`, then its unlit gifts: a binary search, the page pointing into `wall`, if
// the snapshot was taken for `sort` (else it is sorted here first).
WallPage PageWall(const WallSnapshot& wall, WallSort sort, const std::optional<WallCursor>& after,
                  int limit, bool include_unlit = false);
// A page of a temporary snapshot would point at nothing.
WallPage PageWall(const WallSnapshot&& wall, WallSort sort, const std::optional<WallCursor>& after,
                  int limit, bool include_unlit = false) = delete;

}  // namespace giftwall::domain

#endif  // GIFTWALL_SERVER_DOMAIN_WALL_PAGE_H_
