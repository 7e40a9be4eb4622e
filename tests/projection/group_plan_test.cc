// The group state machine's plans and decisions, as pure functions: no store at all.
#include "server/projection/group_plan.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/domain/wall_cap.h"
#include "server/storage/db_error.h"
#include "tests/support/test_database.h"

namespace giftwall::projection::group {
namespace {

using domain::LedgerStatus;
using domain::ProjectedBy;
using domain::ProjectionOutcome;
using storage::DbErrorKind;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

domain::GiftEvent Event(const std::string& id, int64_t user, const std::string& gift,
                        int64_t count = 1, const std::string& app = "demo") {
  return domain::GiftEvent{app, id, giftwall::testing::GiftPayloadJson(user, gift, count), 1};
}

absl::Status Kind(DbErrorKind kind) {
  return storage::WithErrorKind(absl::AbortedError("x"), kind);
}

domain::RetryPolicy Retry() {
  domain::RetryPolicy retry;
  retry.contention_attempts = 3;
  return retry;
}

TEST(GroupPlan, EachEventPointsAtTheFirstCopyOfItsIdAndARequeueTakesItOver) {
  const std::vector<ProjectionUnit> units = {
      {{Event("E1", 7, "rose"), Event("E2", 7, "rose")}, ProjectedBy::kRelay},
      {{Event("E1", 7, "rose")}, ProjectedBy::kRequeue},
      {{Event("E2", 7, "rose")}, ProjectedBy::kScan},
  };
  const GroupIndex index = IndexUnits(units);
  ASSERT_EQ(index.owners.size(), 2u);
  EXPECT_EQ(index.owners[0].by, ProjectedBy::kRequeue);
  EXPECT_EQ(index.owner_slot[0], std::make_pair(size_t{1}, size_t{0}));
  EXPECT_EQ(index.owners[1].by, ProjectedBy::kRelay);
  EXPECT_THAT(index.slot_owner[0], ElementsAre(0, 1));
  EXPECT_THAT(index.slot_owner[2], ElementsAre(1));
}

TEST(GroupPlan, ACopyOfAProjectedEventAnswersAlreadyProjectedAndAFailureFailsItsUnit) {
  const std::vector<ProjectionUnit> units = {
      {{Event("E1", 7, "rose")}, ProjectedBy::kRelay},
      {{Event("E1", 7, "rose")}, ProjectedBy::kRelay},
      {{Event("E2", 7, "lily"), Event("E3", 7, "lily")}, ProjectedBy::kRelay},
  };
  GroupIndex index = IndexUnits(units);
  index.owners[0].outcome = domain::ProjectionResult{ProjectionOutcome::kProjected, ""};
  index.owners[1].outcome = domain::ProjectionResult{ProjectionOutcome::kProjected, ""};
  index.owners[2].outcome = absl::UnavailableError("down");
  const std::vector<UnitResult> answers = Answers(index);
  ASSERT_TRUE(answers[0].ok());
  EXPECT_EQ((*answers[0])[0].outcome, ProjectionOutcome::kProjected);
  ASSERT_TRUE(answers[1].ok());
  EXPECT_EQ((*answers[1])[0].outcome, ProjectionOutcome::kAlreadyProjected);
  EXPECT_EQ(answers[2].status().code(), absl::StatusCode::kUnavailable);
}

TEST(GroupPlan, LocksAreTakenByAppThenWallRowThenEvent) {
  const std::vector<ProjectionUnit> units = {
      {{Event("E1", 8, "a"), Event("E2", 7, "b"), Event("E3", 7, "a"), Event("E0", 7, "a"),
        Event("E9", 1, "z", 1, "alpha")},
       ProjectedBy::kRelay},
  };
  const GroupIndex index = IndexUnits(units);
  std::vector<std::string> ids;
  for (size_t o : LockOrder(index.owners)) ids.push_back(index.owners[o].event->event_id);
  EXPECT_THAT(ids, ElementsAre("E9", "E0", "E3", "E2", "E1"));
}

TEST(GroupPlan, TheLedgerAnswersDoneDeadAndLeasedAndTheRestAreClaimed) {
  const std::vector<ProjectionUnit> units = {
      {{Event("done", 7, "a"), Event("dead", 7, "a"), Event("held", 7, "a"),
        Event("failed", 7, "a"), Event("new", 7, "a")},
       ProjectedBy::kScan}};
  const GroupIndex index = IndexUnits(units);
  storage::LedgerSnapshot ledger;
  ledger.now_ms = 1000;
  ledger.rows["done"].status = LedgerStatus::kDone;
  ledger.rows["dead"] = {LedgerStatus::kDead, 10, "", 0, "why"};
  ledger.rows["held"] = {LedgerStatus::kProcessing, 0, "pod-1", 5000, ""};
  ledger.rows["failed"] = {LedgerStatus::kFailed, 3, "", 0, "boom"};
  Attempt attempt;
  const std::vector<size_t> part = {0, 1, 2, 3, 4};
  EXPECT_TRUE(PlanClaims(index.owners, part, ledger, attempt));
  ASSERT_EQ(attempt.answered.size(), 3u);
  EXPECT_EQ(attempt.answered[0].second.outcome, ProjectionOutcome::kAlreadyProjected);
  EXPECT_EQ(attempt.answered[1].second.outcome, ProjectionOutcome::kDead);
  EXPECT_EQ(attempt.answered[1].second.detail, "why");
  EXPECT_EQ(attempt.answered[2].second.outcome, ProjectionOutcome::kLeased);
  ASSERT_EQ(attempt.claims.size(), 2u);
  EXPECT_EQ(attempt.claims[0].row->retry_count, 3);
  EXPECT_FALSE(attempt.claims[1].row.has_value());

  Attempt none;
  EXPECT_FALSE(PlanClaims(index.owners, {4}, storage::LedgerSnapshot{}, none));
}

TEST(GroupPlan, WritesFoldGoodEventsAndWriteBadOnesDeadWithTheirReason) {
  std::vector<ProjectionUnit> units = {{{Event("E1", 7, "rose", 2), Event("E2", 7, "rose", 3),
                                         Event("bad", 7, "rose"), Event("doomed", 8, "rose")},
                                        ProjectedBy::kRelay}};
  units[0].events[2].payload_json = "{}";
  GroupIndex index = IndexUnits(units);
  index.owners[3].must_die = "the wall cannot absorb this event";
  Attempt attempt;
  ClaimAll(std::vector<size_t>{0, 1, 2, 3}, attempt);
  attempt.claims[1].row = domain::LedgerRow{LedgerStatus::kFailed, 4, "", 0, "boom"};
  absl::StatusOr<WritePlan> plan = PlanWrites(index.owners, attempt);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const AppWrites& app = plan->at("demo");
  ASSERT_EQ(app.inserts.size(), 3u);
  ASSERT_EQ(app.updates.size(), 1u);
  EXPECT_EQ(app.updates[0].retry_count, 4) << "a reclaim keeps the count of failures";
  EXPECT_EQ(app.updates[0].expected.retry_count, 4);
  EXPECT_EQ(app.inserts[1].status, LedgerStatus::kDead);
  EXPECT_FALSE(app.inserts[1].last_error.empty());
  EXPECT_EQ(app.inserts[2].last_error, "the wall cannot absorb this event");
  EXPECT_EQ(app.deltas.at(domain::WallKey{7, "rose"}).gift_count, 5);
  EXPECT_EQ(app.deltas.size(), 1u);
  EXPECT_EQ(attempt.folding(), 2u);
  ASSERT_EQ(attempt.planned.size(), 4u);
  EXPECT_EQ(attempt.planned[2].second.outcome, ProjectionOutcome::kDead);
}

TEST(GroupPlan, ARequeueOfADeadEventStartsItsFailuresAfresh) {
  const std::vector<ProjectionUnit> units = {{{Event("E1", 7, "rose")}, ProjectedBy::kRequeue}};
  const GroupIndex index = IndexUnits(units);
  Attempt attempt;
  attempt.claims.push_back(Claim{0, domain::LedgerRow{LedgerStatus::kDead, 10, "", 0, "x"}, false});
  absl::StatusOr<WritePlan> plan = PlanWrites(index.owners, attempt);
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->at("demo").updates[0].requeued);
  EXPECT_EQ(plan->at("demo").updates[0].retry_count, 0);
}

TEST(GroupPlan, AFoldThatOverflowsIsPermanent) {
  const int64_t max = std::numeric_limits<int64_t>::max();
  const std::vector<ProjectionUnit> units = {
      {{Event("E1", 7, "rose", max), Event("E2", 7, "rose", 1)}, ProjectedBy::kRelay}};
  const GroupIndex index = IndexUnits(units);
  Attempt attempt;
  ClaimAll(std::vector<size_t>{0, 1}, attempt);
  EXPECT_EQ(PlanWrites(index.owners, attempt).status().code(), absl::StatusCode::kOutOfRange);
}

TEST(GroupPlan, AFailureCountsOnceMoreAndGoesDeadAtMaxRetriesButNotForARequeue) {
  const std::vector<ProjectionUnit> units = {
      {{Event("new", 7, "a"), Event("last", 7, "a")}, ProjectedBy::kRelay},
      {{Event("requeued", 7, "a")}, ProjectedBy::kRequeue}};
  const GroupIndex index = IndexUnits(units);
  Attempt attempt;
  attempt.cause = absl::UnavailableError("gone away");
  attempt.claims = {Claim{0, std::nullopt, true},
                    Claim{1, domain::LedgerRow{LedgerStatus::kFailed, 9, "", 0, ""}, true},
                    Claim{2, domain::LedgerRow{LedgerStatus::kDead, 10, "", 0, ""}, true}};
  const auto writes =
      PlanFailures(index.owners, attempt, domain::RetryPolicy{}, [] { return 0.5; });
  const FailureWrites& app = writes.at("demo");
  ASSERT_EQ(app.inserts.size(), 1u);
  EXPECT_EQ(app.inserts[0].status, LedgerStatus::kFailed);
  EXPECT_EQ(app.inserts[0].retry_count, 1);
  EXPECT_GT(app.inserts[0].retry_after_ms, 0);
  EXPECT_THAT(app.inserts[0].last_error, HasSubstr("gone away"));
  ASSERT_EQ(app.updates.size(), 1u) << "a requeue's failure leaves the event as it was";
  EXPECT_EQ(app.updates[0].status, LedgerStatus::kDead);
  EXPECT_EQ(app.updates[0].retry_count, 10);
}

TEST(GroupPlan, TheCapRefusesOnlyGiftsNewToAWallPastIt) {
  const std::vector<ProjectionUnit> units = {
      {{Event("old", 7, "a"), Event("new", 7, "c"), Event("other", 8, "c")}, ProjectedBy::kRelay}};
  const GroupIndex index = IndexUnits(units);
  Attempt attempt;
  attempt.claims = {Claim{0, std::nullopt, true}, Claim{1, std::nullopt, true},
                    Claim{2, std::nullopt, true}};
  domain::WallDeltas deltas;
  deltas[{7, "a"}].gift_count = 1;
  deltas[{7, "c"}].gift_count = 1;
  deltas[{8, "c"}].gift_count = 1;
  EXPECT_THAT(UsersOf(deltas), ElementsAre(7, 8));
  const std::map<int64_t, int64_t> over = {{7, 3}};
  EXPECT_EQ(KeysOf(deltas, over).size(), 2u);
  const std::map<domain::WallKey, int64_t> counts = {{{7, "a"}, 4}, {{7, "c"}, 1}};
  const std::vector<CapRefusal> refusals =
      RefuseOverCap(index.owners, attempt, "demo", deltas, over, counts, 2);
  ASSERT_EQ(refusals.size(), 1u);
  EXPECT_EQ(refusals[0].user_id, 7);
  EXPECT_THAT(refusals[0].owners, ElementsAre(1));
}

TEST(GroupPlan, ErrorsMeanWhatTheirPhaseMakesOfThem) {
  EXPECT_EQ(Classify(Kind(DbErrorKind::kConflict), Phase::kRead), Ending::kContention);
  EXPECT_EQ(Classify(Kind(DbErrorKind::kLockWait), Phase::kClaim), Ending::kClaimLockWait);
  EXPECT_EQ(Classify(Kind(DbErrorKind::kLockWait), Phase::kFold), Ending::kContention);
  EXPECT_EQ(Classify(Kind(DbErrorKind::kDuplicate), Phase::kClaim), Ending::kRaced);
  EXPECT_EQ(Classify(Kind(DbErrorKind::kDuplicate), Phase::kFold), Ending::kTransient);
  EXPECT_EQ(Classify(Kind(DbErrorKind::kPermanent), Phase::kFold), Ending::kPermanent);
  EXPECT_EQ(Classify(Kind(DbErrorKind::kPermanent), Phase::kClaim), Ending::kTransient);
  EXPECT_EQ(Classify(Kind(DbErrorKind::kUnavailable), Phase::kFold), Ending::kTransient);
}

TEST(GroupPlan, CallersAreToldToRetryWhatTheDatabaseMayGetOver) {
  EXPECT_EQ(ForCaller(absl::UnavailableError("x")).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(ForCaller(absl::AbortedError("x")).code(), absl::StatusCode::kAborted);
  const absl::Status late = ForCaller(absl::DeadlineExceededError("max_statement_time"));
  EXPECT_EQ(late.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(late.message()), HasSubstr("statement time limit"));
  const absl::Status bug = ForCaller(absl::InternalError("no such table"));
  EXPECT_EQ(bug.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(bug.message()), HasSubstr("projection failed"));
}

// A group of `n` relay events with nothing decided yet.
struct Machine {
  explicit Machine(size_t n) {
    for (size_t i = 0; i < n; ++i) {
      units.push_back({{Event("E" + std::to_string(i), 7, "rose")}, ProjectedBy::kRelay});
      part.push_back(i);
    }
    index = IndexUnits(units);
  }
  Step Decide(const Attempt& attempt) { return group::Decide(attempt, state, index.owners, part); }
  Attempt Ended(Ending ending, absl::Status cause = absl::AbortedError("deadlock")) const {
    Attempt a;
    a.ending = ending;
    a.cause = cause;
    for (size_t o : part) a.claims.push_back(Claim{o, std::nullopt, true});
    return a;
  }

  std::vector<ProjectionUnit> units;
  GroupIndex index;
  std::vector<size_t> part;
  domain::RetryPolicy retry = Retry();
  Retrying state{retry, true};
};

TEST(GroupDecide, ACommitSettlesEveryOwner) {
  Machine m(2);
  Attempt a = m.Ended(Ending::kCommitted);
  a.answered = {{0, {ProjectionOutcome::kAlreadyProjected, ""}}};
  a.planned = {{1, {ProjectionOutcome::kProjected, ""}}};
  EXPECT_EQ(m.Decide(a).next, Step::kDone);
  EXPECT_EQ(m.index.owners[0].outcome->value().outcome, ProjectionOutcome::kAlreadyProjected);
  EXPECT_EQ(m.index.owners[1].outcome->value().outcome, ProjectionOutcome::kProjected);
}

TEST(GroupDecide, ATransientFailureFailsWhatTheLedgerDidNotAnswer) {
  Machine m(2);
  Attempt a = m.Ended(Ending::kTransient, absl::DeadlineExceededError("slow"));
  a.answered = {{0, {ProjectionOutcome::kDead, "why"}}};
  const Step step = m.Decide(a);
  EXPECT_EQ(step.next, Step::kFail);
  EXPECT_EQ(m.index.owners[0].outcome->value().outcome, ProjectionOutcome::kDead);
  EXPECT_EQ(m.index.owners[1].outcome->status().code(), absl::StatusCode::kUnavailable);
}

TEST(GroupDecide, AnOverflowSplitsTheGroupUntilOneEventFoldsAndThatOneDies) {
  Machine m(2);
  EXPECT_EQ(m.Decide(m.Ended(Ending::kPermanent)).next, Step::kSplit);
  Machine alone(1);
  const Step step = alone.Decide(alone.Ended(Ending::kPermanent, absl::OutOfRangeError("sum")));
  EXPECT_EQ(step.next, Step::kAgain);
  EXPECT_THAT(alone.index.owners[0].must_die, HasSubstr("the wall cannot absorb this event: sum"));
  EXPECT_FALSE(alone.index.owners[0].outcome.has_value());
}

TEST(GroupDecide, AHeldClaimIsTriedAloneAndAloneAnswersLeased) {
  Machine m(3);
  EXPECT_EQ(m.Decide(m.Ended(Ending::kClaimLockWait)).next, Step::kEachAlone);
  Machine alone(1);
  EXPECT_EQ(alone.Decide(alone.Ended(Ending::kClaimLockWait)).next, Step::kDone);
  EXPECT_EQ(alone.index.owners[0].outcome->value().outcome, ProjectionOutcome::kLeased);
  EXPECT_TRUE(alone.part.empty());
}

TEST(GroupDecide, ARaceReadsAgainAtOnceWhileClaimsShrinkThenCountsAsContention) {
  Machine m(3);
  Step step = m.Decide(m.Ended(Ending::kRaced));
  EXPECT_EQ(step.next, Step::kAgain);
  EXPECT_TRUE(step.met_existing_rows) << "a blind claim met a row";
  EXPECT_FALSE(m.state.claim_blind);
  step = m.Decide(m.Ended(Ending::kRaced));
  EXPECT_EQ(step.next, Step::kAgain);
  EXPECT_EQ(step.pause, absl::ZeroDuration()) << "fewer claims than ever: no pause";
  step = m.Decide(m.Ended(Ending::kRaced));
  EXPECT_EQ(step.next, Step::kAgain);
  EXPECT_GT(step.pause, absl::ZeroDuration()) << "no fewer claims: contention";
  EXPECT_FALSE(step.met_existing_rows);
}

TEST(GroupDecide, ContentionPausesThenGivesUpWithAborted) {
  Machine m(2);
  EXPECT_EQ(m.Decide(m.Ended(Ending::kContention)).next, Step::kAgain);
  EXPECT_EQ(m.Decide(m.Ended(Ending::kContention)).next, Step::kAgain);
  const Step step = m.Decide(m.Ended(Ending::kContention));
  EXPECT_EQ(step.next, Step::kFail);
  EXPECT_EQ(step.failure.code(), absl::StatusCode::kAborted);
  EXPECT_THAT(std::string(step.failure.message()), HasSubstr("gave up after 3 attempts"));
  EXPECT_EQ(m.index.owners[1].outcome->status().code(), absl::StatusCode::kAborted);
}

TEST(GroupDecide, OverTheCapTriesAgainAndNoSessionFailsEveryone) {
  Machine m(2);
  EXPECT_EQ(m.Decide(m.Ended(Ending::kOverCap)).next, Step::kAgain);
  const Step step = m.Decide(m.Ended(Ending::kNoSession, absl::UnavailableError("pool")));
  EXPECT_EQ(step.next, Step::kFail);
  EXPECT_EQ(m.index.owners[0].outcome->status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace giftwall::projection::group
