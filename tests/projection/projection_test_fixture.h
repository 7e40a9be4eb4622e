// What the tests of the projection's use cases share: a fresh database, the projection wired on
// it, and ways to look at its rows.
#ifndef GIFTWALL_TESTS_PROJECTION_PROJECTION_TEST_FIXTURE_H_
#define GIFTWALL_TESTS_PROJECTION_PROJECTION_TEST_FIXTURE_H_

#include <memory>
#include <string>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "tests/support/test_database.h"
#include "tests/support/test_projection.h"

namespace giftwall::projection {

inline constexpr int64_t kT0 = 1'700'000'000'000;

inline domain::GiftEvent Event(const std::string& event_id, const std::string& payload,
                               int64_t occurred_at_ms = kT0, const std::string& app_code = "demo") {
  return domain::GiftEvent{app_code, event_id, payload, occurred_at_ms};
}

class ProjectionTest : public ::testing::Test {
 protected:
  ProjectionTest() : pool_(db_.PoolOptions()) { Reset(testing::FastRetry()); }

  void Reset(domain::RetryPolicy retry, int64_t max_wall_gifts = domain::kDefaultMaxWallGifts) {
    projection_ = std::make_unique<testing::TestProjection>(pool_, retry, max_wall_gifts);
  }

  domain::ProjectionOutcome Project(const domain::GiftEvent& event,
                                    domain::ProjectedBy by = domain::ProjectedBy::kRelay) {
    absl::StatusOr<domain::ProjectionResult> result = projection_->projector.Project(event, by);
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? result->outcome : domain::ProjectionOutcome::kIgnored;
  }

  std::string Ledger(const std::string& event_id, const std::string& column,
                     const std::string& app_code = "demo") {
    return db_.QueryString(absl::StrFormat(
        "SELECT CAST(%s AS CHAR) FROM wallet_projection_events WHERE projection_name = "
        "'user_gift_wall' AND app_code = '%s' AND event_id = '%s'",
        column, app_code, event_id));
  }
  int64_t GiftCount(int64_t user_id, const std::string& gift_id) {
    return db_.QueryInt(absl::StrFormat(
        "SELECT gift_count FROM user_gift_wall WHERE app_code = 'demo' AND user_id = %d AND "
        "gift_id = '%s'",
        user_id, gift_id));
  }
  int64_t WallRows() { return db_.QueryInt("SELECT COUNT(*) FROM user_gift_wall"); }
  int64_t DbNowMs() { return db_.QueryInt("SELECT CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)"); }
  void InsertLedger(const std::string& event_id, const std::string& status, int retry_count,
                    int64_t locked_until_ms, int64_t next_attempt_at_ms) {
    db_.Exec(absl::StrFormat(
        "INSERT INTO wallet_projection_events (projection_name, app_code, event_id, status, "
        "retry_count, locked_by, locked_until_ms, next_attempt_at_ms, created_at_ms, "
        "updated_at_ms) VALUES ('user_gift_wall', 'demo', '%s', '%s', %d, 'other-worker', %d, "
        "%d, 1, 1)",
        event_id, status, retry_count, locked_until_ms, next_attempt_at_ms));
  }

  testing::TestDatabase db_;
  storage::ConnectionPool pool_;
  std::unique_ptr<testing::TestProjection> projection_;
};

}  // namespace giftwall::projection

#endif  // GIFTWALL_TESTS_PROJECTION_PROJECTION_TEST_FIXTURE_H_
