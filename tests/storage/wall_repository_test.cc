#include "server/storage/wall_repository.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_database.h"

namespace giftwall::storage {
namespace {

using domain::WallSort;

class WallRepositoryTest : public ::testing::Test {
 protected:
  WallRepositoryTest() : pool_(db_.PoolOptions()), repo_(pool_) {}

  void AddGift(int64_t user, const std::string& gift, int64_t count, int64_t first, int64_t last) {
    db_.Exec(absl::StrFormat(
        "INSERT INTO user_gift_wall (app_code, user_id, gift_id, gift_count, first_received_at_ms, "
        "last_received_at_ms, created_at_ms, updated_at_ms) VALUES ('demo', %d, '%s', %d, %d, %d, "
        "1, 1)",
        user, gift, count, first, last));
  }

  // Every page of a wall, following cursors the way GetGiftWall builds them.
  std::vector<WallItem> ReadAll(int64_t user, WallSort sort, int page_size) {
    std::vector<WallItem> all;
    std::optional<WallCursor> after;
    for (int pages = 0; pages < 1000; ++pages) {
      absl::StatusOr<WallPage> page = repo_.ListWall("demo", user, sort, after, page_size);
      EXPECT_TRUE(page.ok()) << page.status();
      if (!page.ok()) break;
      EXPECT_LE(page->items.size(), static_cast<size_t>(page_size));
      all.insert(all.end(), page->items.begin(), page->items.end());
      if (!page->has_more) break;
      after = WallCursor{SortValue(page->items.back(), sort), page->items.back().gift_id};
    }
    return all;
  }

  testing::TestDatabase db_;
  ConnectionPool pool_;
  WallRepository repo_;
};

TEST_F(WallRepositoryTest, PagesThroughEverySortWithoutGapsOrRepeats) {
  // 25 gifts whose counts and times tie in groups, so ties by gift_id matter.
  for (int i = 0; i < 25; ++i) {
    AddGift(7, absl::StrFormat("g%02d", i), 1 + i % 4, 1000 + i % 3, 5000 + i % 5);
  }
  AddGift(8, "other-wall", 100, 1, 1);
  for (WallSort sort : {WallSort::kCountDesc, WallSort::kLastReceivedDesc}) {
    for (int page_size : {1, 7, 10, 200}) {
      std::vector<WallItem> all = ReadAll(7, sort, page_size);
      ASSERT_EQ(all.size(), 25u) << "sort " << static_cast<int>(sort) << " size " << page_size;
      std::set<std::string> seen;
      for (size_t i = 0; i < all.size(); ++i) {
        EXPECT_TRUE(seen.insert(all[i].gift_id).second) << "repeated " << all[i].gift_id;
        if (i == 0) continue;
        const int64_t prev = SortValue(all[i - 1], sort), cur = SortValue(all[i], sort);
        EXPECT_GE(prev, cur);
        if (prev == cur) {
          EXPECT_LT(all[i - 1].gift_id, all[i].gift_id);
        }
      }
    }
  }
}

TEST_F(WallRepositoryTest, SummaryCoversTheWholeWallAndSaturates) {
  AddGift(7, "a", std::numeric_limits<int64_t>::max(), 10, 20);
  AddGift(7, "b", 5, 5, 30);
  AddGift(8, "c", 1, 1, 99);
  absl::StatusOr<WallSummary> summary = repo_.Summarize("demo", 7);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->distinct_gifts, 2);
  EXPECT_EQ(summary->total_gift_count, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(summary->last_received_at_ms, 30);
  summary = repo_.Summarize("demo", 9);
  ASSERT_TRUE(summary.ok());
  EXPECT_EQ(summary->distinct_gifts, 0);
  EXPECT_EQ(summary->total_gift_count, 0);
}

// Each sort reads its own index in order: the plan has no filesort, first page or next.
TEST_F(WallRepositoryTest, EverySortIsServedByAnIndexWithoutFilesort) {
  for (int i = 0; i < 200; ++i) AddGift(i % 5, absl::StrCat("g", i), i % 7, i, i % 11);
  db_.Exec("ANALYZE TABLE user_gift_wall");
  std::unique_ptr<SqlConnection> conn = db_.Connect();
  for (WallSort sort : {WallSort::kCountDesc, WallSort::kLastReceivedDesc}) {
    for (bool after : {false, true}) {
      std::string extra, key;
      auto on_row = [&](const SqlRow& row) {
        key += row.Str(5);
        extra += row.Str(9);
      };
      const std::string sql = absl::StrCat("EXPLAIN ", PageQuery(sort, after));
      absl::Status s = after ? conn->Query(sql, {"demo", 1, 3, 3, "g50", 11}, on_row)
                             : conn->Query(sql, {"demo", 1, 11}, on_row);
      ASSERT_TRUE(s.ok()) << s;
      EXPECT_THAT(extra, ::testing::Not(::testing::HasSubstr("filesort")))
          << PageQuery(sort, after);
      EXPECT_THAT(key, ::testing::StartsWith("idx_user_gift_wall_"));
    }
  }
}

}  // namespace
}  // namespace giftwall::storage
