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

// A sender who sent any of a gift to a wall anonymously stays anonymous on it (the safe side),
// in whatever order and grouping the events fold.
TEST(FoldUserWall, Rule17_ASenderIsAnonymousOnAGiftOnceAnyOfItsEventsWas) {
  FoldEvent hidden = Event("b", 20, "rose", 1, 5);
  hidden.gift.anonymous = true;
  const std::vector<FoldEvent> events = {Event("a", 10, "rose", 2, 5), hidden,
                                         Event("c", 30, "rose", 1, 5), Event("d", 5, "rose", 1, 6),
                                         Event("e", 6, "lily", 1, 5)};
  absl::StatusOr<UserWall> wall = FoldUserWall(events);
  ASSERT_TRUE(wall.ok()) << wall.status();
  EXPECT_TRUE((*wall)["rose"].senders[5].anonymous);
  EXPECT_FALSE((*wall)["rose"].senders[6].anonymous);
  EXPECT_FALSE((*wall)["lily"].senders[5].anonymous) << "per gift";
  // Folded a delta at a time, in another order, the rows are the same.
  WallRow stored;
  for (size_t i = events.size(); i-- > 0;) {
    absl::StatusOr<WallDeltas> delta = FoldDeltas({events[i]});
    ASSERT_TRUE(delta.ok());
    for (const auto& [key, row] : *delta) {
      if (key.gift_id == "rose") {
        ASSERT_TRUE(MergeWallRow(row, &stored).ok());
      }
    }
  }
  EXPECT_TRUE(stored.senders[5] == (*wall)["rose"].senders[5]);
  // A row that lost the flag differs from the fold of its events.
  UserWall drifted = *wall;
  drifted["rose"].senders[5].anonymous = false;
  const std::vector<WallDifference> diff = DiffUserWalls(*wall, drifted, nullptr);
  ASSERT_EQ(diff.size(), 1u);
  EXPECT_EQ(diff[0].field, "anonymous");
  EXPECT_EQ(diff[0].sender_user_id, 5);
  EXPECT_EQ(diff[0].expected, "1");
}

TEST(FoldUserWall, OverflowIsAnError) {
  absl::StatusOr<UserWall> wall = FoldUserWall(
      {Event("a", 1, "rose", std::numeric_limits<int64_t>::max()), Event("b", 2, "rose", 1)});
  ASSERT_FALSE(wall.ok());
  EXPECT_EQ(wall.status().code(), absl::StatusCode::kOutOfRange);
}

TEST(FoldDeltas, OneDeltaPerWallRowOfEveryUser) {
  FoldEvent other = Event("x", 5, "rose", 4, 300);
  other.gift.target_user_id = 8;
  absl::StatusOr<WallDeltas> deltas =
      FoldDeltas({Event("a", 30, "rose", 2, 100, 20), other, Event("b", 10, "rose", 3, 200)});
  ASSERT_TRUE(deltas.ok()) << deltas.status();
  ASSERT_EQ(deltas->size(), 2u);
  const WallRow& mine = deltas->at(WallKey{7, "rose"});
  EXPECT_EQ(mine.gift_count, 5);
  EXPECT_EQ(mine.senders.size(), 2u);
  EXPECT_EQ(deltas->at(WallKey{8, "rose"}).gift_count, 4);
}

// The projection folds each group of events into deltas and merges them into the stored rows:
// however the events are grouped, and in whatever order the groups come, the rows are the fold of
// all of them at once.
TEST(MergeWallRow, Rule10_AnyGroupingInAnyOrderGivesTheFoldOfAllEvents) {
  std::mt19937 rng(11);
  std::vector<FoldEvent> events;
  for (int i = 0; i < 300; ++i) {
    FoldEvent e =
        Event("e" + std::to_string(1000 + rng() % 9000), 1000 + rng() % 30,
              "g" + std::to_string(rng() % 3), 1 + rng() % 4, rng() % 4 == 0 ? 0 : 100 + rng() % 6,
              rng() % 50, rng() % 3 == 0 ? "n" + std::to_string(i) : "");
    e.event_id += "-" + std::to_string(i);  // unique
    if (rng() % 4 == 0) e.gift.gift_icon = "i" + std::to_string(i);
    e.gift.target_user_id = 1 + rng() % 2;
    events.push_back(e);
  }
  absl::StatusOr<WallDeltas> all = FoldDeltas(events);
  ASSERT_TRUE(all.ok());
  for (int round = 0; round < 20; ++round) {
    std::shuffle(events.begin(), events.end(), rng);
    WallDeltas stored;
    for (size_t i = 0; i < events.size();) {
      const size_t n = std::min<size_t>(1 + rng() % 30, events.size() - i);
      absl::StatusOr<WallDeltas> group = FoldDeltas(absl::MakeConstSpan(events).subspan(i, n));
      ASSERT_TRUE(group.ok());
      for (const auto& [key, delta] : *group) ASSERT_TRUE(MergeWallRow(delta, &stored[key]).ok());
      i += n;
    }
    ASSERT_EQ(stored.size(), all->size());
    for (const auto& [key, row] : *all) {
      const UserWall expected = {{key.gift_id, row}};
      const UserWall actual = {{key.gift_id, stored.at(key)}};
      EXPECT_TRUE(DiffUserWalls(expected, actual).empty())
          << "round " << round << ": " << key.user_id << "/" << key.gift_id << " "
          << DiffUserWalls(expected, actual).front().field;
    }
  }
}

TEST(DescribeSenderMerge, NewSendersAreThoseWhoseMergedCountIsTheDeltasAndTheBestRanksFirst) {
  WallRow delta;
  delta.senders[100] = SenderRow{2, 0, 50, 50};
  delta.senders[200] = SenderRow{1, 0, 60, 60};
  delta.senders[300] = SenderRow{1, 0, 70, 70};
  // 100 sent before (3 in all now); 200 and 300 are new. 100 and 300 both have... 3 vs 1.
  const std::map<int64_t, SenderRow> merged = {{100, SenderRow{5, 0, 10, 50}},
                                               {200, SenderRow{1, 0, 60, 60}},
                                               {300, SenderRow{1, 0, 70, 70}}};
  const SenderMerge m = DescribeSenderMerge(delta, merged);
  EXPECT_EQ(m.new_senders, 2);
  EXPECT_EQ(m.best_user_id, 100);
  EXPECT_EQ(m.best.sent_count, 5);
}

TEST(MergeWallTotals, TheTopSenderIsTheBetterOfTheStoredOneAndTheDeltasBest) {
  WallRow stored;
  stored.gift_count = 5;
  stored.top_sender_user_id = 100;
  stored.top_sender = SenderRow{5, 0, 1, 10};
  WallRow delta;
  delta.gift_count = 1;
  SenderMerge tie;  // the same count, reached later: the stored top stays
  tie.best_user_id = 200;
  tie.best = SenderRow{5, 0, 3, 20};
  ASSERT_TRUE(MergeWallTotals(delta, tie, &stored).ok());
  EXPECT_EQ(stored.top_sender_user_id, 100);
  SenderMerge more = tie;
  more.best.sent_count = 6;
  ASSERT_TRUE(MergeWallTotals(delta, more, &stored).ok());
  EXPECT_EQ(stored.top_sender_user_id, 200);
  EXPECT_EQ(stored.gift_count, 7);
}

TEST(MergeWallTotals, Rule6_AnOverflowLeavesTheStoredRowAsItWas) {
  WallRow stored;
  stored.gift_count = std::numeric_limits<int64_t>::max();
  stored.first_received_at_ms = 5;
  WallRow delta;
  delta.gift_count = 1;
  delta.first_received_at_ms = 1;
  const absl::Status s = MergeWallTotals(delta, SenderMerge{}, &stored);
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(stored.gift_count, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(stored.first_received_at_ms, 5);
}

}  // namespace
}  // namespace giftwall::domain
