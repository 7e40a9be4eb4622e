// GetGiftWall's pages and summary, cut from the whole wall (DESIGN §3), without a database.
#include "server/domain/wall_page.h"

#include <limits>
#include <set>

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
std::vector<WallItem> ReadAll(const std::vector<WallItem>& wall, WallSort sort, int page_size) {
  const WallSnapshot snapshot = SnapshotWall(
      wall, {page_size % 2 == 0 ? sort : static_cast<WallSort>((static_cast<int>(sort) + 1) % 4)});
  std::vector<WallItem> all;
  std::optional<WallCursor> after;
  for (int pages = 0; pages < 1000; ++pages) {
    WallPage page = PageWall(snapshot, sort, after, page_size);
    EXPECT_LE(page.items.size(), static_cast<size_t>(page_size));
    for (const WallItem* item : page.items) all.push_back(*item);
    if (!page.has_more) break;
    after = WallCursor{SortValue(*page.items.back(), sort), page.items.back()->gift_id};
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
    const bool ascending = sort == WallSort::kFirstReceivedAsc;
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

}  // namespace
}  // namespace giftwall::domain
