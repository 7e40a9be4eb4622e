#include "server/domain/wall_fold.h"

#include <algorithm>
#include <limits>
#include <random>

#include "gtest/gtest.h"

namespace giftwall::domain {
namespace {

FoldEvent Event(const std::string& id, int64_t at, const std::string& gift, int64_t count,
                int64_t sender = 0, int64_t coins = 0, const std::string& name = "") {
  FoldEvent e;
  e.event_id = id;
  e.occurred_at_ms = at;
  e.gift.target_user_id = 7;
  e.gift.gift_id = gift;
  e.gift.gift_count = count;
  e.gift.sender_user_id = sender;
  e.gift.coin_amount = coins;
  e.gift.gift_name = name;
  return e;
}

TEST(FoldUserWall, SumsAndTimes) {
  absl::StatusOr<UserWall> wall =
      FoldUserWall({Event("a", 30, "rose", 2, 100, 20), Event("b", 10, "rose", 3, 0, 30),
                    Event("c", 20, "lily", 1)});
  ASSERT_TRUE(wall.ok()) << wall.status();
  const WallRow& rose = wall->at("rose");
  EXPECT_EQ(rose.gift_count, 5);
  EXPECT_EQ(rose.total_coins, 50);
  EXPECT_EQ(rose.first_received_at_ms, 10);
  EXPECT_EQ(rose.last_received_at_ms, 30);
  EXPECT_EQ(rose.sender_count, 1);
  EXPECT_EQ(rose.first_sender_user_id, 100);
  EXPECT_EQ(wall->at("lily").top_sender_user_id, 0);
}

TEST(FoldUserWall, TopSenderTieGoesToWhoReachedTheCountFirstThenTheLowerId) {
  absl::StatusOr<UserWall> wall =
      FoldUserWall({Event("a", 10, "rose", 2, 200), Event("b", 20, "rose", 1, 100),
                    Event("c", 30, "rose", 1, 100), Event("d", 30, "rose", 2, 50)});
  ASSERT_TRUE(wall.ok());
  // 200 reached 2 at t=10; 100 at t=30; 50 at t=30: 200 is the top.
  EXPECT_EQ(wall->at("rose").top_sender_user_id, 200);
  EXPECT_EQ(wall->at("rose").top_sender.sent_count, 2);
  wall = FoldUserWall({Event("a", 30, "rose", 2, 100), Event("b", 30, "rose", 2, 50)});
  ASSERT_TRUE(wall.ok());
  EXPECT_EQ(wall->at("rose").top_sender_user_id, 50);
}

TEST(FoldUserWall, NameFromTheLatestEventCarryingOneAndFirstSenderFromTheEarliest) {
  absl::StatusOr<UserWall> wall = FoldUserWall(
      {Event("b", 20, "rose", 1, 0, 0, "late"), Event("a", 20, "rose", 1, 0, 0, "early"),
       Event("c", 30, "rose", 1, 5), Event("d", 30, "rose", 1, 4), Event("z", 40, "rose", 1)});
  ASSERT_TRUE(wall.ok());
  EXPECT_EQ(wall->at("rose").gift_name, "late");        // same time: the larger event id is later
  EXPECT_EQ(wall->at("rose").first_sender_user_id, 5);  // same time: event "c" before "d"
}

TEST(FoldUserWall, AnyOrderGivesTheSameRows) {
  std::vector<FoldEvent> events;
  std::mt19937 rng(1);
  for (int i = 0; i < 200; ++i) {
    events.push_back(Event("e" + std::to_string(i), 1000 + rng() % 20,
                           "g" + std::to_string(rng() % 3), 1 + rng() % 3,
                           rng() % 4 == 0 ? 0 : 100 + rng() % 5, rng() % 50,
                           rng() % 3 == 0 ? "n" + std::to_string(i) : ""));
  }
  absl::StatusOr<UserWall> first = FoldUserWall(events);
  ASSERT_TRUE(first.ok());
  for (int round = 0; round < 5; ++round) {
    std::shuffle(events.begin(), events.end(), rng);
    absl::StatusOr<UserWall> again = FoldUserWall(events);
    ASSERT_TRUE(again.ok());
    for (const auto& [gift, row] : *first) {
      const WallRow& other = again->at(gift);
      EXPECT_EQ(row.gift_count, other.gift_count);
      EXPECT_EQ(row.gift_name, other.gift_name);
      EXPECT_EQ(row.top_sender_user_id, other.top_sender_user_id);
      EXPECT_EQ(row.first_sender_user_id, other.first_sender_user_id);
      EXPECT_EQ(row.senders, other.senders);
    }
  }
}

TEST(FoldUserWall, OverflowIsAnError) {
  absl::StatusOr<UserWall> wall = FoldUserWall(
      {Event("a", 1, "rose", std::numeric_limits<int64_t>::max()), Event("b", 2, "rose", 1)});
  ASSERT_FALSE(wall.ok());
  EXPECT_EQ(wall.status().code(), absl::StatusCode::kOutOfRange);
}

}  // namespace
}  // namespace giftwall::domain
