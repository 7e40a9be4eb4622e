// The catch-up scan (DESIGN §2.11, the seed's ProjectPendingGiftWallEvents) and the requeue of dead
// events (§3), against a real MariaDB.
#include "server/projection/recovery.h"

#include <limits>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/projection/outbox_codes.h"
#include "tests/projection/projection_test_fixture.h"

namespace giftwall::projection {
namespace {

using domain::GiftEvent;
using domain::ProjectedBy;
using domain::ProjectionOutcome;
using storage::ConnectionPool;
using storage::PoolOptions;
using storage::ProjectionStatus;
using storage::SqlConnection;
using testing::GiftPayloadJson;
using ::testing::HasSubstr;

using RecoveryTest = ProjectionTest;

TEST_F(RecoveryTest, Rule4_OtherEventTypesInTheOutboxAreIgnoredByTheScan) {
  db_.InsertOutbox("demo", "R1", "WalletRecharged", R"({"user_id":7})", kT0);
  absl::StatusOr<projection::CatchUpPass> pass =
      projection_->recovery.ProjectPendingGiftWallEvents({"demo", 100, 0});
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->found, 0);
  EXPECT_EQ(db_.QueryInt("SELECT COUNT(*) FROM wallet_projection_events"), 0);
}

TEST_F(RecoveryTest, Rule11_ScanFindsEventsTheRelayLost) {
  for (int i = 0; i < 10; ++i) {
    db_.InsertOutbox("demo", absl::StrCat("E", i), "WalletGiftDebited",
                     GiftPayloadJson(7, "rose", 1), kT0 + i);
  }
  for (int i = 0; i < 10; i += 3) {  // the relay delivered E0, E3, E6, E9
    EXPECT_EQ(Project(Event(absl::StrCat("E", i), GiftPayloadJson(7, "rose", 1), kT0 + i)),
              ProjectionOutcome::kProjected);
  }
  absl::StatusOr<projection::CatchUpPass> pass =
      projection_->recovery.ProjectPendingGiftWallEvents({"demo", 100, 0});
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->found, 6);
  EXPECT_EQ(pass->projected, 6);
  EXPECT_EQ(pass->processed, 6);
  EXPECT_EQ(GiftCount(7, "rose"), 10);
  EXPECT_EQ(Ledger("E1", "projected_by"), "scan");
  EXPECT_EQ(Ledger("E3", "projected_by"), "relay");
  // Nothing left: a second pass finds nothing.
  pass = projection_->recovery.ProjectPendingGiftWallEvents({"demo", 100, 0});
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->found, 0);
}

TEST_F(RecoveryTest, Rule11_ScanRetriesDueFailuresButNotBeforeTheirBackoff) {
  db_.InsertOutbox("demo", "F1", "WalletGiftDebited", GiftPayloadJson(7, "rose", 1), kT0);
  db_.InsertOutbox("demo", "F2", "WalletGiftDebited", GiftPayloadJson(7, "rose", 2), kT0 + 1);
  InsertLedger("F1", "failed", 1, 0, DbNowMs() + 600'000);  // backoff not over
  InsertLedger("F2", "failed", 1, 0, DbNowMs() - 1);        // due
  absl::StatusOr<projection::CatchUpPass> pass =
      projection_->recovery.ProjectPendingGiftWallEvents({"demo", 100, 0});
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->found, 1);
  EXPECT_EQ(Ledger("F1", "status"), "failed");
  EXPECT_EQ(Ledger("F2", "status"), "done");
  EXPECT_EQ(Ledger("F2", "projected_by"), "scan");
  EXPECT_EQ(GiftCount(7, "rose"), 2);
}

TEST_F(RecoveryTest, Rule11_ScanTakesOverExpiredLeasesOnly) {
  db_.InsertOutbox("demo", "P1", "WalletGiftDebited", GiftPayloadJson(7, "rose", 1), kT0);
  db_.InsertOutbox("demo", "P2", "WalletGiftDebited", GiftPayloadJson(7, "rose", 2), kT0 + 1);
  InsertLedger("P1", "processing", 0, DbNowMs() + 600'000, DbNowMs() + 600'000);
  InsertLedger("P2", "processing", 0, DbNowMs() - 1, DbNowMs() - 1);
  absl::StatusOr<projection::CatchUpPass> pass =
      projection_->recovery.ProjectPendingGiftWallEvents({"demo", 100, 0});
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->processed, 1);
  EXPECT_EQ(Ledger("P1", "status"), "processing");
  EXPECT_EQ(Ledger("P2", "status"), "done");
}

TEST_F(RecoveryTest, Rule11_ScanLeavesYoungEventsToTheRelay) {
  db_.InsertOutbox("demo", "Y1", "WalletGiftDebited", GiftPayloadJson(7, "rose", 1), DbNowMs());
  CatchUpRequest request{"demo", 100, 0, absl::Seconds(30)};
  absl::StatusOr<projection::CatchUpPass> pass =
      projection_->recovery.ProjectPendingGiftWallEvents(request);
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->found, 0);
  request.min_age = absl::ZeroDuration();
  pass = projection_->recovery.ProjectPendingGiftWallEvents(request);
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->projected, 1);
}

TEST_F(RecoveryTest, Rule11_ScanStartsAtTheHorizonAndPagesThroughByLimit) {
  for (int i = 0; i < 5; ++i) {
    db_.InsertOutbox("demo", absl::StrCat("H", i), "WalletGiftDebited",
                     GiftPayloadJson(7, "rose", 1), kT0 + 1000 * i);
  }
  // From a horizon past H0 and H1, a pass does not see them.
  absl::StatusOr<projection::CatchUpPass> pass =
      projection_->recovery.ProjectPendingGiftWallEvents({"demo", 2, kT0 + 1500});
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->projected, 2);  // H2, H3: the limit
  EXPECT_EQ(pass->resume_from_ms, kT0 + 3000);
  pass = projection_->recovery.ProjectPendingGiftWallEvents({"demo", 2, pass->resume_from_ms});
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->projected, 1);  // H4, and the outbox is exhausted
  EXPECT_GT(pass->resume_from_ms, kT0 + 4000);
  EXPECT_EQ(Ledger("H0", "status"), "");
  // A full sweep (horizon 0) finds what was behind the horizon.
  pass = projection_->recovery.ProjectPendingGiftWallEvents({"demo", 100, 0});
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->projected, 2);
  EXPECT_EQ(GiftCount(7, "rose"), 5);
}

// No statement reads all history: the outbox is read a window of rows at a time, and a pass
// that reads its windows without finding anything says how far it got.
TEST_F(RecoveryTest, Rule11_ScanReadsTheOutboxInBoundedWindows) {
  for (int i = 0; i < 150; ++i) {
    const std::string id = absl::StrFormat("W%03d", i);
    db_.InsertOutbox("demo", id, "WalletGiftDebited", GiftPayloadJson(7, "rose", 1), kT0 + i);
    if (i == 149) continue;  // the one the relay lost
    ASSERT_EQ(Project(Event(id, GiftPayloadJson(7, "rose", 1), kT0 + i)),
              ProjectionOutcome::kProjected);
  }
  CatchUpRequest request{"demo", 10, 0};
  request.window_rows = 5;  // 20 windows a pass: 100 rows
  absl::StatusOr<projection::CatchUpPass> pass =
      projection_->recovery.ProjectPendingGiftWallEvents(request);
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->found, 0);
  EXPECT_FALSE(pass->reached_newest);
  EXPECT_EQ(pass->resume_from_ms, kT0 + 99);
  request.horizon_ms = pass->resume_from_ms;
  pass = projection_->recovery.ProjectPendingGiftWallEvents(request);
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->projected, 1);  // W149, behind 100 rows of projected history
  EXPECT_TRUE(pass->reached_newest);
  EXPECT_EQ(GiftCount(7, "rose"), 150);
}

TEST_F(RecoveryTest, Rule11_ScanLimitIsClampedToOneThroughOneHundred) {
  for (int i = 0; i < 3; ++i) {
    db_.InsertOutbox("demo", absl::StrCat("L", i), "WalletGiftDebited",
                     GiftPayloadJson(7, "rose", 1), kT0 + i);
  }
  absl::StatusOr<projection::CatchUpPass> pass =
      projection_->recovery.ProjectPendingGiftWallEvents({"demo", -5, 0});
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->projected, 3);  // <= 0 means the seed's default of 20
}

// Above 100 a limit is clamped to 100, as in the seed: a pass never takes more.
TEST_F(RecoveryTest, Rule11_ScanLimitAboveOneHundredIsClampedToOneHundred) {
  for (int i = 0; i < 105; ++i) {
    db_.InsertOutbox("demo", absl::StrCat("C", i), "WalletGiftDebited",
                     GiftPayloadJson(7, "rose", 1), kT0 + i);
  }
  absl::StatusOr<projection::CatchUpPass> pass =
      projection_->recovery.ProjectPendingGiftWallEvents({"demo", 500, 0});
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->found, 100);
  EXPECT_EQ(pass->projected, 100);
  EXPECT_EQ(GiftCount(7, "rose"), 100);
  pass = projection_->recovery.ProjectPendingGiftWallEvents({"demo", 500, pass->resume_from_ms});
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->projected, 5);
  EXPECT_EQ(GiftCount(7, "rose"), 105);
}

// The horizon bounds the search for lost events only: a failed event that is due, or an expired
// lease, is retried however old its outbox row (DESIGN §2.11).
TEST_F(RecoveryTest, Rule11_DueRetriesAreFoundBeyondTheHorizon) {
  db_.InsertOutbox("demo", "OLD-F", "WalletGiftDebited", GiftPayloadJson(7, "rose", 2), kT0);
  db_.InsertOutbox("demo", "OLD-P", "WalletGiftDebited", GiftPayloadJson(7, "rose", 3), kT0 + 1);
  db_.InsertOutbox("demo", "OLD-LOST", "WalletGiftDebited", GiftPayloadJson(7, "rose", 5), kT0 + 2);
  InsertLedger("OLD-F", "failed", 2, 0, DbNowMs() - 1);
  InsertLedger("OLD-P", "processing", 0, DbNowMs() - 1, DbNowMs() - 1);
  absl::StatusOr<projection::CatchUpPass> pass =
      projection_->recovery.ProjectPendingGiftWallEvents({"demo", 100, kT0 + 1'000'000});
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->projected, 2);
  EXPECT_EQ(Ledger("OLD-F", "status"), "done");
  EXPECT_EQ(Ledger("OLD-P", "status"), "done");
  EXPECT_EQ(Ledger("OLD-LOST", "status"), "");  // lost behind the horizon: the full sweep's
  EXPECT_EQ(GiftCount(7, "rose"), 5);
}

TEST_F(RecoveryTest, Rule11_ScanProjectsTheOutboxPayloadAndKeepsBadOnesDead) {
  db_.InsertOutbox("demo", "B1", "WalletGiftDebited", R"({"target_user_id":7})", kT0);
  db_.InsertOutbox("demo", "B2", "WalletGiftDebited", GiftPayloadJson(7, "rose", 4), kT0 + 1);
  absl::StatusOr<projection::CatchUpPass> pass =
      projection_->recovery.ProjectPendingGiftWallEvents({"demo", 100, 0});
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->dead, 1);
  EXPECT_EQ(pass->projected, 1);
  EXPECT_EQ(Ledger("B1", "status"), "dead");
  EXPECT_EQ(GiftCount(7, "rose"), 4);
}

// Rule 2 on every path: an outbox row whose envelope the RPC would refuse is dead with its reason,
// never folded, and no longer counted as unprojected (nor stuck, for a negative created_at_ms).
TEST_F(RecoveryTest, Rule2_ScanAppliesTheEnvelopeRulesAndRowsThatBreakThemGoDead) {
  const std::string rose = GiftPayloadJson(7, "rose", 1);
  db_.InsertOutbox("demo", "", "WalletGiftDebited", rose, kT0);
  db_.InsertOutbox("demo", "   ", "WalletGiftDebited", rose, kT0);
  db_.InsertOutbox("demo", "\xff\xfe", "WalletGiftDebited", rose, kT0);
  db_.InsertOutbox("demo", "at-zero", "WalletGiftDebited", rose, 0);
  db_.InsertOutbox("demo", "before-1970", "WalletGiftDebited", rose, -5);
  db_.InsertOutbox("demo", "good", "WalletGiftDebited", rose, kT0 + 1);
  absl::StatusOr<ProjectionStatus> status = projection_->ledger.Status("demo");
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->unprojected, 6);

  CatchUpRequest request{"demo", 100};
  request.min_age = absl::ZeroDuration();
  absl::StatusOr<CatchUpPass> pass = projection_->recovery.ProjectPendingGiftWallEvents(request);
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->dead, 5);
  EXPECT_EQ(pass->projected, 1);
  EXPECT_EQ(GiftCount(7, "rose"), 1);
  auto last_error = [&](const std::string& hex_id) {
    return db_.QueryString(absl::StrCat(
        "SELECT CONCAT(status, ': ', last_error) FROM wallet_projection_events WHERE event_id = "
        "X'",
        hex_id, "'"));
  };
  EXPECT_EQ(last_error(""), "dead: invalid envelope: event_id is required (it is blank)");
  EXPECT_EQ(last_error("202020"), "dead: invalid envelope: event_id is required (it is blank)");
  EXPECT_EQ(last_error("FFFE"), "dead: invalid envelope: event_id is not valid UTF-8");
  EXPECT_THAT(Ledger("at-zero", "last_error"), HasSubstr("occurred_at_ms must be > 0"));
  EXPECT_THAT(Ledger("before-1970", "last_error"), HasSubstr("got -5"));
  EXPECT_EQ(Ledger("good", "status"), "done");

  status = projection_->ledger.Status("demo");
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->unprojected, 0);
  EXPECT_EQ(status->dead, 5);
  EXPECT_EQ(status->oldest_unprojected_age_ms, 0);
  pass = projection_->recovery.ProjectPendingGiftWallEvents(request);
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->found, 0);

  // A requeue reads the row through the same rules: it stays dead, and a dry run says so.
  absl::StatusOr<RequeueResult> requeue =
      projection_->recovery.RequeueDeadEvent("demo", "   ", "", /*dry_run=*/true);
  ASSERT_TRUE(requeue.ok()) << requeue.status();
  EXPECT_FALSE(requeue->requeued);
  EXPECT_THAT(requeue->reason, HasSubstr("would stay dead: invalid envelope"));
  requeue = projection_->recovery.RequeueDeadEvent("demo", "before-1970", "", /*dry_run=*/false);
  ASSERT_TRUE(requeue.ok()) << requeue.status();
  EXPECT_FALSE(requeue->requeued);
  EXPECT_THAT(requeue->reason, HasSubstr("still dead: invalid envelope"));
  EXPECT_EQ(GiftCount(7, "rose"), 1);
}

// The relay lowercases app codes, so the scan does too: rows the wallet wrote under "DEMO" are
// demo's events, counted, scanned, found and requeued as demo's. Codes that do not normalize at
// all are apart: no path can project their rows.
TEST_F(RecoveryTest, Rule11_OutboxRowsUnderANonNormalizedAppCodeAreTheNormalizedApps) {
  db_.InsertOutbox("DEMO", "E1", "WalletGiftDebited", GiftPayloadJson(7, "rose", 2), kT0);
  db_.InsertOutbox("demo", "E2", "WalletGiftDebited", GiftPayloadJson(7, "rose", 3), kT0);
  db_.InsertOutbox("BAD CODE", "E3", "WalletGiftDebited", GiftPayloadJson(7, "rose", 5), kT0);
  db_.InsertOutbox("other", "R1", "WalletRecharged", "{}", kT0);
  OutboxCodes outbox_codes(projection_->outbox);
  absl::StatusOr<domain::OutboxAppCodes> codes = outbox_codes.All();
  ASSERT_TRUE(codes.ok()) << codes.status();
  ASSERT_EQ(codes->by_app.size(), 1u);
  EXPECT_THAT(codes->by_app["demo"], ::testing::UnorderedElementsAre("DEMO", "demo"));
  EXPECT_THAT(codes->invalid, ::testing::ElementsAre("BAD CODE"));
  absl::StatusOr<int64_t> invalid = projection_->outbox.CountGiftEvents(codes->invalid);
  ASSERT_TRUE(invalid.ok()) << invalid.status();
  EXPECT_EQ(*invalid, 1);

  absl::StatusOr<ProjectionStatus> status =
      projection_->ledger.Status("demo", codes->by_app["demo"]);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->unprojected, 2);

  CatchUpRequest request{"demo", 100};
  request.min_age = absl::ZeroDuration();
  request.outbox_app_code = "DEMO";
  absl::StatusOr<CatchUpPass> pass = projection_->recovery.ProjectPendingGiftWallEvents(request);
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->projected, 1);
  EXPECT_EQ(GiftCount(7, "rose"), 2);
  EXPECT_EQ(Ledger("E1", "projected_by"), "scan");
  // The relay's copy of the same event ("DEMO" normalized) finds it projected.
  EXPECT_EQ(Project(Event("E1", GiftPayloadJson(7, "rose", 2))),
            ProjectionOutcome::kAlreadyProjected);
  status = projection_->ledger.Status("demo", codes->by_app["demo"]);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->unprojected, 1);  // E2, under "demo"

  // The row is found under its own code by the app's code: a requeue can re-read it.
  absl::StatusOr<std::optional<storage::OutboxRow>> row = outbox_codes.FindRow("demo", "E1");
  ASSERT_TRUE(row.ok()) << row.status();
  ASSERT_TRUE(row->has_value());
  EXPECT_EQ((*row)->event.app_code, "demo");
  EXPECT_EQ((*row)->event.payload_json, GiftPayloadJson(7, "rose", 2));
  row = outbox_codes.FindRow("demo", "missing");
  ASSERT_TRUE(row.ok()) << row.status();
  EXPECT_FALSE(row->has_value());
}

TEST_F(RecoveryTest, RequeueReprojectsADeadEventFromItsCorrectedOutboxRow) {
  db_.InsertOutbox("demo", "Q1", "WalletGiftDebited", R"({"target_user_id":7,"gift_id":"rose"})",
                   kT0);
  ASSERT_EQ(Project(Event("Q1", R"({"target_user_id":7,"gift_id":"rose"})")),
            ProjectionOutcome::kDead);
  // Still bad: a dry run says so, a requeue keeps it dead with the reason.
  absl::StatusOr<projection::RequeueResult> r =
      projection_->recovery.RequeueDeadEvent("demo", "Q1", "", /*dry_run=*/true);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->matched);
  EXPECT_FALSE(r->requeued);
  EXPECT_THAT(r->reason, HasSubstr("would stay dead: invalid gift payload: missing gift_count"));
  r = projection_->recovery.RequeueDeadEvent("demo", "Q1", "", /*dry_run=*/false);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->requeued);
  EXPECT_THAT(r->reason, HasSubstr("still dead"));
  EXPECT_EQ(Ledger("Q1", "requeue_count"), "1");

  // The wallet team corrects the row: the requeue projects it at once.
  db_.Exec(
      "UPDATE wallet_outbox SET payload = '{\"target_user_id\":7,\"gift_id\":\"rose\","
      "\"gift_count\":4}' WHERE event_id = 'Q1'");
  r = projection_->recovery.RequeueDeadEvent("demo", "Q1", "", /*dry_run=*/true);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->matched);
  EXPECT_TRUE(r->requeued) << "a dry run says what would be requeued";
  EXPECT_EQ(r->reason, "");
  EXPECT_EQ(Ledger("Q1", "status"), "dead") << "a dry run changes nothing";
  r = projection_->recovery.RequeueDeadEvent("demo", "Q1", "", /*dry_run=*/false);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->requeued);
  EXPECT_EQ(Ledger("Q1", "status"), "done");
  EXPECT_EQ(Ledger("Q1", "projected_by"), "requeue");
  EXPECT_EQ(Ledger("Q1", "retry_count"), "0");
  EXPECT_EQ(Ledger("Q1", "requeue_count"), "2");
  EXPECT_EQ(GiftCount(7, "rose"), 4);
  // Done now: a second requeue is skipped and counts nothing twice.
  r = projection_->recovery.RequeueDeadEvent("demo", "Q1", "", /*dry_run=*/false);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->matched);
  EXPECT_EQ(r->reason, "not dead (status done)");
  EXPECT_EQ(GiftCount(7, "rose"), 4);
}

// A requeue gathered with a relay copy of the same dead event: the requeue claims it (the relay's
// copy does not answer it DEAD first), and the copy answers what the requeue did.
TEST_F(RecoveryTest, ARequeueGatheredWithARelayCopyOfItsEventIsStillARequeue) {
  ASSERT_EQ(Project(Event("Q1", R"({"target_user_id":7,"gift_id":"rose"})")),
            ProjectionOutcome::kDead);
  const GiftEvent corrected = Event("Q1", GiftPayloadJson(7, "rose", 4));
  std::vector<ProjectionUnit> group = {{{corrected}, ProjectedBy::kRelay},
                                       {{corrected}, ProjectedBy::kRequeue}};
  const std::vector<UnitResult> results = projection_->projector.ProjectGroup(group);
  ASSERT_TRUE(results[0].ok()) << results[0].status();
  ASSERT_TRUE(results[1].ok()) << results[1].status();
  EXPECT_EQ(results[1]->front().outcome, ProjectionOutcome::kProjected);
  EXPECT_EQ(results[0]->front().outcome, ProjectionOutcome::kAlreadyProjected);
  EXPECT_EQ(Ledger("Q1", "projected_by"), "requeue");
  EXPECT_EQ(GiftCount(7, "rose"), 4);
}

TEST_F(RecoveryTest, RequeueSkipsEventsItCannotReproject) {
  absl::StatusOr<projection::RequeueResult> r =
      projection_->recovery.RequeueDeadEvent("demo", "nope", "", false);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->reason, "no ledger row");
  // Dead, but the outbox row was pruned.
  ASSERT_EQ(Project(Event("G1", "{}")), ProjectionOutcome::kDead);
  r = projection_->recovery.RequeueDeadEvent("demo", "G1", "", false);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->matched);
  EXPECT_FALSE(r->requeued);
  EXPECT_EQ(r->reason, "outbox row is gone");
  EXPECT_EQ(Ledger("G1", "status"), "dead");
}

TEST_F(RecoveryTest, ARequeueByErrorFindsTheDeadEventsAndListsTheFirstSkipped) {
  // Three dead for a missing gift_count (two of them with their rows fixed), one for another
  // reason, which the error text leaves out.
  for (const std::string id : {"M1", "M2", "M3"}) {
    db_.InsertOutbox("demo", id, "WalletGiftDebited", GiftPayloadJson(7, "rose", 1), kT0);
    ASSERT_EQ(Project(Event(id, R"({"target_user_id":7,"gift_id":"rose"})")),
              ProjectionOutcome::kDead);
  }
  db_.Exec("DELETE FROM wallet_outbox WHERE event_id = 'M3'");
  ASSERT_EQ(Project(Event("X1", "{}")), ProjectionOutcome::kDead);
  RequeueRequest request{"demo", {}, "gift_count", false, 10, 0};
  absl::StatusOr<RequeueReport> report = projection_->recovery.RequeueDeadEvents(request);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->matched, 3);
  EXPECT_EQ(report->requeued, 2);
  EXPECT_TRUE(report->skipped.empty()) << "max_listed 0: counted, not listed";
  EXPECT_EQ(report->skipped_not_listed, 1);
  EXPECT_EQ(GiftCount(7, "rose"), 2);
  EXPECT_EQ(Ledger("X1", "status"), "dead");

  request = RequeueRequest{"demo", {"M3", "nope"}, "", true, 10, 10};
  report = projection_->recovery.RequeueDeadEvents(request);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->skipped.size(), 2u);
  EXPECT_EQ(report->skipped[0],
            std::make_pair(std::string("M3"), std::string("outbox row is gone")));
  EXPECT_EQ(report->skipped[1].second, "no ledger row");
}

TEST_F(RecoveryTest, ACancelledRequeueStopsBetweenEvents) {
  ASSERT_EQ(Project(Event("C1", "{}")), ProjectionOutcome::kDead);
  int asked = 0;
  absl::StatusOr<RequeueReport> report = projection_->recovery.RequeueDeadEvents(
      RequeueRequest{"demo", {"C1", "C2"}, "", false, 10, 10}, [&] { return ++asked > 1; });
  EXPECT_EQ(report.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(asked, 2) << "asked before each event, stopped before the second";
}

TEST_F(RecoveryTest, Rule11_CatchUpNowReadsEveryOutboxCodeOfTheApp) {
  db_.InsertOutbox("demo", "N1", "WalletGiftDebited", GiftPayloadJson(7, "rose", 1), kT0);
  db_.InsertOutbox("DEMO", "N2", "WalletGiftDebited", GiftPayloadJson(7, "rose", 2), kT0);
  db_.InsertOutbox("demo", "N3", "WalletGiftDebited", "{}", kT0);
  absl::StatusOr<CatchUpTotals> totals = projection_->recovery.CatchUpNow("demo", 100);
  ASSERT_TRUE(totals.ok()) << totals.status();
  EXPECT_EQ(totals->found, 3);
  EXPECT_EQ(totals->processed, 3);
  EXPECT_EQ(totals->projected, 2);
  EXPECT_EQ(totals->dead, 1);
  EXPECT_EQ(GiftCount(7, "rose"), 3);
}

}  // namespace
}  // namespace giftwall::projection
