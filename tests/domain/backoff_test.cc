#include "server/domain/backoff.h"

#include "gtest/gtest.h"

namespace giftwall::domain {
namespace {

TEST(FailureBackoff, DoublesPerFailureWithinJitterBounds) {
  RetryPolicy policy;
  policy.backoff_base = absl::Seconds(2);
  policy.backoff_cap = absl::Minutes(10);
  for (int failures = 1; failures <= 6; ++failures) {
    const absl::Duration full = absl::Seconds(2) * (1 << (failures - 1));
    EXPECT_EQ(FailureBackoff(policy, failures, 0.0), full / 2) << failures;
    EXPECT_EQ(FailureBackoff(policy, failures, 1.0), full) << failures;
    const absl::Duration mid = FailureBackoff(policy, failures, 0.5);
    EXPECT_GT(mid, full / 2);
    EXPECT_LT(mid, full);
  }
}

TEST(FailureBackoff, IsCapped) {
  RetryPolicy policy;
  policy.backoff_base = absl::Seconds(1);
  policy.backoff_cap = absl::Seconds(60);
  EXPECT_EQ(FailureBackoff(policy, 50, 1.0), absl::Seconds(60));
  EXPECT_EQ(FailureBackoff(policy, 1000, 0.0), absl::Seconds(30));
}

TEST(FailureBackoff, ClampsJitterAndFailures) {
  RetryPolicy policy;
  EXPECT_EQ(FailureBackoff(policy, 0, 2.0), policy.backoff_base);
  EXPECT_EQ(FailureBackoff(policy, 1, -1.0), policy.backoff_base / 2);
}

TEST(ContentionBackoff, GrowsWithAttemptsAndStaysSmall) {
  RetryPolicy policy;
  policy.contention_base = absl::Milliseconds(10);
  EXPECT_EQ(ContentionBackoff(policy, 2, 0.0), absl::Milliseconds(5));
  EXPECT_EQ(ContentionBackoff(policy, 2, 1.0), absl::Milliseconds(15));
  EXPECT_EQ(ContentionBackoff(policy, 6, 1.0), absl::Milliseconds(75));
  EXPECT_LT(ContentionBackoff(policy, 3, 0.2), ContentionBackoff(policy, 5, 0.2));
}

}  // namespace
}  // namespace giftwall::domain
