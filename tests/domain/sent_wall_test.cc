// The sent wall's fold and who sees it (DESIGN §2.19), without a database: the deltas a group
// adds, the merge, the sum verify compares, and the viewer rules.
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

// The sent rows that the sender rows of `walls` make: what verify sums in SQL.
SentWall SumOf(const WallDeltas& walls) {
  SentWall sum;
  for (const auto& [key, row] : walls) {
    if (!key.period.empty()) continue;
    for (const auto& [sender, sent] : row.senders) {
      EXPECT_TRUE(MergeSentRow(SentOf(sent), &sum[SentKey{sender, key.gift_id}]).ok());
    }
  }
  return sum;
}

TEST(SentWallTest, Rule19_EachSendCountsOnceAndEachReceiverOnceWhateverTheGroups) {
  const std::vector<FoldEvent> events = {Gift("e1", 100, 1, 7, "rose", 1),
                                         Gift("e2", 300, 2, 7, "rose", 2),
                                         Gift("e3", 200, 1, 7, "rose", 3),
                                         Gift("e4", 50, 1, 8, "rose", 1),
                                         Gift("e5", 400, 3, 7, "car", 1, /*anonymous=*/true),
                                         Gift("e6", 500, 1, 7, "rose", 1)};
  // Any split into groups, merged one after another into the stored rows, gives what one fold
  // of every event gives.
  std::mt19937 rng(19);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<FoldEvent> shuffled = events;
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    WallDeltas stored_walls;
    SentWall stored_sent;
    for (size_t begin = 0; begin < shuffled.size();) {
      const size_t end = std::min(shuffled.size(), begin + 1 + rng() % 3);
      absl::StatusOr<WallDeltas> deltas =
          FoldDeltas(std::vector<FoldEvent>(shuffled.begin() + begin, shuffled.begin() + end));
      ASSERT_TRUE(deltas.ok());
      std::map<WallKey, std::map<int64_t, SenderRow>> merged;
      for (const auto& [key, delta] : *deltas) {
        ASSERT_TRUE(MergeWallRow(delta, &stored_walls[key]).ok());
        for (const auto& [sender, row] : delta.senders) {
          merged[key][sender] = stored_walls[key].senders.at(sender);
        }
      }
      absl::StatusOr<SentWall> sent = SentDeltasOf(*deltas, merged);
      ASSERT_TRUE(sent.ok());
      for (const auto& [key, row] : *sent) {
        ASSERT_TRUE(MergeSentRow(row, &stored_sent[key]).ok());
      }
      begin = end;
    }
    EXPECT_TRUE(DiffSentWalls(SumOf(stored_walls), stored_sent).empty());
    const SentRow& rose = stored_sent.at(SentKey{7, "rose"});
    EXPECT_EQ(rose, (SentRow{7, 70, 2, 100, 500, false}));
    EXPECT_EQ(stored_sent.at(SentKey{8, "rose"}), (SentRow{1, 10, 1, 50, 50, false}));
    EXPECT_EQ(stored_sent.at(SentKey{7, "car"}), (SentRow{1, 10, 1, 400, 400, true}));
  }
}

TEST(SentWallTest, Rule19_PeriodRowsAndSenderlessGiftsAreNotSent) {
  FoldEvent e = Gift("e1", 100, 1, 7, "rose", 1);
  e.periods = {"month:2026-12"};
  FoldEvent nobody = Gift("e2", 100, 1, 0, "rose", 1);
  absl::StatusOr<WallDeltas> deltas = FoldDeltas({e, nobody});
  ASSERT_TRUE(deltas.ok());
  std::map<WallKey, std::map<int64_t, SenderRow>> merged;
  for (const auto& [key, delta] : *deltas) merged[key] = delta.senders;
  absl::StatusOr<SentWall> sent = SentDeltasOf(*deltas, merged);
  ASSERT_TRUE(sent.ok());
  ASSERT_EQ(sent->size(), 1u);
  EXPECT_EQ(sent->begin()->second, (SentRow{1, 10, 1, 100, 100, false}));
}

TEST(SentWallTest, Rule19_AReceiverAlreadySentToIsNotCountedAgain) {
  absl::StatusOr<WallDeltas> deltas = FoldDeltas({Gift("e1", 100, 1, 7, "rose", 2)});
  ASSERT_TRUE(deltas.ok());
  // The sender row existed: after the merge it holds more than the delta.
  std::map<WallKey, std::map<int64_t, SenderRow>> merged;
  merged[WallKey{1, "rose"}][7] = SenderRow{5, 50, 10, 100, false};
  absl::StatusOr<SentWall> sent = SentDeltasOf(*deltas, merged);
  ASSERT_TRUE(sent.ok());
  EXPECT_EQ(sent->at(SentKey{7, "rose"}).receiver_count, 0);
  EXPECT_EQ(sent->at(SentKey{7, "rose"}).sent_count, 2);
}

TEST(SentWallTest, Rule19_OverflowIsOutOfRange) {
  SentRow stored{INT64_MAX, 0, 1, 1, 1, false};
  EXPECT_EQ(MergeSentRow(SentRow{1, 0, 0, 1, 1, false}, &stored).code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(stored.sent_count, INT64_MAX);
}

TEST(SentWallTest, Rule19_DiffNamesTheSenderTheGiftAndTheField) {
  SentWall expected = {{SentKey{7, "rose"}, SentRow{2, 20, 1, 1, 2, false}},
                       {SentKey{8, "car"}, SentRow{1, 10, 1, 5, 5, false}}};
  SentWall actual = {{SentKey{7, "rose"}, SentRow{3, 20, 1, 1, 2, false}},
                     {SentKey{9, "car"}, SentRow{1, 10, 1, 5, 5, false}}};
  int64_t rows = 0;
  const std::vector<WallDifference> diff = DiffSentWalls(expected, actual, &rows);
  EXPECT_EQ(rows, 3);
  ASSERT_EQ(diff.size(), 3u);
  EXPECT_EQ(diff[0].sender_user_id, 7);
  EXPECT_EQ(diff[0].field, "sent_count");
  EXPECT_EQ(diff[0].expected, "2");
  EXPECT_EQ(diff[0].actual, "3");
  EXPECT_EQ(diff[0].period, kSentWallName);
  EXPECT_EQ(diff[1].sender_user_id, 8);
  EXPECT_EQ(diff[1].actual, "absent");
  EXPECT_EQ(diff[2].sender_user_id, 9);
  EXPECT_EQ(diff[2].expected, "absent");
}

TEST(SentWallTest, Rule19_OnlyTheSenderAndAModeratorSeeAnonymousSends) {
  EXPECT_EQ(SentViewFor(Viewer{7, false}, 7, /*sender_opted_out=*/true), SentView::kWhole);
  EXPECT_EQ(SentViewFor(Viewer{0, true}, 7, true), SentView::kWhole);
  EXPECT_EQ(SentViewFor(Viewer{8, false}, 7, false), SentView::kInTheOpen);
  EXPECT_EQ(SentViewFor(Viewer{0, false}, 7, false), SentView::kInTheOpen);
  EXPECT_EQ(SentViewFor(Viewer{8, false}, 7, true), SentView::kNothing);
  EXPECT_TRUE(Shows(SentView::kWhole, /*anonymous=*/true));
  EXPECT_TRUE(Shows(SentView::kInTheOpen, false));
  EXPECT_FALSE(Shows(SentView::kInTheOpen, true));
  EXPECT_FALSE(Shows(SentView::kNothing, false));
}

}  // namespace
}  // namespace giftwall::domain
