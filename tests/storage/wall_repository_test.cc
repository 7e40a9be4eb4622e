#include "server/storage/wall_repository.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_database.h"

namespace giftwall::storage {
namespace {

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

  testing::TestDatabase db_;
  ConnectionPool pool_;
  WallRepository repo_;
};

TEST_F(WallRepositoryTest, ReadWallsReadsEveryGiftOfTheWallsAskedForAndNoOther) {
  for (int i = 0; i < 120; ++i) AddGift(7, absl::StrFormat("g%03d", i), 1 + i % 4, 1, 2, i);
  AddGift(8, "other-wall", 100, 1, 1, 1);
  AddGift(9, "third-wall", 3, 1, 1, 1);
  db_.Exec(
      "UPDATE user_gift_wall SET gift_name = 'Rose', sender_count = 2, top_sender_user_id = 42, "
      "top_sender_count = 3, first_sender_user_id = 41 WHERE gift_id = 'g005'");
  absl::StatusOr<std::map<int64_t, std::vector<domain::WallItem>>> walls =
      repo_.ReadWalls("demo", std::nullopt, {7, 9, 10});
  ASSERT_TRUE(walls.ok()) << walls.status();
  ASSERT_EQ(walls->size(), 2u) << "user 10 has no wall; user 8 was not asked for";
  ASSERT_EQ(walls->at(7).size(), 120u);
  ASSERT_EQ(walls->at(9).size(), 1u);
  EXPECT_EQ(walls->at(9).front().gift_id, "third-wall");
  std::set<std::string> ids;
  for (const domain::WallItem& item : walls->at(7)) {
    ids.insert(item.gift_id);
    if (item.gift_id != "g005") {
      EXPECT_FALSE(item.top_sender.has_value());
      continue;
    }
    EXPECT_EQ(item.gift_name, "Rose");
    EXPECT_EQ(item.total_coins, 5);
    ASSERT_TRUE(item.top_sender.has_value());
    EXPECT_EQ(item.top_sender->user_id, 42);
    EXPECT_EQ(item.first_sender_user_id, 41);
  }
  EXPECT_EQ(ids.size(), 120u);
  walls = repo_.ReadWalls("other-app", std::nullopt, {7});
  ASSERT_TRUE(walls.ok());
  EXPECT_TRUE(walls->empty());
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
    absl::StatusOr<SenderPage> page = repo_.ListSenders("demo", 7, std::nullopt, "rose", after, 2);
    ASSERT_TRUE(page.ok()) << page.status();
    for (const domain::SenderStats& s : page->senders) order.push_back(s.user_id);
    if (!page->has_more) break;
    const domain::SenderStats& last = page->senders.back();
    after = SenderCursor{last.sent_count, last.last_sent_at_ms, last.user_id};
  }
  EXPECT_THAT(order, ::testing::ElementsAre(400, 100, 200, 300, 500));
}

// A wall is read by primary key; a gift's senders from their rank index in order, with no
// filesort. The wall has no other index: every one would cost each projection a rewrite.
TEST_F(WallRepositoryTest, EveryReadIsServedByAnIndexAndTheWallHasOnlyItsPrimaryKey) {
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
  EXPECT_EQ(explain(std::string(WallQuery(false)), {"[[1],[2]]", "demo"}), "PRIMARY");
  EXPECT_EQ(explain(std::string(SendersQuery(false, false)), {"demo", 1, "g1", 11}),
            "idx_user_gift_wall_sender_rank");
  EXPECT_EQ(explain(std::string(SendersQuery(false, true)), {"demo", 1, "g1", 3, 3, 5, 5, 10, 11}),
            "idx_user_gift_wall_sender_rank");
  // A period's wall and senders: the same plans on the period tables.
  EXPECT_EQ(explain(std::string(WallQuery(true)), {"[[1],[2]]", "demo", "month", "2026-12"}),
            "PRIMARY");
  EXPECT_EQ(
      explain(std::string(SendersQuery(true, false)), {"demo", 1, "month", "2026-12", "g1", 11}),
      "idx_user_gift_wall_period_sender_rank");
  EXPECT_EQ(explain(std::string(SendersQuery(true, true)),
                    {"demo", 1, "month", "2026-12", "g1", 3, 3, 5, 5, 10, 11}),
            "idx_user_gift_wall_period_sender_rank");
  EXPECT_EQ(db_.QueryString("SELECT GROUP_CONCAT(DISTINCT index_name) FROM "
                            "information_schema.statistics WHERE table_schema = DATABASE() AND "
                            "table_name = 'user_gift_wall'"),
            "PRIMARY");
}

}  // namespace
}  // namespace giftwall::storage
