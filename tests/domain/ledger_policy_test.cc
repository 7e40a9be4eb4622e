// The ledger's decisions, without a database (DESIGN §2.3, 2.7).
#include "server/domain/ledger_policy.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace giftwall::domain {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kNow = 1'700'000'000'000;

LedgerRow Row(LedgerStatus status, int retry_count = 0, int64_t locked_until_ms = 0) {
  return LedgerRow{status, retry_count, "other-worker", locked_until_ms, "why it died"};
}

TEST(DecideClaim, Rule3_AnEventWithoutALedgerRowIsClaimedByInsertingOne) {
  for (ProjectedBy by : {ProjectedBy::kRelay, ProjectedBy::kScan, ProjectedBy::kRequeue}) {
    EXPECT_EQ(DecideClaim(nullptr, by, kNow).action, ClaimAction::kInsert);
  }
}

TEST(DecideClaim, Rule2_DoneIsNeverClaimedAgainByAnyPath) {
  const LedgerRow done = Row(LedgerStatus::kDone);
  for (ProjectedBy by : {ProjectedBy::kRelay, ProjectedBy::kScan, ProjectedBy::kRequeue}) {
    EXPECT_EQ(DecideClaim(&done, by, kNow).action, ClaimAction::kAlreadyProjected);
  }
}

TEST(DecideClaim, Rule2_DeadAnswersItsReasonAndOnlyARequeueReclaimsIt) {
  const LedgerRow dead = Row(LedgerStatus::kDead);
  for (ProjectedBy by : {ProjectedBy::kRelay, ProjectedBy::kScan}) {
    const ClaimDecision d = DecideClaim(&dead, by, kNow);
    EXPECT_EQ(d.action, ClaimAction::kDead);
    EXPECT_EQ(d.detail, "why it died");
  }
  EXPECT_EQ(DecideClaim(&dead, ProjectedBy::kRequeue, kNow).action, ClaimAction::kReclaim);
}

TEST(DecideClaim, Rule3_AFailedRowIsReclaimedAtAnyTime) {
  // The relay may redeliver before the backoff the scanner waits for: it paces itself.
  const LedgerRow failed = Row(LedgerStatus::kFailed, 3);
  EXPECT_EQ(DecideClaim(&failed, ProjectedBy::kRelay, kNow).action, ClaimAction::kReclaim);
}

TEST(DecideClaim, Rule3_AProcessingRowIsLeasedUntilItsLeaseExpires) {
  const LedgerRow live = Row(LedgerStatus::kProcessing, 0, kNow + 1500);
  const ClaimDecision d = DecideClaim(&live, ProjectedBy::kRelay, kNow);
  EXPECT_EQ(d.action, ClaimAction::kLeased);
  EXPECT_THAT(d.detail, HasSubstr("other-worker"));
  EXPECT_THAT(d.detail, HasSubstr("1500 ms"));
  const LedgerRow expired = Row(LedgerStatus::kProcessing, 0, kNow);
  EXPECT_EQ(DecideClaim(&expired, ProjectedBy::kScan, kNow).action, ClaimAction::kReclaim);
}

TEST(DecideFailure, Rule7_EachFailureCountsAndBacksOffUntilMaxRetriesMakesItDead) {
  RetryPolicy policy;
  policy.max_retries = 3;
  policy.backoff_base = absl::Seconds(10);
  FailureRecord first = DecideFailure(0, policy, /*jitter=*/1.0);
  EXPECT_EQ(first.status, LedgerStatus::kFailed);
  EXPECT_EQ(first.retry_count, 1);
  EXPECT_EQ(first.retry_after, absl::Seconds(10));
  FailureRecord second = DecideFailure(1, policy, /*jitter=*/0.0);
  EXPECT_EQ(second.status, LedgerStatus::kFailed);
  EXPECT_EQ(second.retry_count, 2);
  EXPECT_EQ(second.retry_after, absl::Seconds(10));  // half of 20s, without jitter
  FailureRecord third = DecideFailure(2, policy, 0.5);
  EXPECT_EQ(third.status, LedgerStatus::kDead);
  EXPECT_EQ(third.retry_count, 3);
  EXPECT_EQ(third.retry_after, absl::ZeroDuration());
}

TEST(LedgerPolicy, TheLedgerAloneAnswersDoneDeadAndLeasedEvents) {
  EXPECT_EQ(AnsweredByLedger({ClaimAction::kAlreadyProjected, ""})->outcome,
            ProjectionOutcome::kAlreadyProjected);
  const std::optional<ProjectionResult> dead = AnsweredByLedger({ClaimAction::kDead, "why"});
  EXPECT_EQ(dead->outcome, ProjectionOutcome::kDead);
  EXPECT_EQ(dead->detail, "why");
  EXPECT_EQ(AnsweredByLedger({ClaimAction::kLeased, "held by a"})->detail, "held by a");
  EXPECT_FALSE(AnsweredByLedger({ClaimAction::kInsert, ""}).has_value());
  EXPECT_FALSE(AnsweredByLedger({ClaimAction::kReclaim, ""}).has_value());
}

}  // namespace
}  // namespace giftwall::domain
