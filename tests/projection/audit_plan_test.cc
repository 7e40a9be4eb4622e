// What verify and rebuild decide, without a database: who can be recomputed, how a wall drifted,
// what a rebuild rewrites. wall_audit_test runs the same use cases against MariaDB.
#include "server/projection/audit_plan.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/domain/wall_cap.h"
#include "tests/support/test_database.h"

namespace giftwall::projection {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

storage::DoneEventRow Done(const std::string& id, int64_t user, const std::string& gift,
                           int64_t count = 1, int64_t at = 1000) {
  return storage::DoneEventRow{
      user, id, true, "WalletGiftDebited", giftwall::testing::GiftPayloadJson(user, gift, count),
      at};
}

// The wall that `rows` fold into, as a projection would have written it.
domain::UserWall Folded(const std::vector<storage::DoneEventRow>& rows) {
  std::map<int64_t, UserEvidence> users;
  AddDoneEvents("demo", rows, users);
  absl::StatusOr<domain::UserWall> wall = ExpectedWall(users.begin()->second);
  EXPECT_TRUE(wall.ok()) << wall.status();
  return wall.ok() ? *wall : domain::UserWall{};
}

TEST(AuditPlan, AUserWhoseDoneEventLostItsOutboxRowCannotBeRecomputed) {
  std::map<int64_t, UserEvidence> users;
  storage::DoneEventRow pruned = Done("E2", 7, "rose");
  pruned.in_outbox = false;
  AddDoneEvents("demo", {Done("E1", 7, "rose"), pruned, Done("E3", 8, "rose")}, users);
  EXPECT_THAT(users[7].unverifiable, HasSubstr("the outbox row of done event E2 is gone"));
  EXPECT_EQ(ExpectedWall(users[7]).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(users[8].unverifiable.empty());
  EXPECT_EQ(users[8].events.size(), 1u);
}

TEST(AuditPlan, AnOutboxRowThatNoLongerFoldsIntoItsUserMakesItUnverifiable) {
  storage::DoneEventRow other_type = Done("E1", 7, "rose");
  other_type.event_type = "WalletRecharged";
  storage::DoneEventRow bad_payload = Done("E1", 7, "rose");
  bad_payload.payload = "{}";
  storage::DoneEventRow other_user = Done("E1", 7, "rose");
  other_user.user_id = 8;  // the ledger says another user than the payload
  for (const storage::DoneEventRow& row : {other_type, bad_payload, other_user}) {
    std::map<int64_t, UserEvidence> users;
    AddDoneEvents("demo", {row}, users);
    EXPECT_THAT(users[row.user_id].unverifiable, HasSubstr("no longer folds into it"))
        << row.event_type << " " << row.payload;
  }
}

TEST(AuditPlan, WallRowsWithoutDoneEventsHaveNoEvidence) {
  UserEvidence evidence;
  evidence.actual["rose"].gift_count = 3;
  EXPECT_FALSE(ExpectedWall(evidence).ok());
  EXPECT_EQ(evidence.unverifiable, "wall rows but no done events in the ledger");
  UserEvidence nothing;
  ASSERT_TRUE(ExpectedWall(nothing).ok());
}

TEST(AuditPlan, EventsThatOverflowTheirWallMakeItUnverifiable) {
  std::map<int64_t, UserEvidence> users;
  AddDoneEvents("demo",
                {Done("E1", 7, "rose", std::numeric_limits<int64_t>::max()), Done("E2", 7, "rose")},
                users);
  EXPECT_EQ(ExpectedWall(users[7]).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(users[7].unverifiable.empty());
}

TEST(AuditPlan, Rule19_CompareSentListsEachDriftedRowOnceWithItsPeriod) {
  const domain::SentTotals one{1, 10, 1, 5, 5};
  const domain::SentRow row{one, one, false};
  domain::SentWall expected = {{{7, "rose"}, row}, {{7, "rose", "month:2026-12"}, row}};
  domain::SentWall actual = expected;
  actual[{7, "rose"}].all.sent_count = 3;
  actual[{7, "rose"}].open.sent_coins = 3;  // two fields, one row
  actual[{7, "rose", "month:2026-12"}].open.receiver_count = 9;
  actual[{8, "car"}] = row;
  VerifyReport report;
  CompareSent(expected, actual, /*max_samples=*/2, report);
  EXPECT_EQ(report.rows_checked, 3);
  EXPECT_EQ(report.drifted, 3);
  EXPECT_EQ(report.drifted_sent,
            (std::vector<domain::SentKey>{{7, "rose"}, {7, "rose", "month:2026-12"}, {8, "car"}}));
  ASSERT_EQ(report.samples.size(), 2u);
  EXPECT_EQ(report.samples[0].user_id, 7);
  EXPECT_EQ(report.samples[0].difference.period, "sent");
}

TEST(AuditPlan, CompareCountsDriftedRowsOnceAndKeepsTheFirstSamples) {
  const std::vector<storage::DoneEventRow> rows = {Done("E1", 7, "rose", 2), Done("E2", 7, "lily")};
  VerifyReport report;
  std::map<int64_t, UserEvidence> users;
  AddDoneEvents("demo", rows, users);
  users[7].actual = Folded(rows);
  CompareUser(7, users[7], AuditPeriods(), 1, report);
  EXPECT_EQ(report.users_checked, 1);
  EXPECT_GT(report.rows_checked, 0);
  EXPECT_THAT(report.drifted_users, IsEmpty());

  users[7].actual["rose"].gift_count = 5;
  users[7].actual["rose"].total_coins = 99;
  users[7].actual.erase("lily");
  CompareUser(7, users[7], AuditPeriods(), 1, report);
  EXPECT_THAT(report.drifted_users, ElementsAre(7));
  EXPECT_EQ(report.drifted, 2) << "rose (two fields) and lily: two rows";
  EXPECT_EQ(report.samples.size(), 1u);

  UserEvidence lost;
  lost.unverifiable = "gone";
  CompareUser(8, lost, AuditPeriods(), 1, report);
  EXPECT_THAT(report.unverifiable_users, ElementsAre(8));
  EXPECT_EQ(report.users_checked, 3);
}

TEST(AuditPlan, ARebuildRewritesOnlyTheGiftsThatDiffer) {
  const std::vector<storage::DoneEventRow> rows = {Done("E1", 7, "rose", 2), Done("E2", 7, "lily")};
  std::map<int64_t, UserEvidence> users;
  AddDoneEvents("demo", rows, users);
  users[7].actual = Folded(rows);
  users[7].actual["rose"].gift_count = 9;
  users[7].actual["stray"].gift_count = 1;
  absl::StatusOr<RebuildPlan> plan =
      PlanRebuild(users[7], AuditPeriods(), domain::kDefaultMaxWallGifts);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->gifts.size(), 2u);
  EXPECT_EQ(plan->gifts.at("rose")->gift_count, 2);
  EXPECT_FALSE(plan->gifts.at("stray").has_value()) << "a row no event supports is removed";
  EXPECT_THAT(plan->killed, IsEmpty());
}

TEST(AuditPlan, ARebuildKeepsTheWallWithinTheCapAndKillsTheEventsBeyondIt) {
  const std::vector<storage::DoneEventRow> rows = {
      Done("E1", 7, "a", 1, 1000), Done("E2", 7, "b", 1, 2000), Done("E3", 7, "c", 1, 3000),
      Done("E4", 7, "c", 1, 4000)};
  std::map<int64_t, UserEvidence> users;
  AddDoneEvents("demo", rows, users);
  users[7].actual = Folded(rows);
  absl::StatusOr<RebuildPlan> plan = PlanRebuild(users[7], AuditPeriods(), 2);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->gifts_beyond_cap, 1u);
  EXPECT_THAT(plan->killed, ElementsAre("E3", "E4"));
  ASSERT_EQ(plan->gifts.size(), 1u);
  EXPECT_FALSE(plan->gifts.at("c").has_value());
}

TEST(AuditPlan, AnUnverifiableUserIsNotRebuilt) {
  UserEvidence evidence;
  evidence.unverifiable = "the outbox row of done event E1 is gone";
  evidence.actual["rose"].gift_count = 1;
  EXPECT_EQ(PlanRebuild(evidence, AuditPeriods(), 10).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace giftwall::projection
