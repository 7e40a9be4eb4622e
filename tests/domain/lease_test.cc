#include "server/domain/lease.h"

#include "gtest/gtest.h"

namespace giftwall::domain {
namespace {

using Kind = LeaseDecision::Kind;

constexpr int64_t kNow = 1'000'000;
constexpr int64_t kFor = 30'000;

TEST(DecideLease, ALeaseNeverTakenGoesToTheFirstAskerWithTokenOne) {
  const LeaseDecision d = DecideLease(LeaseRow{}, "a", kNow, kFor);
  EXPECT_EQ(d.kind, Kind::kTake);
  EXPECT_EQ(d.row.holder, "a");
  EXPECT_EQ(d.row.token, 1);
  EXPECT_EQ(d.row.expires_at_ms, kNow + kFor);
}

TEST(DecideLease, ARunningLeaseOfAnotherIsRefusedAndLeftAsItIs) {
  const LeaseRow held{"a", 4, kNow + 1};
  const LeaseDecision d = DecideLease(held, "b", kNow, kFor);
  EXPECT_EQ(d.kind, Kind::kRefused);
  EXPECT_EQ(d.row.holder, "a");
  EXPECT_EQ(d.row.token, 4);
  EXPECT_EQ(d.row.expires_at_ms, kNow + 1);
  EXPECT_EQ(DescribeHolder(d.row, kNow), "held by a for another 1 ms");
}

// Expired (a holder that died, or paused past its lease) or released: the next asker takes it
// with a token above the old one, so that a write fenced by the old token fails.
TEST(DecideLease, AnExpiredOrReleasedLeaseIsTakenWithTheNextToken) {
  for (const int64_t expires : {kNow, kNow - 1, int64_t{0}}) {
    const LeaseDecision d = DecideLease(LeaseRow{"a", 4, expires}, "b", kNow, kFor);
    EXPECT_EQ(d.kind, Kind::kTake) << expires;
    EXPECT_EQ(d.row.holder, "b");
    EXPECT_EQ(d.row.token, 5);
    EXPECT_EQ(d.row.expires_at_ms, kNow + kFor);
  }
}

// Its holder renews it, keeping the token, also after it expired while nobody took it: no write
// was made under another token meanwhile.
TEST(DecideLease, ItsHolderRenewsItWithTheSameToken) {
  for (const int64_t expires : {kNow + 5, kNow - 5}) {
    const LeaseDecision d = DecideLease(LeaseRow{"a", 4, expires}, "a", kNow, kFor);
    EXPECT_EQ(d.kind, Kind::kRenew) << expires;
    EXPECT_EQ(d.row.token, 4);
    EXPECT_EQ(d.row.expires_at_ms, kNow + kFor);
  }
}

}  // namespace
}  // namespace giftwall::domain
