// Period walls written by the projection (DESIGN §2.15), against a real MariaDB: each kept
// kind's period gets its own wall and sender rows, in the same transaction as the all-time rows,
// under the same rules; late events land in their own period; retention bounds what is written;
// an app whose zone cannot be loaded fails its events rather than fold them as UTC.
#include <memory>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/civil_time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/domain/app_settings.h"
#include "server/projection/period_pruner.h"
#include "server/projection/wall_audit.h"
#include "server/storage/app_settings_store.h"
#include "tests/projection/projection_test_fixture.h"

namespace giftwall::projection {
namespace {

using domain::ProjectedBy;
using domain::ProjectionOutcome;
using ::testing::ElementsAre;
using testing::GiftPayloadJson;

int64_t Utc(int y, int mo, int d, int h = 0) {
  return absl::ToUnixMillis(
      absl::FromCivil(absl::CivilSecond(y, mo, d, h, 0, 0), absl::UTCTimeZone()));
}

class PeriodProjectionTest : public ProjectionTest {
 protected:
  PeriodProjectionTest() {
    // Periods from the start of 2026 on are retained, whatever the day the test runs.
    domain::PeriodRetention retention;
    retention.past = {{domain::PeriodKind::kDay, 1000},
                      {domain::PeriodKind::kWeek, 1000},
                      {domain::PeriodKind::kMonth, 1000}};
    projection_ = std::make_unique<testing::TestProjection>(
        pool_, testing::FastRetry(), domain::kDefaultMaxWallGifts, retention);
    audit_ = std::make_unique<WallAudit>(pool_, testing::FastRetry(), domain::kDefaultMaxWallGifts,
                                         retention);
  }

  // What the wallet and the relay do: the outbox row (which verify and rebuild fold), then the
  // delivery.
  void Deliver(const std::string& id, const std::string& payload, int64_t at) {
    db_.InsertOutbox("demo", id, "WalletGiftDebited", payload, at);
    ASSERT_EQ(Project(Event(id, payload, at)), ProjectionOutcome::kProjected) << id;
  }

  VerifyReport Verify() {
    absl::StatusOr<VerifyReport> report = audit_->Verify("demo", 0);
    EXPECT_TRUE(report.ok()) << report.status();
    return report.ok() ? *report : VerifyReport{};
  }

  void Keep(const std::string& zone, std::vector<std::string> kinds) {
    absl::Status stored =
        testing::UpdateSettings(pool_, "demo", domain::SettingsRequest{zone, kinds, "test"});
    ASSERT_TRUE(stored.ok()) << stored;
  }

  // "kind:key user gift count coins senders top(count)" for each period row of the app.
  std::vector<std::string> PeriodRows() {
    db_.Exec("SET SESSION group_concat_max_len = 1048576");
    const std::string all = db_.QueryString(
        "SELECT GROUP_CONCAT(CONCAT(period_kind, ':', period_key, ' ', user_id, ' ', gift_id, ' ', "
        "gift_count, ' ', total_coins, ' ', sender_count, ' ', top_sender_user_id, '(', "
        "top_sender_count, ')') ORDER BY user_id, period_kind, period_key, gift_id SEPARATOR ';') "
        "FROM user_gift_wall_period");
    return all.empty() ? std::vector<std::string>{} : absl::StrSplit(all, ';');
  }

  std::unique_ptr<WallAudit> audit_;
};

TEST_F(PeriodProjectionTest, Rule15_EventsOnBothSidesOfAShanghaiMonthBoundaryLandInTheirMonths) {
  Keep("Asia/Shanghai", {"month"});
  EXPECT_EQ(Project(Event("E1", GiftPayloadJson(7, "rose", 1, 9, 10), Utc(2026, 11, 30, 16) - 1)),
            ProjectionOutcome::kProjected);
  EXPECT_EQ(Project(Event("E2", GiftPayloadJson(7, "rose", 2, 9, 20), Utc(2026, 11, 30, 16))),
            ProjectionOutcome::kProjected);
  EXPECT_THAT(PeriodRows(),
              ElementsAre("month:2026-11 7 rose 1 10 1 9(1)", "month:2026-12 7 rose 2 20 1 9(2)"));
  EXPECT_EQ(GiftCount(7, "rose"), 3) << "the all-time wall holds both";
  EXPECT_EQ(db_.QueryInt("SELECT COUNT(*) FROM user_gift_wall_period_sender"), 2);
}

TEST_F(PeriodProjectionTest, Rule15_APeriodsTopSenderDiffersFromTheAllTimeOne) {
  Keep("UTC", {"week", "month"});
  // November: sender 1 sends 5. December: sender 2 sends 3, sender 1 sends 1.
  const std::vector<domain::GiftEvent> batch = {
      Event("N1", GiftPayloadJson(7, "rose", 5, 1, 50), Utc(2026, 11, 10)),
      Event("D1", GiftPayloadJson(7, "rose", 3, 2, 30), Utc(2026, 12, 2)),
      Event("D2", GiftPayloadJson(7, "rose", 1, 1, 10), Utc(2026, 12, 3))};
  absl::StatusOr<std::vector<domain::ProjectionResult>> results =
      projection_->projector.ProjectBatch(batch, ProjectedBy::kRelay);
  ASSERT_TRUE(results.ok()) << results.status();
  EXPECT_EQ(db_.QueryInt("SELECT top_sender_user_id FROM user_gift_wall"), 1);
  EXPECT_THAT(PeriodRows(),
              ElementsAre("month:2026-11 7 rose 5 50 1 1(5)", "month:2026-12 7 rose 4 40 2 2(3)",
                          "week:2026-W46 7 rose 5 50 1 1(5)", "week:2026-W49 7 rose 4 40 2 2(3)"));
}

TEST_F(PeriodProjectionTest, Rule15_ALateEventForLastMonthLandsInLastMonth) {
  Keep("UTC", {"month"});
  ASSERT_EQ(Project(Event("D1", GiftPayloadJson(7, "rose", 1), Utc(2026, 12, 2))),
            ProjectionOutcome::kProjected);
  ASSERT_EQ(Project(Event("N1", GiftPayloadJson(7, "rose", 4), Utc(2026, 11, 29))),
            ProjectionOutcome::kProjected);
  EXPECT_THAT(PeriodRows(),
              ElementsAre("month:2026-11 7 rose 4 0 0 0(0)", "month:2026-12 7 rose 1 0 0 0(0)"));
}

TEST_F(PeriodProjectionTest, Rule15_AnAppWithoutSettingsWritesNoPeriodRow) {
  EXPECT_EQ(Project(Event("E1", GiftPayloadJson(7, "rose", 1))), ProjectionOutcome::kProjected);
  EXPECT_TRUE(PeriodRows().empty());
}

TEST_F(PeriodProjectionTest, Rule15_AnEventPastRetentionCountsAllTimeOnly) {
  Keep("UTC", {"month"});
  domain::PeriodRetention retention;
  retention.past[domain::PeriodKind::kMonth] = 1;
  Reset(testing::FastRetry());
  projection_ = std::make_unique<testing::TestProjection>(pool_, testing::FastRetry(),
                                                          domain::kDefaultMaxWallGifts, retention);
  const int64_t now = DbNowMs();
  ASSERT_EQ(Project(Event("OLD", GiftPayloadJson(7, "rose", 1), now - 100LL * 86'400'000)),
            ProjectionOutcome::kProjected);
  ASSERT_EQ(Project(Event("NOW", GiftPayloadJson(7, "rose", 2), now)),
            ProjectionOutcome::kProjected);
  EXPECT_EQ(GiftCount(7, "rose"), 3);
  EXPECT_EQ(db_.QueryInt("SELECT COUNT(*) FROM user_gift_wall_period"), 1);
  EXPECT_EQ(db_.QueryInt("SELECT gift_count FROM user_gift_wall_period"), 2);
}

// The zone database lost the app's zone: its events fail (retried later), never dead and never
// folded as UTC.
TEST_F(PeriodProjectionTest, Rule15_AZoneTheServerCannotLoadFailsTheEventsNeverFoldsThemAsUtc) {
  db_.Exec(
      "INSERT INTO giftwall_app_settings (app_code, period_kinds, changed_at_ms, "
      "created_at_ms, updated_at_ms) VALUES ('demo', 'month', 1, 1, 1)");
  db_.Exec("INSERT INTO giftwall_app_time_zones VALUES ('demo', 0, 'Mars/Olympus_Mons')");
  absl::StatusOr<domain::ProjectionResult> result = projection_->projector.Project(
      Event("E1", GiftPayloadJson(7, "rose", 1)), ProjectedBy::kRelay);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable) << result.status();
  EXPECT_THAT(std::string(result.status().message()), ::testing::HasSubstr("Mars/Olympus_Mons"));
  EXPECT_EQ(Ledger("E1", "status"), "failed");
  EXPECT_EQ(Ledger("E1", "retry_count"), "1");
  EXPECT_EQ(WallRows(), 0);
  EXPECT_TRUE(PeriodRows().empty());
}

// Settings set after events were folded: the periods lack them, which verify does not call drift
// (it compares the periods begun since the change); a rebuild folds them in.
TEST_F(PeriodProjectionTest, Rule15_SettingsChangedThenARebuildFoldsTheEarlierEventsIn) {
  Deliver("N1", GiftPayloadJson(7, "rose", 1, 9, 10), Utc(2026, 11, 20));
  Deliver("D1", GiftPayloadJson(7, "rose", 2, 8, 20), Utc(2026, 12, 1, 12));
  Deliver("D2", GiftPayloadJson(7, "lily", 1, 8, 5), Utc(2026, 12, 2, 12));
  Keep("UTC", {"week", "month"});
  EXPECT_TRUE(PeriodRows().empty());
  VerifyReport report = Verify();
  EXPECT_EQ(report.drifted, 0) << "a change of settings alone is never drift";

  absl::StatusOr<bool> rebuilt = audit_->RebuildUser("demo", 7);
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status();
  EXPECT_TRUE(*rebuilt);
  EXPECT_THAT(PeriodRows(),
              ElementsAre("month:2026-11 7 rose 1 10 1 9(1)", "month:2026-12 7 lily 1 5 1 8(1)",
                          "month:2026-12 7 rose 2 20 1 8(2)", "week:2026-W47 7 rose 1 10 1 9(1)",
                          "week:2026-W49 7 lily 1 5 1 8(1)", "week:2026-W49 7 rose 2 20 1 8(2)"));
  EXPECT_EQ(db_.QueryInt("SELECT COUNT(*) FROM user_gift_wall_period_sender"), 6);
  // A second rebuild finds nothing to rewrite, and later events fold on top.
  rebuilt = audit_->RebuildUser("demo", 7);
  ASSERT_TRUE(rebuilt.ok());
  Deliver("D3", GiftPayloadJson(7, "rose", 3, 9, 30), Utc(2026, 12, 3, 12));
  EXPECT_EQ(db_.QueryInt("SELECT gift_count FROM user_gift_wall_period WHERE period_key = "
                         "'2026-12' AND gift_id = 'rose'"),
            5);
  EXPECT_EQ(Verify().drifted, 0);
}

// Verify compares the period rows of the periods begun since the settings last changed, names
// the period of each difference, and repair rewrites them.
TEST_F(PeriodProjectionTest, Rule15_VerifyFindsAndRepairsAPeriodRowChangedByHand) {
  Keep("UTC", {"month"});
  db_.Exec("UPDATE giftwall_app_settings SET changed_at_ms = 0");  // kept since long ago
  Deliver("N1", GiftPayloadJson(7, "rose", 1, 9, 10), Utc(2026, 11, 20));
  Deliver("D1", GiftPayloadJson(7, "rose", 2, 8, 20), Utc(2026, 12, 1, 12));
  Deliver("D2", GiftPayloadJson(8, "lily", 1, 8, 5), Utc(2026, 12, 2, 12));
  EXPECT_EQ(Verify().drifted, 0);
  EXPECT_GE(Verify().rows_checked, 10) << "3 all-time and 3 period walls, each with a sender";

  db_.Exec("UPDATE user_gift_wall_period SET gift_count = 99 WHERE period_key = '2026-12'");
  db_.Exec("DELETE FROM user_gift_wall_period_sender WHERE period_key = '2026-11'");
  VerifyReport report = Verify();
  EXPECT_THAT(report.drifted_users, ElementsAre(7, 8));
  EXPECT_EQ(report.drifted, 3);
  std::set<std::string> periods;
  for (const WallDrift& d : report.samples) periods.insert(d.difference.period);
  EXPECT_THAT(periods, ElementsAre("month:2026-11", "month:2026-12"));

  absl::StatusOr<VerifyReport> repaired = audit_->VerifyAndRepair("demo", 0, /*repair=*/true);
  ASSERT_TRUE(repaired.ok()) << repaired.status();
  EXPECT_EQ(repaired->repaired, 2);
  EXPECT_EQ(Verify().drifted, 0);
  EXPECT_THAT(PeriodRows(),
              ElementsAre("month:2026-11 7 rose 1 10 1 9(1)", "month:2026-12 7 rose 2 20 1 8(2)",
                          "month:2026-12 8 lily 1 5 1 8(1)"));
  // Periods begun before the settings changed are not compared: a change now hides the drift
  // of November (whose rows lack what was folded before), and rebuild still covers them all.
  db_.Exec("UPDATE user_gift_wall_period SET gift_count = 99 WHERE period_key = '2026-11'");
  db_.Exec("UPDATE giftwall_app_settings SET changed_at_ms = " + std::to_string(Utc(2026, 12, 1)));
  EXPECT_EQ(Verify().drifted, 0);
  ASSERT_TRUE(audit_->RebuildUser("demo", 7).ok());
  EXPECT_EQ(db_.QueryInt("SELECT gift_count FROM user_gift_wall_period WHERE period_key = "
                         "'2026-11'"),
            1);
}

// The anonymous flag (issue 19) is kept per period as on the all-time row: set where an anonymous
// send fell, verified and restored by a rebuild.
TEST_F(PeriodProjectionTest, Rule17_AnAnonymousSendMarksItsPeriodsSenderRow) {
  Keep("UTC", {"month"});
  db_.Exec("UPDATE giftwall_app_settings SET changed_at_ms = 0");
  Deliver("N1", GiftPayloadJson(7, "rose", 1, 9, 10), Utc(2026, 11, 20));
  Deliver("D1",
          R"({"target_user_id":7,"gift_id":"rose","gift_count":1,"sender_user_id":9,)"
          R"("anonymous":true})",
          Utc(2026, 12, 1, 12));
  const std::string flag =
      "SELECT anonymous FROM user_gift_wall_period_sender WHERE sender_user_id = 9 AND "
      "period_key = ";
  EXPECT_EQ(db_.QueryInt(flag + "'2026-11'"), 0);
  EXPECT_EQ(db_.QueryInt(flag + "'2026-12'"), 1);
  EXPECT_EQ(db_.QueryInt("SELECT anonymous FROM user_gift_wall_sender WHERE sender_user_id = 9"),
            1);
  EXPECT_EQ(Verify().drifted, 0);
  db_.Exec("UPDATE user_gift_wall_period_sender SET anonymous = 0");
  VerifyReport report = Verify();
  ASSERT_EQ(report.drifted, 1);
  EXPECT_EQ(report.samples[0].difference.field, "anonymous");
  EXPECT_EQ(report.samples[0].difference.period, "month:2026-12");
  ASSERT_TRUE(audit_->RebuildUser("demo", 7).ok());
  EXPECT_EQ(db_.QueryInt(flag + "'2026-12'"), 1);
  EXPECT_EQ(Verify().drifted, 0);
}

// Retention: rows of periods older than the oldest retained go, in statements of a bounded size,
// of every kind; the all-time wall and the ledger stay.
TEST_F(PeriodProjectionTest, Rule15_RetentionPrunesOlderPeriodsOnlyAndNeverTheAllTimeWall) {
  Keep("UTC", {"day", "month"});
  const int64_t now = DbNowMs();
  constexpr int64_t kDay = 86'400'000;
  // Five users get a gift 400 days ago, 40 days ago and today.
  for (int user = 1; user <= 5; ++user) {
    for (int64_t days_ago : {400, 40, 0}) {
      ASSERT_EQ(Project(Event(absl::StrCat("E", user, "-", days_ago),
                              GiftPayloadJson(user, "rose", 1, 100 + user), now - days_ago * kDay)),
                ProjectionOutcome::kProjected);
    }
  }
  const int64_t period_rows = db_.QueryInt("SELECT COUNT(*) FROM user_gift_wall_period");
  EXPECT_EQ(period_rows, 5 * 3 * 2) << "written under the fixture's long retention";

  // Keep 31 past days and 12 past months: the day rows of 40 and 400 days ago go, and the month
  // row of 400 days ago.
  storage::SettingsRepository settings(pool_);
  domain::PeriodRetention retention;  // the defaults
  PeriodPruner pruner(settings, retention, /*rows_per_statement=*/2);
  absl::StatusOr<int64_t> deleted = pruner.Prune("demo");
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(*deleted, 3 * 5 * 2) << "15 wall rows and their 15 sender rows";
  EXPECT_EQ(db_.QueryInt("SELECT COUNT(*) FROM user_gift_wall_period WHERE period_kind = 'day'"),
            5);
  EXPECT_EQ(db_.QueryInt("SELECT COUNT(*) FROM user_gift_wall_period WHERE period_kind = 'month'"),
            10);
  EXPECT_EQ(db_.QueryInt("SELECT COUNT(*) FROM user_gift_wall_period_sender"), 15);
  EXPECT_EQ(db_.QueryInt("SELECT SUM(gift_count) FROM user_gift_wall"), 15) << "all-time stays";
  EXPECT_EQ(db_.QueryInt("SELECT COUNT(*) FROM wallet_projection_events WHERE status = 'done'"),
            15);
  deleted = pruner.Prune("demo");
  ASSERT_TRUE(deleted.ok());
  EXPECT_EQ(*deleted, 0);
  // An app without settings has nothing to prune.
  EXPECT_EQ(*pruner.Prune("other"), 0);
}

}  // namespace
}  // namespace giftwall::projection
