// The group state machine driven through a fake store, without a database: every path an
// attempt can take (commit, split, retry, give-up, failure recorded, dead, held, raced, over
// the cap). group_projector_test checks the same rules against MariaDB.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/domain/wall_cap.h"
#include "server/projection/group_projector.h"
#include "tests/projection/fake_group_store.h"
#include "tests/support/test_database.h"

namespace giftwall::projection {
namespace {

using domain::LedgerStatus;
using domain::ProjectedBy;
using domain::ProjectionOutcome;
using storage::DbErrorKind;
using testing::Call;
using testing::DbError;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int64_t kT0 = 1'700'000'000'000;

domain::GiftEvent Event(const std::string& id, int64_t user, const std::string& gift, int64_t count,
                        int64_t sender = 0) {
  return domain::GiftEvent{"demo", id,
                           giftwall::testing::GiftPayloadJson(user, gift, count, sender), kT0};
}

domain::RetryPolicy NoPauses() {
  domain::RetryPolicy retry;
  retry.contention_base = absl::Microseconds(1);
  return retry;
}

class FakeStoreTest : public ::testing::Test {
 protected:
  explicit FakeStoreTest(int64_t cap = domain::kDefaultMaxWallGifts)
      : projector_(store_, NoPauses(), cap) {}

  // One unit per event; the outcome of each, or the failure's code.
  std::vector<std::string> Project(const std::vector<domain::GiftEvent>& events,
                                   ProjectedBy by = ProjectedBy::kRelay) {
    std::vector<ProjectionUnit> units;
    for (const domain::GiftEvent& e : events) units.push_back(ProjectionUnit{{e}, by});
    std::vector<std::string> outcomes;
    for (const UnitResult& r : projector_.ProjectGroup(units)) {
      last_failure_ = r.ok() ? absl::OkStatus() : r.status();
      outcomes.push_back(r.ok()
                             ? absl::AsciiStrToUpper(domain::ProjectionOutcomeName((*r)[0].outcome))
                             : absl::StatusCodeToString(r.status().code()));
    }
    return outcomes;
  }
  const testing::FakeLedgerRow& Ledger(const std::string& id) { return store_.app().ledger.at(id); }
  int64_t GiftCount(int64_t user, const std::string& gift) {
    auto it = store_.app().walls.find(domain::WallKey{user, gift});
    return it == store_.app().walls.end() ? 0 : it->second.gift_count;
  }

  testing::FakeGroupStore store_;
  GroupProjector projector_;
  absl::Status last_failure_;
};

TEST_F(FakeStoreTest, AGroupCommitsItsClaimsAndItsFoldTogether) {
  EXPECT_THAT(Project({Event("E1", 7, "rose", 2, 9), Event("E2", 7, "rose", 3, 9),
                       Event("E3", 8, "lily", 1)}),
              ElementsAre("PROJECTED", "PROJECTED", "PROJECTED"));
  EXPECT_EQ(GiftCount(7, "rose"), 5);
  EXPECT_EQ(GiftCount(8, "lily"), 1);
  EXPECT_EQ(store_.app().walls.at({7, "rose"}).senders.at(9).sent_count, 5);
  EXPECT_EQ(Ledger("E2").row.status, LedgerStatus::kDone);
  EXPECT_EQ(store_.calls(Call::kCommit), 1);
  EXPECT_EQ(store_.calls(Call::kReadLedger), 0) << "a relay group of new events is claimed blind";
}

TEST_F(FakeStoreTest, Rule19_TheSentWallIsFoldedWithTheWallOnlyWhereTheAppKeepsIt) {
  EXPECT_THAT(Project({Event("E1", 7, "rose", 2, 9)}), ElementsAre("PROJECTED"));
  EXPECT_TRUE(store_.app().sent.empty()) << "an app without settings keeps no sent wall";
  EXPECT_EQ(store_.calls(Call::kMergeSent), 0);

  domain::AppSettings settings;
  settings.zones = {{INT64_MIN, "UTC"}};
  settings.keep_sent_wall = true;
  store_.settings["demo"] = settings;
  // A deadlock at the sent rows rolls the whole group back: its retry folds each event once.
  store_.Fail(Call::kMergeSent, DbError(DbErrorKind::kConflict, "deadlock"));
  EXPECT_THAT(Project({Event("E2", 7, "rose", 3, 9), Event("E3", 8, "rose", 1, 9)}),
              ElementsAre("PROJECTED", "PROJECTED"));
  EXPECT_EQ(store_.calls(Call::kMergeSent), 2);
  EXPECT_EQ(GiftCount(7, "rose"), 5);
  // The sent wall holds what was folded since the app began keeping it: E2 and E3. Receiver 7
  // was sent to before, so only receiver 8 is new to it.
  const domain::SentTotals sent{4, 0, 1, kT0, kT0};
  EXPECT_EQ(store_.app().sent.at(domain::SentKey{9, "rose"}), (domain::SentRow{sent, sent, false}));
}

TEST_F(FakeStoreTest, AnEventTwiceInAGroupIsFoldedOnce) {
  ProjectionUnit unit{{Event("E1", 7, "rose", 2), Event("E1", 7, "rose", 2)}, ProjectedBy::kRelay};
  std::vector<UnitResult> results = projector_.ProjectGroup({unit});
  ASSERT_TRUE(results[0].ok()) << results[0].status();
  EXPECT_EQ((*results[0])[0].outcome, ProjectionOutcome::kProjected);
  EXPECT_EQ((*results[0])[1].outcome, ProjectionOutcome::kAlreadyProjected);
  EXPECT_EQ(GiftCount(7, "rose"), 2);
}

TEST_F(FakeStoreTest, AFoldAWallCannotAbsorbIsSplitUntilTheEventThatCausesItIsAlone) {
  store_.app().walls[{7, "rose"}].gift_count = std::numeric_limits<int64_t>::max() - 1;
  EXPECT_THAT(
      Project({Event("E1", 7, "rose", 1), Event("E2", 7, "rose", 5), Event("E3", 8, "rose", 1)}),
      ElementsAre("PROJECTED", "DEAD", "PROJECTED"));
  EXPECT_EQ(GiftCount(7, "rose"), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(GiftCount(8, "rose"), 1);
  EXPECT_EQ(Ledger("E2").row.status, LedgerStatus::kDead);
  EXPECT_THAT(Ledger("E2").row.last_error, HasSubstr("the wall cannot absorb this event"));
  EXPECT_EQ(Ledger("E1").row.status, LedgerStatus::kDone);
}

TEST_F(FakeStoreTest, ContentionRetriesTheWholeGroupAndIsNotAFailure) {
  store_.Fail(Call::kMergeWalls, DbError(DbErrorKind::kConflict, "deadlock"), 2);
  EXPECT_THAT(Project({Event("E1", 7, "rose", 2), Event("E2", 7, "lily", 1)}),
              ElementsAre("PROJECTED", "PROJECTED"));
  EXPECT_EQ(store_.calls(Call::kBegin), 3);
  EXPECT_EQ(GiftCount(7, "rose"), 2) << "the rolled-back attempts left nothing behind";
  EXPECT_EQ(Ledger("E1").row.retry_count, 0);
}

TEST_F(FakeStoreTest, ContentionThatOutlastsEveryAttemptGivesUpWithAborted) {
  store_.Fail(Call::kMergeSenders, DbError(DbErrorKind::kLockWait, "lock wait"), -1);
  EXPECT_THAT(Project({Event("E1", 7, "rose", 2, 9)}), ElementsAre("ABORTED"));
  EXPECT_THAT(std::string(last_failure_.message()), HasSubstr("gave up after 6 attempts"));
  EXPECT_EQ(store_.calls(Call::kBegin), 6);
  EXPECT_TRUE(store_.app().ledger.empty()) << "contention is never recorded as a failure";
  EXPECT_EQ(GiftCount(7, "rose"), 0);
}

// Group Replication's certification rollback (3101) is retried as a conflict; past the attempts
// the member is taken to be refusing writes for now: UNAVAILABLE, which the relay retries.
TEST_F(FakeStoreTest, AGroupReplicationRollbackIsRetriedThenUnavailable) {
  store_.Fail(Call::kMergeWalls, storage::MysqlError(3101, "40000", "plugin rollback"), 2);
  EXPECT_THAT(Project({Event("E1", 7, "rose", 2)}), ElementsAre("PROJECTED"));
  store_.Fail(Call::kMergeWalls, storage::MysqlError(3101, "40000", "plugin rollback"), -1);
  EXPECT_THAT(Project({Event("E2", 7, "rose", 1)}), ElementsAre("UNAVAILABLE"));
  EXPECT_THAT(std::string(last_failure_.message()), HasSubstr("gave up after 6 attempts"));
  EXPECT_EQ(GiftCount(7, "rose"), 2);
  EXPECT_EQ(store_.app().ledger.count("E2"), 0u) << "contention is never recorded";
}

TEST_F(FakeStoreTest, ATransientFailureIsRecordedWithItsBackoffAndAnsweredUnavailable) {
  store_.Fail(Call::kMergeWalls, DbError(DbErrorKind::kUnavailable, "server has gone away"));
  EXPECT_THAT(Project({Event("E1", 7, "rose", 2)}), ElementsAre("UNAVAILABLE"));
  EXPECT_EQ(Ledger("E1").row.status, LedgerStatus::kFailed);
  EXPECT_EQ(Ledger("E1").row.retry_count, 1);
  EXPECT_GT(Ledger("E1").retry_after_ms, 0);
  EXPECT_THAT(Ledger("E1").row.last_error, HasSubstr("server has gone away"));
  EXPECT_EQ(GiftCount(7, "rose"), 0);

  EXPECT_THAT(Project({Event("E1", 7, "rose", 2)}), ElementsAre("PROJECTED"));
  EXPECT_EQ(Ledger("E1").row.retry_count, 1) << "a claim keeps the count of its failures";
  EXPECT_EQ(GiftCount(7, "rose"), 2);
}

TEST_F(FakeStoreTest, AFailureOnABrokenSessionIsRecordedOnAFreshOne) {
  store_.broken_sessions = true;
  store_.Fail(Call::kMergeWalls, DbError(DbErrorKind::kUnavailable, "lost connection"));
  EXPECT_THAT(Project({Event("E1", 7, "rose", 2)}), ElementsAre("UNAVAILABLE"));
  EXPECT_EQ(store_.calls(Call::kOpen), 2);
  EXPECT_EQ(Ledger("E1").row.status, LedgerStatus::kFailed);
}

TEST_F(FakeStoreTest, AnEventThatKeepsFailingGoesDeadAtMaxRetries) {
  domain::RetryPolicy retry = NoPauses();
  retry.max_retries = 2;
  GroupProjector projector(store_, retry);
  store_.Fail(Call::kMergeWalls, DbError(DbErrorKind::kTransient, "boom"), 2);
  const ProjectionUnit unit{{Event("E1", 7, "rose", 2)}, ProjectedBy::kRelay};
  EXPECT_FALSE(projector.ProjectGroup({unit})[0].ok());
  EXPECT_EQ(Ledger("E1").row.status, LedgerStatus::kFailed);
  EXPECT_FALSE(projector.ProjectGroup({unit})[0].ok());
  EXPECT_EQ(Ledger("E1").row.status, LedgerStatus::kDead);
  EXPECT_EQ(Ledger("E1").row.retry_count, 2);
  UnitResult again = projector.ProjectGroup({unit})[0];
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)[0].outcome, ProjectionOutcome::kDead);
  EXPECT_THAT((*again)[0].detail, HasSubstr("boom"));
}

TEST_F(FakeStoreTest, ABadPayloadIsDeadAtOnceAndTheRestProjects) {
  domain::GiftEvent bad = Event("E1", 7, "rose", 1);
  bad.payload_json = R"({"gift_id":"rose","gift_count":1})";
  EXPECT_THAT(Project({bad, Event("E2", 7, "rose", 1)}), ElementsAre("DEAD", "PROJECTED"));
  EXPECT_EQ(Ledger("E1").row.status, LedgerStatus::kDead);
  EXPECT_EQ(GiftCount(7, "rose"), 1);
}

TEST_F(FakeStoreTest, AHeldEventInAGroupIsClaimedAloneAndAloneAnswersLeased) {
  // The group's blind insert waits out the lock bound, then so does E1's own claim.
  store_.Fail(Call::kInsertLedger, DbError(DbErrorKind::kLockWait, "lock wait"), 2);
  EXPECT_THAT(Project({Event("E1", 7, "rose", 1), Event("E2", 7, "rose", 2)}),
              ElementsAre("LEASED", "PROJECTED"));
  EXPECT_EQ(GiftCount(7, "rose"), 2);
  EXPECT_EQ(store_.app().ledger.count("E1"), 0u);
}

// The insert skips the row that exists (MariaDB): the group commits the rest, and reads the
// ledger for the event it lost.
TEST_F(FakeStoreTest, ABlindClaimThatMeetsARowProjectsTheRestThenReadsTheLedgerFirst) {
  ASSERT_THAT(Project({Event("E1", 7, "rose", 1)}), ElementsAre("PROJECTED"));
  EXPECT_THAT(Project({Event("E1", 7, "rose", 1), Event("E2", 7, "rose", 2)}),
              ElementsAre("ALREADY_PROJECTED", "PROJECTED"));
  EXPECT_EQ(store_.calls(Call::kReadLedger), 1);
  EXPECT_EQ(store_.calls(Call::kInsertLedger), 2);
  EXPECT_EQ(GiftCount(7, "rose"), 3);
  // Groups after that are read first, while they meet rows.
  EXPECT_THAT(Project({Event("E2", 7, "rose", 2)}), ElementsAre("ALREADY_PROJECTED"));
  EXPECT_EQ(store_.calls(Call::kReadLedger), 2);
  EXPECT_EQ(store_.calls(Call::kInsertLedger), 2);
}

// Without RETURNING (MySQL) a row that exists fails the insert: the whole group is read first.
TEST_F(FakeStoreTest, ABlindClaimThatFailsOnADuplicateIsReadFirst) {
  ASSERT_THAT(Project({Event("E1", 7, "rose", 1)}), ElementsAre("PROJECTED"));
  store_.Fail(Call::kInsertLedger, DbError(DbErrorKind::kDuplicate, "duplicate entry E1"));
  EXPECT_THAT(Project({Event("E1", 7, "rose", 1), Event("E2", 7, "rose", 2)}),
              ElementsAre("ALREADY_PROJECTED", "PROJECTED"));
  EXPECT_EQ(store_.calls(Call::kReadLedger), 1);
  EXPECT_EQ(store_.calls(Call::kInsertLedger), 3);
  EXPECT_EQ(GiftCount(7, "rose"), 3);
  EXPECT_EQ(Ledger("E2").row.status, LedgerStatus::kDone);
}

// Another caller commits E1 between this group's read and its insert: E2 and E3 are folded in
// this transaction, E1 (lost) is read again and answered by the other caller's row. Nothing is
// rolled back.
TEST_F(FakeStoreTest, AClaimLostToAnotherCallerAfterTheReadIsReadAgainAndTheRestCommits) {
  ASSERT_THAT(Project({Event("E0", 7, "rose", 1)}), ElementsAre("PROJECTED"));  // read first now
  ASSERT_THAT(Project({Event("E0", 7, "rose", 1)}), ElementsAre("ALREADY_PROJECTED"));
  store_.Before(Call::kInsertLedger, [](testing::FakeGroupStore& s) {
    testing::FakeLedgerRow done;
    done.row.status = LedgerStatus::kDone;
    s.app().ledger["E1"] = done;
    s.app().walls[{7, "rose"}].gift_count += 5;
  });
  EXPECT_THAT(
      Project({Event("E1", 7, "rose", 5), Event("E2", 7, "rose", 2), Event("E3", 8, "lily", 1)}),
      ElementsAre("ALREADY_PROJECTED", "PROJECTED", "PROJECTED"));
  EXPECT_EQ(GiftCount(7, "rose"), 1 + 5 + 2);
  EXPECT_EQ(GiftCount(8, "lily"), 1);
  EXPECT_EQ(store_.calls(Call::kBegin), 2 + 1);  // E0's group, then this one transaction
}

TEST_F(FakeStoreTest, ARowChangedSinceItWasReadIsReadAgain) {
  testing::FakeLedgerRow failed;
  failed.row.status = LedgerStatus::kFailed;
  failed.row.retry_count = 1;
  store_.app().ledger["E1"] = failed;
  // Another caller projects E1 between the read and the claim.
  store_.Before(Call::kBegin, [](testing::FakeGroupStore& s) {
    s.app().ledger["E1"].row.status = LedgerStatus::kDone;
    s.app().walls[{7, "rose"}].gift_count += 1;
  });
  EXPECT_THAT(Project({Event("E1", 7, "rose", 1)}, ProjectedBy::kScan),
              ElementsAre("ALREADY_PROJECTED"));
  EXPECT_EQ(store_.calls(Call::kReadLedger), 2);
  EXPECT_EQ(GiftCount(7, "rose"), 1);
}

TEST_F(FakeStoreTest, NoSessionFailsEveryUnitWithItsCause) {
  store_.Fail(Call::kOpen, absl::UnavailableError("no session within 1s"));
  EXPECT_THAT(Project({Event("E1", 7, "rose", 1), Event("E2", 7, "lily", 1)}),
              ElementsAre("UNAVAILABLE", "UNAVAILABLE"));
  EXPECT_TRUE(store_.app().ledger.empty());
}

TEST_F(FakeStoreTest, ARequeuedDeadEventStartsItsFailuresAfresh) {
  testing::FakeLedgerRow dead;
  dead.row.status = LedgerStatus::kDead;
  dead.row.retry_count = 10;
  dead.row.last_error = "old";
  store_.app().ledger["E1"] = dead;
  EXPECT_THAT(Project({Event("E1", 7, "rose", 1)}), ElementsAre("DEAD"));
  EXPECT_THAT(Project({Event("E1", 7, "rose", 1)}, ProjectedBy::kRequeue),
              ElementsAre("PROJECTED"));
  EXPECT_EQ(Ledger("E1").row.retry_count, 0);
  EXPECT_EQ(Ledger("E1").requeue_count, 1);
}

class CappedFakeStoreTest : public FakeStoreTest {
 protected:
  CappedFakeStoreTest() : FakeStoreTest(2) {}
};

TEST_F(CappedFakeStoreTest, AGiftNewToAWallAtTheCapGoesDeadAndTheRestProjects) {
  ASSERT_THAT(Project({Event("E1", 7, "a", 1), Event("E2", 7, "b", 1)}),
              ElementsAre("PROJECTED", "PROJECTED"));
  EXPECT_THAT(Project({Event("E3", 7, "c", 1), Event("E4", 7, "a", 1), Event("E5", 8, "c", 1)}),
              ElementsAre("DEAD", "PROJECTED", "PROJECTED"));
  EXPECT_EQ(Ledger("E3").row.last_error, domain::WallCapReason(7, 2));
  EXPECT_EQ(GiftCount(7, "c"), 0);
  EXPECT_EQ(GiftCount(7, "a"), 2);
  EXPECT_EQ(GiftCount(8, "c"), 1);
}

}  // namespace
}  // namespace giftwall::projection
