// GetGiftWall's pages and summary, cut from the whole wall (DESIGN §3), without a database.
#include "server/domain/wall_page.h"

#include <limits>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"

namespace giftwall::domain {
namespace {

WallItem Gift(const std::string& id, int64_t count, int64_t coins, int64_t first, int64_t last) {
  WallItem item;
  item.gift_id = id;
  item.gift_count = count;
  item.total_coins = coins;
  item.first_received_at_ms = first;
  item.last_received_at_ms = last;
  return item;
}

// Every page of `wall`, following cursors the way GetGiftWall builds its tokens.
// Half the time from a snapshot taken for another order only, which pages must not depend on.
std::vector<WallItem> ReadAll(const std::vector<WallItem>& wall, WallSort sort, int page_size,
                              std::shared_ptr<const CatalogIndex> catalog = nullptr,
                              bool include_unlit = false) {
  const WallSnapshot snapshot = SnapshotWall(
      wall,
      {page_size % 2 == 0
           ? sort
           : static_cast<WallSort>((static_cast<int>(sort) + 1) % std::size(kAllWallSorts))},
      std::move(catalog), include_unlit);
  std::vector<WallItem> all;
  std::optional<WallCursor> after;
  for (int pages = 0; pages < 1000; ++pages) {
    WallPage page = PageWall(snapshot, sort, after, page_size, include_unlit);
    EXPECT_LE(page.items.size(), static_cast<size_t>(page_size));
    for (const WallItem* item : page.items) all.push_back(*item);
    if (!page.has_more) break;
    after = WallCursor{SortValue(*page.items.back(), sort), page.items.back()->gift_id,
                       !page.items.back()->lit};
  }
  return all;
}

TEST(PageWall, EverySortPagesThrough120GiftsWithoutGapsOrRepeatsTiesByGiftId) {
  // Counts, coins and times tie in groups, so ties by gift_id matter.
  std::vector<WallItem> wall;
  for (int i = 0; i < 120; ++i) {
    wall.push_back(Gift(absl::StrFormat("g%03d", (i * 37) % 120), 1 + i % 4, 100 * (i % 6),
                        1000 + i % 3, 5000 + i % 5));
  }
  for (WallSort sort : kAllWallSorts) {
    const bool ascending = sort == WallSort::kFirstReceivedAsc || sort == WallSort::kCatalog;
    for (int page_size : {1, 7, 120, 200}) {
      SCOPED_TRACE(absl::StrCat("sort ", static_cast<int>(sort), " page size ", page_size));
      std::vector<WallItem> all = ReadAll(wall, sort, page_size);
      ASSERT_EQ(all.size(), 120u);
      std::set<std::string> seen;
      for (size_t i = 0; i < all.size(); ++i) {
        EXPECT_TRUE(seen.insert(all[i].gift_id).second) << "repeated " << all[i].gift_id;
        if (i == 0) continue;
        const int64_t prev = SortValue(all[i - 1], sort), cur = SortValue(all[i], sort);
        EXPECT_TRUE(ascending ? prev <= cur : prev >= cur) << prev << " then " << cur;
        if (prev == cur) {
          EXPECT_LT(all[i - 1].gift_id, all[i].gift_id);
        }
      }
    }
  }
}

TEST(PageWall, TheLastPageSaysNoMoreAndAPageAfterTheEndIsEmpty) {
  const WallSnapshot snapshot =
      SnapshotWall({Gift("a", 3, 0, 1, 1), Gift("b", 2, 0, 1, 1)}, {WallSort::kCountDesc});
  WallPage page = PageWall(snapshot, WallSort::kCountDesc, std::nullopt, 2);
  EXPECT_EQ(page.items.size(), 2u);
  EXPECT_FALSE(page.has_more);
  page = PageWall(snapshot, WallSort::kCountDesc, WallCursor{2, "b"}, 2);
  EXPECT_TRUE(page.items.empty());
  EXPECT_FALSE(page.has_more);
  const WallSnapshot empty = SnapshotWall({}, {WallSort::kCoinsDesc});
  EXPECT_TRUE(PageWall(empty, WallSort::kCoinsDesc, std::nullopt, 50).items.empty());
}

TEST(SummarizeWall, CoversTheWholeWallAndSaturates) {
  const int64_t max = std::numeric_limits<int64_t>::max();
  WallSummary summary = SummarizeWall({Gift("a", max, max, 10, 20), Gift("b", 5, 7, 5, 30)});
  EXPECT_EQ(summary.distinct_gifts, 2);
  EXPECT_EQ(summary.total_gift_count, max);
  EXPECT_EQ(summary.total_coins, max);
  EXPECT_EQ(summary.last_received_at_ms, 30);
  summary = SummarizeWall({});
  EXPECT_EQ(summary.distinct_gifts, 0);
  EXPECT_EQ(summary.total_gift_count, 0);
}

CatalogGift Catalogued(const std::string& id, int64_t sort_order, const std::string& series = "",
                       GiftStatus status = GiftStatus::kOnSale) {
  CatalogGift gift;
  gift.gift_id = id;
  gift.name = "name of " + id;
  gift.sort_order = sort_order;
  gift.series = series;
  gift.status = status;
  return gift;
}

TEST(SummarizeWall, Rule16_LitUnlitAndRetiredCountsAndSeriesTotals) {
  // On sale: a, b (flowers), c (cars), d (no series); retired: r (flowers). The wall has a, c,
  // r and x, which the catalogue lacks.
  auto catalog = std::make_shared<const CatalogIndex>(std::vector<CatalogGift>{
      Catalogued("c", 5, "cars"), Catalogued("a", 1, "flowers"), Catalogued("b", 2, "flowers"),
      Catalogued("r", 3, "flowers", GiftStatus::kRetired), Catalogued("d", 4)});
  const WallSnapshot wall = SnapshotWall(
      {Gift("a", 1, 1, 1, 1), Gift("c", 2, 2, 2, 2), Gift("r", 3, 3, 3, 3), Gift("x", 4, 4, 4, 4)},
      {WallSort::kCountDesc}, catalog, true);
  const WallSummary& s = wall.summary;
  EXPECT_EQ(s.distinct_gifts, 4);
  EXPECT_EQ(s.lit_gifts, 2) << "a and c: lit and on sale";
  EXPECT_EQ(s.catalogue_gifts, 4) << "a, b, c, d";
  EXPECT_EQ(s.lit_retired_gifts, 1);
  EXPECT_EQ(s.lit_uncatalogued_gifts, 1);
  ASSERT_EQ(s.series.size(), 2u) << "the retired gift's series counts only its on-sale gifts";
  EXPECT_EQ(s.series[0].series, "flowers") << "catalogue order of each series' first gift";
  EXPECT_EQ(s.series[0].lit_gifts, 1);
  EXPECT_EQ(s.series[0].catalogue_gifts, 2);
  EXPECT_EQ(s.series[1].series, "cars");
  EXPECT_EQ(s.series[1].lit_gifts, 1);
  EXPECT_EQ(s.series[1].catalogue_gifts, 1);
  // The unlit gifts: on sale and not on the wall, in catalogue order.
  ASSERT_EQ(wall.unlit.size(), 2u);
  EXPECT_EQ(wall.unlit[0]->gift_id, "b");
  EXPECT_EQ(wall.unlit[1]->gift_id, "d");
  EXPECT_FALSE(wall.unlit[0]->lit);
  EXPECT_EQ(wall.unlit[0]->gift_count, 0);

  // Without a catalogue: no catalogue counts, nothing unlit, as before catalogues.
  const WallSnapshot bare =
      SnapshotWall({Gift("a", 1, 1, 1, 1)}, {WallSort::kCountDesc}, nullptr, true);
  EXPECT_EQ(bare.summary.lit_gifts, 0);
  EXPECT_EQ(bare.summary.catalogue_gifts, 0);
  EXPECT_EQ(bare.summary.lit_uncatalogued_gifts, 0);
  EXPECT_TRUE(bare.summary.series.empty());
  EXPECT_TRUE(bare.unlit.empty());
  EXPECT_EQ(bare.items[0].catalog, nullptr);
}

TEST(PageWall, Rule16_EverySortPagesTheLitGiftsThenTheUnlitInCatalogueOrder) {
  // 40 catalogued gifts (sort orders tie in pairs), the wall has 15 of them and 5 others.
  std::vector<CatalogGift> gifts;
  for (int i = 0; i < 40; ++i) {
    gifts.push_back(Catalogued(absl::StrFormat("c%02d", (i * 7) % 40), i / 2, i % 3 == 0 ? "s" : "",
                               i == 39 ? GiftStatus::kRetired : GiftStatus::kOnSale));
  }
  auto catalog = std::make_shared<const CatalogIndex>(gifts);
  std::vector<WallItem> wall;
  for (int i = 0; i < 15; ++i) {
    wall.push_back(Gift(absl::StrFormat("c%02d", i * 2), 1 + i % 3, i % 4, 10 + i % 5, 20 + i % 2));
  }
  for (int i = 0; i < 5; ++i) wall.push_back(Gift(absl::StrFormat("x%d", i), 2, 1, 10, 20));
  for (WallSort sort : kAllWallSorts) {
    for (int page_size : {1, 6, 200}) {
      SCOPED_TRACE(absl::StrCat("sort ", static_cast<int>(sort), " page size ", page_size));
      const std::vector<WallItem> all = ReadAll(wall, sort, page_size, catalog, true);
      // 20 lit, then the 25 catalogued on-sale gifts the wall lacks (c39's retired one aside).
      ASSERT_EQ(all.size(), 20u + 24u);
      std::set<std::string> seen;
      for (const WallItem& item : all) EXPECT_TRUE(seen.insert(item.gift_id).second);
      for (size_t i = 0; i < 20; ++i) EXPECT_TRUE(all[i].lit) << i;
      for (size_t i = 20; i < all.size(); ++i) {
        EXPECT_FALSE(all[i].lit) << i;
        EXPECT_NE(all[i].gift_id, gifts[39].gift_id) << "retired gifts are never unlit";
        if (i > 20) {
          EXPECT_TRUE(CatalogOrderLess(*all[i - 1].catalog, *all[i].catalog))
              << all[i - 1].gift_id << " then " << all[i].gift_id;
        }
      }
      // Without include_unlit, the lit gifts alone, in the same order.
      const std::vector<WallItem> lit = ReadAll(wall, sort, page_size, catalog, false);
      ASSERT_EQ(lit.size(), 20u);
      for (size_t i = 0; i < lit.size(); ++i) EXPECT_EQ(lit[i].gift_id, all[i].gift_id);
    }
  }
}

TEST(PageWall, Rule16_TheCatalogueSortPutsGiftsTheCatalogueLacksLastByGiftId) {
  auto catalog = std::make_shared<const CatalogIndex>(
      std::vector<CatalogGift>{Catalogued("b", 1), Catalogued("a", 2), Catalogued("c", 2)});
  const std::vector<WallItem> all =
      ReadAll({Gift("z", 9, 9, 1, 1), Gift("c", 1, 1, 1, 1), Gift("a", 1, 1, 1, 1),
               Gift("y", 1, 1, 1, 1), Gift("b", 1, 1, 1, 1)},
              WallSort::kCatalog, 2, catalog);
  std::vector<std::string> ids;
  for (const WallItem& item : all) ids.push_back(item.gift_id);
  EXPECT_EQ(ids, (std::vector<std::string>{"b", "a", "c", "y", "z"}));
}

TEST(CatalogIndex, FindsGiftsAndCountsOnSaleOnes) {
  const CatalogIndex catalog(
      {Catalogued("b", 1, "s"), Catalogued("a", 1, "s", GiftStatus::kRetired)});
  EXPECT_EQ(catalog.gifts()[0].gift_id, "a") << "catalogue order: sort_order, then gift_id";
  ASSERT_NE(catalog.Find("b"), nullptr);
  EXPECT_EQ(catalog.Find("b")->sort_order, 1);
  EXPECT_EQ(catalog.Find("c"), nullptr);
  EXPECT_EQ(catalog.on_sale(), 1);
  EXPECT_EQ(catalog.SeriesOf(*catalog.Find("a")), -1);
  EXPECT_EQ(catalog.SeriesOf(*catalog.Find("b")), 0);
}

}  // namespace
}  // namespace giftwall::domain
