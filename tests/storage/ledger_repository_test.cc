#include "server/storage/ledger_repository.h"

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/projection/group_projector.h"
#include "tests/support/test_database.h"

namespace giftwall::storage {
namespace {

using domain::GiftEvent;
using domain::ProjectedBy;
using ::testing::ElementsAre;

constexpr int64_t kT0 = 1'700'000'000'000;

class LedgerRepositoryTest : public ::testing::Test {
 protected:
  LedgerRepositoryTest()
      : pool_(db_.PoolOptions()), ledger_(pool_), projection_(pool_, domain::RetryPolicy()) {}
  void Project(const std::string& id, const std::string& payload, ProjectedBy by) {
    absl::StatusOr<domain::ProjectionResult> r =
        projection_.Project(GiftEvent{"demo", id, payload, kT0}, by);
    ASSERT_TRUE(r.ok()) << r.status();
  }

  testing::TestDatabase db_;
  ConnectionPool pool_;
  LedgerRepository ledger_;
  projection::GroupProjector projection_;
};

TEST_F(LedgerRepositoryTest, StatusCountsEachStateAndTheScansRecoveries) {
  Project("D1", testing::GiftPayloadJson(7, "rose", 1), ProjectedBy::kRelay);
  Project("D2", testing::GiftPayloadJson(7, "rose", 1), ProjectedBy::kScan);
  Project("X1", R"({"gift_id":"rose"})", ProjectedBy::kRelay);  // dead
  db_.InsertOutbox("demo", "U1", "WalletGiftDebited", testing::GiftPayloadJson(7, "rose", 1), kT0);
  db_.InsertOutbox("demo", "U2", "WalletRecharged", "{}", kT0);  // not a gift: not lag
  db_.Exec(
      "INSERT INTO wallet_projection_events (projection_name, app_code, event_id, status, "
      "created_at_ms, updated_at_ms) VALUES ('user_gift_wall', 'demo', 'F1', 'failed', 1, 1)");
  db_.InsertOutbox("demo", "F1", "WalletGiftDebited", testing::GiftPayloadJson(7, "rose", 1),
                   kT0 - 5000);
  absl::StatusOr<ProjectionStatus> status = ledger_.Status("demo");
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->done, 2);
  EXPECT_EQ(status->dead, 1);
  EXPECT_EQ(status->failed, 1);
  EXPECT_EQ(status->recovered_by_scan, 1);
  EXPECT_EQ(status->unprojected, 2);  // U1 (no ledger row) and F1 (failed)
  EXPECT_GT(status->oldest_unprojected_age_ms, 0);
  EXPECT_GE(status->oldest_dead_age_ms, 0);
  absl::StatusOr<ProjectionStatus> other = ledger_.Status("other");
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->done + other->unprojected, 0);
}

TEST_F(LedgerRepositoryTest, EventReturnsTheLedgerRowOrNothing) {
  Project("E1", testing::GiftPayloadJson(7, "rose", 1), ProjectedBy::kRelay);
  absl::StatusOr<std::optional<EventStatus>> event = ledger_.Event("demo", "E1");
  ASSERT_TRUE(event.ok()) << event.status();
  ASSERT_TRUE(event->has_value());
  EXPECT_EQ((*event)->status, domain::LedgerStatus::kDone);
  EXPECT_EQ((*event)->projected_by, "relay");
  EXPECT_EQ((*event)->target_user_id, 7);
  event = ledger_.Event("demo", "E1 ");
  ASSERT_TRUE(event.ok());
  EXPECT_FALSE(event->has_value());
}

TEST_F(LedgerRepositoryTest, DeadEventsPageAndGroupByError) {
  for (int i = 0; i < 5; ++i) {
    Project(absl::StrCat("M", i), R"({"gift_id":"rose","gift_count":1})", ProjectedBy::kRelay);
  }
  for (int i = 0; i < 2; ++i) {
    Project(absl::StrCat("Z", i), R"({"target_user_id":7,"gift_id":"rose","gift_count":0})",
            ProjectedBy::kRelay);
  }
  absl::StatusOr<DeadEventPage> page = ledger_.ListDead("demo", "", "", 4);
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_EQ(page->events.size(), 4u);
  EXPECT_TRUE(page->has_more);
  ASSERT_EQ(page->groups.size(), 2u);
  EXPECT_EQ(page->groups[0].count, 5);
  EXPECT_EQ(page->groups[0].last_error, "invalid gift payload: missing target_user_id");
  EXPECT_EQ(page->groups[1].count, 2);
  page = ledger_.ListDead("demo", "", page->events.back().event_id, 4);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->events.size(), 3u);
  EXPECT_FALSE(page->has_more);

  page = ledger_.ListDead("demo", "gift_count must be", "", 50);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->events.size(), 2u);
  EXPECT_EQ(page->events[0].event_id, "Z0");
  ASSERT_EQ(page->groups.size(), 1u);
  // The filter is literal text: % and _ are not wildcards.
  page = ledger_.ListDead("demo", "%", "", 50);
  ASSERT_TRUE(page.ok());
  EXPECT_TRUE(page->events.empty());

  absl::StatusOr<std::vector<std::string>> ids = ledger_.DeadEventIds("demo", "gift_count", 10);
  ASSERT_TRUE(ids.ok());
  EXPECT_THAT(*ids, ElementsAre("Z0", "Z1"));
}

}  // namespace
}  // namespace giftwall::storage
