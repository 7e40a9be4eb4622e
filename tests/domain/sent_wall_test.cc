// The sent wall's fold and who sees it (DESIGN §2.19), without a database: the deltas a group
// adds, the merge, the open part, the sum verify compares, and the viewer rules.
#include "server/domain/sent_wall.h"

#include <random>

#include "gtest/gtest.h"

namespace giftwall::domain {
namespace {

FoldEvent Gift(const std::string& id, int64_t at, int64_t receiver, int64_t sender,
               const std::string& gift, int64_t count, bool anonymous = false) {
  GiftPayload g;
  g.target_user_id = receiver;
  g.sender_user_id = sender;
  g.gift_id = gift;
  g.gift_count = count;
  g.coin_amount = count * 10;
  g.anonymous = anonymous;
  return FoldEvent{id, at, g};
}

// The sent rows that the sender rows of `walls` make: what verify sums in SQL (a period's open
// part is not kept).
SentWall SumOf(const WallDeltas& walls) {
  SentWall sum;
  for (const auto& [key, row] : walls) {
    for (const auto& [sender, sent] : row.senders) {
      SentRow one = SentOf(sent);
      if (!key.period.empty()) one.open = {};
      EXPECT_TRUE(MergeSentRow(one, &sum[SentKey{sender, key.gift_id, key.period}]).ok());
    }
  }
  return sum;
}

// Groups of `events` merged one after another into stored wall and sent rows, as the projection
// does (the open part of the rows to recount summed again from the stored sender rows).
void ProjectInGroups(const std::vector<FoldEvent>& events, std::mt19937& rng, WallDeltas& walls,
                     SentWall& sent) {
  for (size_t begin = 0; begin < events.size();) {
    const size_t end = std::min(events.size(), begin + 1 + rng() % 3);
    absl::StatusOr<WallDeltas> deltas =
        FoldDeltas(std::vector<FoldEvent>(events.begin() + begin, events.begin() + end));
    ASSERT_TRUE(deltas.ok());
    std::map<WallKey, std::map<int64_t, SenderRow>> merged;
    for (const auto& [key, delta] : *deltas) {
      ASSERT_TRUE(MergeWallRow(delta, &walls[key]).ok());
      for (const auto& [sender, row] : delta.senders) {
        merged[key][sender] = walls[key].senders.at(sender);
      }
    }
    absl::StatusOr<SentDeltas> part = SentDeltasOf(*deltas, merged);
    ASSERT_TRUE(part.ok());
    for (const auto& [key, row] : part->rows) ASSERT_TRUE(MergeSentRow(row, &sent[key]).ok());
    const SentWall sums = SumOf(walls);
    for (const SentKey& key : part->recount_open) sent[key].open = sums.at(key).open;
    begin = end;
  }
}

TEST(SentWallTest, Rule19_EachSendCountsOnceAndEachReceiverOnceWhateverTheGroups) {
  const std::vector<FoldEvent> events = {Gift("e1", 100, 1, 7, "rose", 1),
                                         Gift("e2", 300, 2, 7, "rose", 2),
                                         Gift("e3", 200, 1, 7, "rose", 3),
                                         Gift("e4", 50, 1, 8, "rose", 1),
                                         Gift("e5", 400, 3, 7, "car", 1, /*anonymous=*/true),
                                         Gift("e6", 500, 1, 7, "rose", 1),
                                         Gift("e7", 450, 4, 7, "car", 2)};
  std::mt19937 rng(19);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<FoldEvent> shuffled = events;
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    WallDeltas walls;
    SentWall sent;
    ProjectInGroups(shuffled, rng, walls, sent);
    EXPECT_TRUE(DiffSentWalls(SumOf(walls), sent).empty());
    const SentTotals rose{7, 70, 2, 100, 500};
    EXPECT_EQ(sent.at(SentKey{7, "rose"}), (SentRow{rose, rose, false}));
    EXPECT_EQ(sent.at(SentKey{8, "rose"}).all, (SentTotals{1, 10, 1, 50, 50}));
    // The anonymous send to 3 is in all of car, not in its open part.
    EXPECT_EQ(sent.at(SentKey{7, "car"}),
              (SentRow{{3, 30, 2, 400, 450}, {2, 20, 1, 450, 450}, true}));
  }
}

TEST(SentWallTest, Rule19_AnAnonymousSendToAWallTakesTheSenderOutOfTheOpenPartThere) {
  // 7 sent rose to 1 openly, then anonymously: 1's wall masks 7 for rose from then on, so the
  // open part is only what went to 2, whatever order the events come in.
  const std::vector<FoldEvent> events = {Gift("e1", 100, 1, 7, "rose", 2),
                                         Gift("e2", 200, 2, 7, "rose", 1),
                                         Gift("e3", 300, 1, 7, "rose", 1, /*anonymous=*/true)};
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<FoldEvent> shuffled = events;
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    WallDeltas walls;
    SentWall sent;
    ProjectInGroups(shuffled, rng, walls, sent);
    EXPECT_EQ(sent.at(SentKey{7, "rose"}),
              (SentRow{{4, 40, 2, 100, 300}, {1, 10, 1, 200, 200}, true}));
  }
  // An anonymous send to a sender row that existed asks for the recount; to a new one, not.
  absl::StatusOr<WallDeltas> deltas = FoldDeltas({Gift("e3", 300, 1, 7, "rose", 1, true)});
  ASSERT_TRUE(deltas.ok());
  std::map<WallKey, std::map<int64_t, SenderRow>> merged;
  merged[WallKey{1, "rose"}][7] = SenderRow{3, 30, 100, 300, true};
  absl::StatusOr<SentDeltas> part = SentDeltasOf(*deltas, merged);
  ASSERT_TRUE(part.ok());
  EXPECT_EQ(part->recount_open, (std::vector<SentKey>{{7, "rose"}}));
  merged[WallKey{1, "rose"}][7] = SenderRow{1, 10, 300, 300, true};
  part = SentDeltasOf(*deltas, merged);
  ASSERT_TRUE(part.ok());
  EXPECT_TRUE(part->recount_open.empty());
  EXPECT_TRUE(part->rows.at(SentKey{7, "rose"}).open.empty());
}

TEST(SentWallTest, Rule19_EachPeriodHasItsSentRowsWithoutAnOpenPartAndSenderlessGiftsHaveNone) {
  FoldEvent e = Gift("e1", 100, 1, 7, "rose", 1);
  e.periods = {"month:2026-12", "week:2026-W49"};
  FoldEvent nobody = Gift("e2", 100, 1, 0, "rose", 1);
  absl::StatusOr<WallDeltas> deltas = FoldDeltas({e, nobody});
  ASSERT_TRUE(deltas.ok());
  std::map<WallKey, std::map<int64_t, SenderRow>> merged;
  for (const auto& [key, delta] : *deltas) merged[key] = delta.senders;
  absl::StatusOr<SentDeltas> sent = SentDeltasOf(*deltas, merged);
  ASSERT_TRUE(sent.ok());
  ASSERT_EQ(sent->rows.size(), 3u);
  const SentTotals one{1, 10, 1, 100, 100};
  EXPECT_EQ(sent->rows.at(SentKey{7, "rose"}), (SentRow{one, one, false}));
  // A period's open part is not kept: a wall shows a sender by the all-time row (§2.18).
  for (const std::string period : {"month:2026-12", "week:2026-W49"}) {
    EXPECT_EQ(sent->rows.at(SentKey{7, "rose", period}), (SentRow{one, {}, false})) << period;
  }
  // In key order: the all-time row, then the periods.
  EXPECT_EQ(sent->rows.begin()->first.period, "");
  EXPECT_EQ(SentWallName(""), "sent");
  EXPECT_EQ(SentWallName("month:2026-12"), "sent month:2026-12");
}

TEST(SentWallTest, Rule19_AReceiverAlreadySentToIsNotCountedAgain) {
  absl::StatusOr<WallDeltas> deltas = FoldDeltas({Gift("e1", 100, 1, 7, "rose", 2)});
  ASSERT_TRUE(deltas.ok());
  // The sender row existed: after the merge it holds more than the delta.
  std::map<WallKey, std::map<int64_t, SenderRow>> merged;
  merged[WallKey{1, "rose"}][7] = SenderRow{5, 50, 10, 100, false};
  absl::StatusOr<SentDeltas> sent = SentDeltasOf(*deltas, merged);
  ASSERT_TRUE(sent.ok());
  EXPECT_EQ(sent->rows.at(SentKey{7, "rose"}).all.receiver_count, 0);
  EXPECT_EQ(sent->rows.at(SentKey{7, "rose"}).open.sent_count, 2);
}

TEST(SentWallTest, Rule19_OverflowIsOutOfRange) {
  SentRow stored{{INT64_MAX, 0, 1, 1, 1}, {}, false};
  EXPECT_EQ(MergeSentRow(SentRow{{1, 0, 0, 1, 1}, {}, false}, &stored).code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(stored.all.sent_count, INT64_MAX);
}

TEST(SentWallTest, Rule19_DiffNamesTheSenderTheGiftAndTheField) {
  const SentTotals two{2, 20, 1, 1, 2};
  SentWall expected = {{SentKey{7, "rose"}, SentRow{two, two, false}},
                       {SentKey{8, "car"}, SentRow{two, {}, true}}};
  SentWall actual = {{SentKey{7, "rose"}, SentRow{{3, 20, 1, 1, 2}, two, false}},
                     {SentKey{9, "car", "month:2026-12"}, SentRow{two, two, false}}};
  int64_t rows = 0;
  const std::vector<WallDifference> diff = DiffSentWalls(expected, actual, &rows);
  EXPECT_EQ(rows, 3);
  ASSERT_EQ(diff.size(), 3u);
  EXPECT_EQ(diff[0].sender_user_id, 7);
  EXPECT_EQ(diff[0].field, "sent_count");
  EXPECT_EQ(diff[0].expected, "2");
  EXPECT_EQ(diff[0].actual, "3");
  EXPECT_EQ(diff[0].period, "sent");
  EXPECT_EQ(diff[1].sender_user_id, 8);
  EXPECT_EQ(diff[1].actual, "absent");
  EXPECT_EQ(diff[2].sender_user_id, 9);
  EXPECT_EQ(diff[2].expected, "absent");
  EXPECT_EQ(diff[2].period, "sent month:2026-12");
  actual[SentKey{7, "rose"}].open.receiver_count = 5;
  EXPECT_EQ(DiffSentWalls(expected, actual)[1].field, "open_receiver_count");
}

TEST(SentWallTest, Rule19_OnlyTheSenderAndAModeratorSeeAnonymousSends) {
  EXPECT_EQ(SentViewFor(Viewer{7, false}, 7, /*sender_opted_out=*/true), SentView::kWhole);
  EXPECT_EQ(SentViewFor(Viewer{0, true}, 7, true), SentView::kWhole);
  EXPECT_EQ(SentViewFor(Viewer{8, false}, 7, false), SentView::kInTheOpen);
  EXPECT_EQ(SentViewFor(Viewer{0, false}, 7, false), SentView::kInTheOpen);
  EXPECT_EQ(SentViewFor(Viewer{8, false}, 7, true), SentView::kNothing);
  const SentRow row{{3, 30, 2, 1, 5}, {1, 10, 1, 5, 5}, true};
  EXPECT_EQ(ShownOf(SentView::kWhole, row), row.all);
  EXPECT_EQ(ShownOf(SentView::kInTheOpen, row), row.open);
  EXPECT_TRUE(ShownOf(SentView::kNothing, row).empty());
}

}  // namespace
}  // namespace giftwall::domain
