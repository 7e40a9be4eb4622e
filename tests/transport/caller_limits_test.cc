#include "server/transport/caller_limits.h"

#include <memory>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace giftwall::transport {
namespace {

using ::testing::HasSubstr;
using Permit = std::shared_ptr<const CallerLimits::Permit>;

const absl::Time kStart = absl::FromUnixSeconds(1'700'000'000);

TEST(CallerLimits, CallsInFlightPastTheLimitAreRefusedUntilOneEnds) {
  CallerLimits limits;
  Permit a, b, c;
  ASSERT_TRUE(limits.Admit("relay", 2, 0, kStart, &a).ok());
  ASSERT_TRUE(limits.Admit("relay", 2, 0, kStart, &b).ok());
  const absl::Status third = limits.Admit("relay", 2, 0, kStart, &c);
  EXPECT_EQ(third.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(third.message(), HasSubstr("caller \"relay\" has 2 calls in flight"));
  EXPECT_EQ(c, nullptr);
  EXPECT_TRUE(limits.Admit("feed", 2, 0, kStart, &c).ok()) << "each caller has its own";
  EXPECT_EQ(limits.InFlight("relay"), 2);
  a.reset();
  EXPECT_EQ(limits.InFlight("relay"), 1);
  EXPECT_TRUE(limits.Admit("relay", 2, 0, kStart, &a).ok());
}

TEST(CallerLimits, APermitMayOutliveTheLimits) {
  Permit permit;
  {
    CallerLimits limits;
    ASSERT_TRUE(limits.Admit("relay", 1, 0, kStart, &permit).ok());
  }
  permit.reset();  // no use after free (ASan would say)
}

TEST(CallerLimits, CallsASecondRefillAtTheirRateUpToOneSecondsWorth) {
  CallerLimits limits;
  Permit permit;
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(limits.Admit("feed", 0, 10, kStart, &permit).ok()) << i;
  }
  const absl::Status over = limits.Admit("feed", 0, 10, kStart, &permit);
  EXPECT_EQ(over.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(over.message(), HasSubstr("past its 10 calls a second"));
  // A tenth of a second later, one more.
  EXPECT_TRUE(limits.Admit("feed", 0, 10, kStart + absl::Milliseconds(100), &permit).ok());
  EXPECT_FALSE(limits.Admit("feed", 0, 10, kStart + absl::Milliseconds(100), &permit).ok());
  // An idle minute buys one second's worth, not sixty.
  int admitted = 0;
  while (limits.Admit("feed", 0, 10, kStart + absl::Minutes(1), &permit).ok()) ++admitted;
  EXPECT_EQ(admitted, 10);
}

TEST(CallerLimits, AClockSteppedBackIsNoDebt) {
  CallerLimits limits;
  Permit permit;
  ASSERT_TRUE(limits.Admit("feed", 0, 10, kStart, &permit).ok());
  // An hour back, then a second forward of that: a full second's worth again.
  ASSERT_TRUE(limits.Admit("feed", 0, 10, kStart - absl::Hours(1), &permit).ok());
  int admitted = 0;
  while (limits.Admit("feed", 0, 10, kStart - absl::Hours(1) + absl::Seconds(1), &permit).ok()) {
    ++admitted;
  }
  EXPECT_EQ(admitted, 10);
}

TEST(CallerLimits, ZeroMeansNoLimit) {
  CallerLimits limits;
  std::vector<Permit> permits(1000);
  for (Permit& p : permits) ASSERT_TRUE(limits.Admit("relay", 0, 0, kStart, &p).ok());
}

}  // namespace
}  // namespace giftwall::transport
