#include "client/progress_bar.h"

#include <string>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace giftwall::client {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(FormatProgressTest, Start) {
  EXPECT_EQ(FormatProgress("rebuilding", 0, 10000, absl::Seconds(2), 20),
            "rebuilding [....................]   0% 0/10000  0.0/s  ETA -");
}

TEST(FormatProgressTest, Partway) {
  // 4500 in 5s is 900/s; 5500 left takes 6.1s, shown rounded up.
  EXPECT_EQ(FormatProgress("rebuilding", 4500, 10000, absl::Seconds(5), 20),
            "rebuilding [#########...........]  45% 4500/10000  900/s  ETA 7s");
}

TEST(FormatProgressTest, DefaultWidthIsThirty) {
  const std::string line = FormatProgress("x", 1, 2, absl::Seconds(1));
  EXPECT_THAT(line, HasSubstr("[###############...............]  50%"));
}

TEST(FormatProgressTest, Done) {
  EXPECT_EQ(FormatProgress("rebuilding", 10000, 10000, absl::Seconds(4), 20),
            "rebuilding [####################] 100% 10000/10000  2500/s  ETA 0s");
}

TEST(FormatProgressTest, UnknownTotalShowsCountAndRateOnly) {
  const std::string line = FormatProgress("catching up", 120, 0, absl::Seconds(60));
  EXPECT_EQ(line, "catching up 120  2.0/s");
  EXPECT_THAT(line, Not(HasSubstr("[")));
  EXPECT_THAT(line, Not(HasSubstr("%")));
  EXPECT_THAT(line, Not(HasSubstr("ETA")));
}

TEST(FormatProgressTest, ZeroElapsedDoesNotDivideByZero) {
  EXPECT_EQ(FormatProgress("r", 5, 10, absl::ZeroDuration(), 10),
            "r [#####.....]  50% 5/10  -/s  ETA -");
  EXPECT_EQ(FormatProgress("r", 5, 0, absl::ZeroDuration(), 10), "r 5  -/s");
  EXPECT_EQ(FormatProgress("r", 0, 0, absl::ZeroDuration(), 10), "r 0  -/s");
}

TEST(FormatProgressTest, DoneBeyondTotalClampsToFull) {
  // Events that arrived after the total was taken.
  EXPECT_EQ(FormatProgress("catching up", 150, 100, absl::Seconds(10), 10),
            "catching up [##########] 100% 150/100  15/s  ETA 0s");
}

TEST(FormatProgressTest, NegativeDoneCountsAsZero) {
  EXPECT_EQ(FormatProgress("r", -3, 10, absl::Seconds(1), 10),
            "r [..........]   0% 0/10  0.0/s  ETA -");
}

TEST(FormatShortDurationTest, TwoLargestUnits) {
  EXPECT_EQ(FormatShortDuration(absl::Milliseconds(250)), "250ms");
  EXPECT_EQ(FormatShortDuration(absl::Seconds(45)), "45s");
  EXPECT_EQ(FormatShortDuration(absl::Seconds(192)), "3m12s");
  EXPECT_EQ(FormatShortDuration(absl::Minutes(65) + absl::Seconds(9)), "1h5m");
  EXPECT_EQ(FormatShortDuration(absl::Hours(51)), "2d3h");
  EXPECT_EQ(FormatShortDuration(-absl::Seconds(3)), "0ms");
}

}  // namespace
}  // namespace giftwall::client
