#include "server/domain/scan_horizon.h"

#include "gtest/gtest.h"

namespace giftwall::domain {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

TEST(ScanHorizon, FirstPassIsAFullSweep) {
  ScanHorizon horizon(absl::Minutes(5), absl::Hours(1));
  EXPECT_EQ(horizon.Start(kNow), kBeginningOfHistory);
}

TEST(ScanHorizon, TrailsThePassesByTheSafetyMargin) {
  ScanHorizon horizon(absl::Minutes(5), absl::Hours(1));
  horizon.Start(kNow);
  horizon.Advance(10'000'000, /*newest_ms=*/10'000'000);
  EXPECT_EQ(horizon.Start(kNow + absl::Seconds(2)), 10'000'000 - 300'000);
  // Never moves back: a pass that stopped earlier (an error, a held event) does not undo it.
  horizon.Advance(5'000'000, /*newest_ms=*/10'002'000);
  EXPECT_EQ(horizon.Start(kNow + absl::Seconds(4)), 10'000'000 - 300'000);
  horizon.Advance(20'000'000, /*newest_ms=*/20'000'000);
  EXPECT_EQ(horizon.Start(kNow + absl::Seconds(6)), 20'000'000 - 300'000);
}

TEST(ScanHorizon, DropsToTheBeginningOfHistoryForAFullSweepEveryInterval) {
  ScanHorizon horizon(absl::Minutes(5), absl::Hours(1));
  horizon.Start(kNow);
  horizon.Advance(10'000'000, /*newest_ms=*/10'000'000);
  EXPECT_NE(horizon.Start(kNow + absl::Minutes(59)), kBeginningOfHistory);
  EXPECT_EQ(horizon.Start(kNow + absl::Minutes(61)), kBeginningOfHistory);
  // The sweep then pages forward like any pass.
  horizon.Advance(1'000'000, /*newest_ms=*/1'000'000);
  EXPECT_EQ(horizon.Start(kNow + absl::Minutes(62)), 1'000'000 - 300'000);
}

TEST(ScanHorizon, DeepInHistoryItDoesNotTrail) {
  // A sweep paging through old events moves forward by whole windows, however short they are.
  ScanHorizon horizon(absl::Minutes(5), absl::Hours(1));
  horizon.Start(kNow);
  horizon.Advance(1'000, /*newest_ms=*/10'000'000);
  EXPECT_EQ(horizon.Start(kNow + absl::Seconds(1)), 1'000);
  horizon.Advance(2'000, /*newest_ms=*/10'000'000);
  EXPECT_EQ(horizon.Start(kNow + absl::Seconds(2)), 2'000);
}

TEST(ScanHorizon, APassCutShortByItsLimitStillKeepsTheMargin) {
  // A pass that stops at its candidate limit resumes at its last candidate: when that is newer
  // than the margin, the horizon stops at the margin, so that an event committed late behind the
  // candidate (a wallet clock skew, a long transaction) is found by the next pass.
  ScanHorizon horizon(absl::Minutes(5), absl::Hours(1));
  horizon.Start(kNow);
  horizon.Advance(9'990'000, /*newest_ms=*/10'000'000);
  EXPECT_EQ(horizon.Start(kNow + absl::Seconds(1)), 10'000'000 - 300'000);
  horizon.Advance(9'995'000, /*newest_ms=*/10'001'000);
  EXPECT_EQ(horizon.Start(kNow + absl::Seconds(2)), 10'001'000 - 300'000);
}

TEST(ScanHorizon, ASweepThroughRowsCreatedBeforeTheEpochNeverOverflows) {
  // Outbox rows may say created_at_ms 0 or negative: the sweep reads them like any other, and
  // trailing one by the margin stays at the beginning of history.
  ScanHorizon horizon(absl::Minutes(5), absl::Hours(1));
  horizon.Start(kNow);
  horizon.Advance(kBeginningOfHistory + 10, /*newest_ms=*/kBeginningOfHistory + 10);
  EXPECT_EQ(horizon.Start(kNow + absl::Seconds(1)), kBeginningOfHistory);
  horizon.Advance(-5, /*newest_ms=*/10'000'000);
  EXPECT_EQ(horizon.Start(kNow + absl::Seconds(2)), -5);
}

}  // namespace
}  // namespace giftwall::domain
