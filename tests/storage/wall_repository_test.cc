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

  void AddGift(int64_t user, const std::string& gift, int64_t count, int64_t first, int64_t last,
               int64_t coins = 0) {
    db_.Exec(absl::StrFormat(
        "INSERT INTO user_gift_wall (app_code, user_id, gift_id, gift_count, total_coins, "
        "first_received_at_ms, last_received_at_ms, created_at_ms, updated_at_ms) VALUES "
        "('demo', %d, '%s', %d, %d, %d, %d, 1, 1)",
        user, gift, count, coins, first, last));
  }
  void AddSender(int64_t user, const std::string& gift, int64_t sender, int64_t count,
                 int64_t last) {
    db_.Exec(absl::StrFormat(
        "INSERT INTO user_gift_wall_sender (app_code, user_id, gift_id, sender_user_id, "
        "sent_count, sent_coins, first_sent_at_ms, last_sent_at_ms, created_at_ms, updated_at_ms) "
        "VALUES ('demo', %d, '%s', %d, %d, %d, 1, %d, 1, 1)",
        user, gift, sender, count, count * 10, last));
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

TEST_F(WallRepositoryTest, EverySortPagesThrough120GiftsWithoutGapsOrRepeats) {
  // 120 gifts whose counts, coins and times tie in groups, so ties by gift_id matter.
  for (int i = 0; i < 120; ++i) {
    AddGift(7, absl::StrFormat("g%03d", (i * 37) % 120), 1 + i % 4, 1000 + i % 3, 5000 + i % 5,
            100 * (i % 6));
  }
  AddGift(8, "other-wall", 100, 1, 1, 1);
  for (WallSort sort : domain::kAllWallSorts) {
    const bool ascending = sort == WallSort::kFirstReceivedAsc;
    for (int page_size : {1, 7, 200}) {
      SCOPED_TRACE(absl::StrCat("sort ", static_cast<int>(sort), " page size ", page_size));
      std::vector<WallItem> all = ReadAll(7, sort, page_size);
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

TEST_F(WallRepositoryTest, SendersPageInTheTopSenderOrder) {
  // Ties on count are broken by who reached it first (earlier last_sent), then by user id.
  AddSender(7, "rose", 300, 5, 50);
  AddSender(7, "rose", 200, 5, 40);
  AddSender(7, "rose", 100, 5, 40);
  AddSender(7, "rose", 400, 9, 90);
  AddSender(7, "rose", 500, 1, 10);
  AddSender(7, "lily", 600, 99, 1);
  std::vector<int64_t> order;
  std::optional<SenderCursor> after;
  for (int pages = 0; pages < 10; ++pages) {
    absl::StatusOr<SenderPage> page = repo_.ListSenders("demo", 7, "rose", after, 2);
    ASSERT_TRUE(page.ok()) << page.status();
    for (const SenderStats& s : page->senders) order.push_back(s.user_id);
    if (!page->has_more) break;
    const SenderStats& last = page->senders.back();
    after = SenderCursor{last.sent_count, last.last_sent_at_ms, last.user_id};
  }
  EXPECT_THAT(order, ::testing::ElementsAre(400, 100, 200, 300, 500));
}

TEST_F(WallRepositoryTest, SummaryCoversTheWholeWallAndSaturates) {
  AddGift(7, "a", std::numeric_limits<int64_t>::max(), 10, 20, std::numeric_limits<int64_t>::max());
  AddGift(7, "b", 5, 5, 30, 7);
  AddGift(8, "c", 1, 1, 99);
  absl::StatusOr<WallSummary> summary = repo_.Summarize("demo", 7);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->distinct_gifts, 2);
  EXPECT_EQ(summary->total_gift_count, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(summary->total_coins, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(summary->last_received_at_ms, 30);
  summary = repo_.Summarize("demo", 9);
  ASSERT_TRUE(summary.ok());
  EXPECT_EQ(summary->distinct_gifts, 0);
  EXPECT_EQ(summary->total_gift_count, 0);
}

// Each read uses its own index in order: the plan has no filesort, first page or next.
TEST_F(WallRepositoryTest, EveryReadIsServedByAnIndexWithoutFilesort) {
  for (int i = 0; i < 200; ++i) {
    AddGift(i % 5, absl::StrCat("g", i), i % 7, i, i % 11, i % 13);
    AddSender(1, "g1", i + 1, i % 7, i % 11);
  }
  db_.Exec("ANALYZE TABLE user_gift_wall, user_gift_wall_sender");
  std::unique_ptr<SqlConnection> conn = db_.Connect();
  auto explain = [&](const std::string& sql, std::initializer_list<SqlParam> params) {
    std::string key, extra;
    absl::Status s = conn->Query(absl::StrCat("EXPLAIN ", sql), params, [&](const SqlRow& row) {
      key += row.Str(5);
      extra += row.Str(9);
    });
    EXPECT_TRUE(s.ok()) << s;
    EXPECT_THAT(extra, ::testing::Not(::testing::HasSubstr("filesort"))) << sql;
    return key;
  };
  for (WallSort sort : domain::kAllWallSorts) {
    EXPECT_THAT(explain(PageQuery(sort, false), {"demo", 1, 11}),
                ::testing::StartsWith("idx_user_gift_wall_"));
    EXPECT_THAT(explain(PageQuery(sort, true), {"demo", 1, 3, 3, "g50", 11}),
                ::testing::StartsWith("idx_user_gift_wall_"));
  }
  EXPECT_EQ(explain(std::string(SendersQuery(false)), {"demo", 1, "g1", 11}),
            "idx_user_gift_wall_sender_rank");
  EXPECT_EQ(explain(std::string(SendersQuery(true)), {"demo", 1, "g1", 3, 3, 5, 5, 10, 11}),
            "idx_user_gift_wall_sender_rank");
}

}  // namespace
}  // namespace giftwall::storage
