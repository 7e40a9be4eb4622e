#include "server/domain/sponsor.h"

#include <limits>
#include <vector>

#include "gtest/gtest.h"

namespace giftwall::domain {
namespace {

SenderStats Sent(int64_t user, int64_t count, int64_t last_ms) {
  return SenderStats{user, count, count * 10, 1, last_ms};
}

TEST(SenderStanding, Rule10_TheSponsorNeedsNothingAndRanksFirst) {
  const SenderStanding standing = StandingOf(7, Sent(7, 5, 100), Sent(7, 5, 100), std::nullopt);
  EXPECT_EQ(standing.needed_to_sponsor, 0);
  EXPECT_EQ(standing.rank, 1);
  EXPECT_FALSE(standing.rank_beyond_limit);
}

// A tie goes to whoever reached the count first: a sender level with the 冠名 reached it later
// (or the 冠名 would be them), and their next gift comes later still, so they need one more.
TEST(SenderStanding, Rule10_ATieIsNotEnoughSoASenderNeedsOneMoreThanTheSponsor) {
  SenderStanding level = StandingOf(8, Sent(8, 5, 200), Sent(7, 5, 100), 1);
  EXPECT_EQ(level.needed_to_sponsor, 1);
  EXPECT_EQ(level.rank, 2);
  SenderStanding behind = StandingOf(9, Sent(9, 2, 50), Sent(7, 5, 100), 4);
  EXPECT_EQ(behind.needed_to_sponsor, 4);
  EXPECT_EQ(behind.rank, 5);
  EXPECT_EQ(behind.sender.sent_count, 2);
  EXPECT_EQ(behind.sponsor->user_id, 7);
}

TEST(SenderStanding, ASenderWhoSentNoneNeedsTheSponsorsCountPlusOneAndHasNoRank) {
  SenderStanding none = StandingOf(9, std::nullopt, Sent(7, 5, 100), std::nullopt);
  EXPECT_EQ(none.sender.user_id, 9);
  EXPECT_EQ(none.sender.sent_count, 0);
  EXPECT_EQ(none.needed_to_sponsor, 6);
  EXPECT_EQ(none.rank, 0);
  EXPECT_FALSE(none.rank_beyond_limit);
  // A gift nobody sent yet: one gift makes a sponsor.
  SenderStanding first = StandingOf(9, std::nullopt, std::nullopt, std::nullopt);
  EXPECT_FALSE(first.sponsor.has_value());
  EXPECT_EQ(first.needed_to_sponsor, 1);
}

TEST(SenderStanding, ARankIsExactUpToTheLimitAndOnlySaidToBeBeyondIt) {
  SenderStanding last_exact = StandingOf(9, Sent(9, 1, 1), Sent(7, 5, 100), kExactRankLimit - 1);
  EXPECT_EQ(last_exact.rank, kExactRankLimit);
  EXPECT_FALSE(last_exact.rank_beyond_limit);
  SenderStanding beyond = StandingOf(9, Sent(9, 1, 1), Sent(7, 5, 100), kExactRankLimit);
  EXPECT_EQ(beyond.rank, 0);
  EXPECT_TRUE(beyond.rank_beyond_limit);
}

TEST(SenderStanding, TheCountNeededSaturatesRatherThanWraps) {
  const int64_t max = std::numeric_limits<int64_t>::max();
  SenderStanding standing =
      StandingOf(9, std::nullopt, SenderStats{7, max, max, 1, 1}, std::nullopt);
  EXPECT_EQ(standing.needed_to_sponsor, max);
}

// A senders page's cursor is where the next page starts without naming a sender (DESIGN §2.18):
// the last sender's (count, time) and how many of that tie were shown, across pages too.
TEST(SenderCursor, Rule18_TheCursorCountsTheTieShownAndNamesNoSender) {
  const std::vector<SenderStats> first = {Sent(1, 9, 10), Sent(2, 5, 40), Sent(3, 5, 40)};
  const SenderCursor after_first = SenderCursorAfter(std::nullopt, first);
  EXPECT_EQ(after_first.sent_count, 5);
  EXPECT_EQ(after_first.last_sent_at_ms, 40);
  EXPECT_EQ(after_first.tied_shown, 2);
  // The next page is all of the same tie: the count goes on.
  const std::vector<SenderStats> second = {Sent(4, 5, 40), Sent(5, 5, 40)};
  EXPECT_EQ(SenderCursorAfter(after_first, second).tied_shown, 4);
  // A page ending on another tie starts counting again.
  const std::vector<SenderStats> third = {Sent(6, 5, 40), Sent(7, 5, 41)};
  const SenderCursor after_third = SenderCursorAfter(after_first, third);
  EXPECT_EQ(after_third.last_sent_at_ms, 41);
  EXPECT_EQ(after_third.tied_shown, 1);
  // Who the senders are does not matter: the same counts give the same cursor.
  const std::vector<SenderStats> others = {Sent(11, 9, 10), Sent(12, 5, 40), Sent(13, 5, 40)};
  const SenderCursor same = SenderCursorAfter(std::nullopt, others);
  EXPECT_EQ(EncodeSenderPageToken({"demo", 1, "rose", after_first, ""}),
            EncodeSenderPageToken({"demo", 1, "rose", same, ""}));
}

}  // namespace
}  // namespace giftwall::domain
