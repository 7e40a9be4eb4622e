// Group commit (DESIGN §2.13), against a real MariaDB: concurrent calls are gathered into one
// transaction, each gets its own outcome, and the engine's limits hold.
#include "server/projection/projection_engine.h"

#include <atomic>
#include <limits>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/projection/projection_test_fixture.h"

namespace giftwall::projection {
namespace {

using domain::ProjectedBy;
using domain::ProjectionOutcome;
using testing::GiftPayloadJson;

// Collects what the engine answers, from its lanes.
class Answers {
 public:
  explicit Answers(int expected) : pending_(expected), results_(static_cast<size_t>(expected)) {}
  std::function<void(UnitResult)> For(size_t i) {
    return [this, i](UnitResult r) {
      results_[i] = std::move(r);
      pending_.DecrementCount();
    };
  }
  const std::vector<UnitResult>& Wait() {
    pending_.Wait();
    return results_;
  }
  // A result answered on the calling thread, before Wait.
  const UnitResult& Peek(size_t i) const { return results_[i]; }

 private:
  absl::BlockingCounter pending_;
  std::vector<UnitResult> results_;
};

ProjectionUnit Single(domain::GiftEvent event) {
  return ProjectionUnit{{std::move(event)}, ProjectedBy::kRelay};
}

class ProjectionEngineTest : public ProjectionTest {
 protected:
  std::unique_ptr<ProjectionEngine> Engine(EngineOptions options) {
    return std::make_unique<ProjectionEngine>(projection_->projector, options);
  }

  // Holds user 1's "rose" wall row (it must exist) until Release(): a group that touches it waits.
  void HoldWallRow() {
    blocker_ = db_.Connect();
    ASSERT_TRUE(blocker_->ExecuteDirect("START TRANSACTION").ok());
    ASSERT_TRUE(blocker_
                    ->ExecuteDirect("SELECT * FROM user_gift_wall WHERE user_id = 1 AND gift_id = "
                                    "'rose' FOR UPDATE")
                    .ok());
  }
  void Release() { ASSERT_TRUE(blocker_->ExecuteDirect("ROLLBACK").ok()); }

  // Projects user 1's "rose", holds its row, and submits a call on it: the lane that takes the
  // call waits on the row until Release(). Returns once a lane has taken it.
  void OccupyALane(ProjectionEngine& engine, std::function<void(UnitResult)> done) {
    ASSERT_EQ(Project(Event("seed", GiftPayloadJson(1, "rose", 1))), ProjectionOutcome::kProjected);
    HoldWallRow();
    engine.Submit(
        {Single(Event("first", GiftPayloadJson(1, "rose", 1))), std::move(done), nullptr});
    while (engine.queued() > 0) absl::SleepFor(absl::Milliseconds(1));
    absl::SleepFor(absl::Milliseconds(50));
    ASSERT_EQ(db_.QueryInt("SELECT COUNT(*) FROM wallet_projection_events WHERE event_id = "
                           "'first'"),
              0)
        << "the lane's call was not held up";
  }

  std::unique_ptr<storage::SqlConnection> blocker_;
};

// Fifty calls arrive while the only lane's transaction waits: they are committed together, in
// one group (one transaction: nothing in it needs a split), and each gets its own outcome,
// duplicates and bad events included.
TEST_F(ProjectionEngineTest,
       Rule13_CallsThatArriveDuringATransactionCommitTogetherEachWithItsOutcome) {
  EngineOptions options;
  options.lanes = 1;
  std::unique_ptr<ProjectionEngine> engine = Engine(options);
  Answers first(1);
  OccupyALane(*engine, first.For(0));

  Answers answers(52);
  for (int i = 0; i < 50; ++i) {
    engine->Submit({Single(Event(absl::StrCat("E", i), GiftPayloadJson(3 + i % 5, "rose", 2))),
                    answers.For(static_cast<size_t>(i)), nullptr});
  }
  engine->Submit({Single(Event("E7", GiftPayloadJson(3 + 7 % 5, "rose", 2))), answers.For(50),
                  nullptr});  // a duplicate of E7 in the same group
  engine->Submit({Single(Event("bad", R"({"gift_id":"rose"})")), answers.For(51), nullptr});
  Release();
  ASSERT_TRUE(first.Wait()[0].ok());
  const std::vector<UnitResult>& results = answers.Wait();

  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(results[static_cast<size_t>(i)].ok()) << results[static_cast<size_t>(i)].status();
    EXPECT_EQ(results[static_cast<size_t>(i)]->front().outcome, ProjectionOutcome::kProjected);
  }
  ASSERT_TRUE(results[50].ok());
  EXPECT_EQ(results[50]->front().outcome, ProjectionOutcome::kAlreadyProjected);
  ASSERT_TRUE(results[51].ok());
  EXPECT_EQ(results[51]->front().outcome, ProjectionOutcome::kDead);

  const EngineStats stats = engine->Stats();
  EXPECT_EQ(stats.units, 53);
  EXPECT_EQ(stats.groups, 2) << "the calls that waited were not gathered into one group";
  EXPECT_EQ(stats.largest_group_events, 52);
  EXPECT_EQ(db_.QueryInt("SELECT SUM(gift_count) FROM user_gift_wall WHERE gift_id = 'rose'"),
            1 + 1 + 50 * 2);
}

// An event that overflows its wall, gathered with others: only it goes dead (its group is split
// until it is alone), every other call projects.
TEST_F(ProjectionEngineTest, Rule6_AnOverflowInAGatheredGroupKillsOnlyItsEvent) {
  ASSERT_EQ(Project(Event("big", GiftPayloadJson(2, "lily", std::numeric_limits<int64_t>::max()))),
            ProjectionOutcome::kProjected);
  EngineOptions options;
  options.lanes = 1;
  std::unique_ptr<ProjectionEngine> engine = Engine(options);
  Answers first(1);
  OccupyALane(*engine, first.For(0));
  Answers answers(21);
  for (size_t i = 0; i < 20; ++i) {
    engine->Submit({Single(Event(absl::StrCat("E", i), GiftPayloadJson(3 + i % 4, "lily", 2))),
                    answers.For(i), nullptr});
  }
  engine->Submit({Single(Event("over", GiftPayloadJson(2, "lily", 1))), answers.For(20), nullptr});
  Release();
  ASSERT_TRUE(first.Wait()[0].ok());
  const std::vector<UnitResult>& results = answers.Wait();
  for (size_t i = 0; i < 20; ++i) {
    ASSERT_TRUE(results[i].ok()) << results[i].status();
    EXPECT_EQ(results[i]->front().outcome, ProjectionOutcome::kProjected);
  }
  ASSERT_TRUE(results[20].ok());
  EXPECT_EQ(results[20]->front().outcome, ProjectionOutcome::kDead);
  EXPECT_THAT(results[20]->front().detail, ::testing::HasSubstr("cannot absorb"));
  EXPECT_EQ(db_.QueryInt("SELECT SUM(gift_count) FROM user_gift_wall WHERE user_id <> 2 AND "
                         "gift_id = 'lily'"),
            40);
  EXPECT_EQ(db_.QueryInt("SELECT gift_count FROM user_gift_wall WHERE user_id = 2"),
            std::numeric_limits<int64_t>::max());
}

// Without group commit, a free lane takes the next call however few wait: a call is not held up
// behind a transaction that waits.
TEST_F(ProjectionEngineTest, WithGroupCommitOffAFreeLaneTakesTheNextCallAtOnce) {
  EngineOptions options;
  options.lanes = 2;
  options.group_commit = false;
  std::unique_ptr<ProjectionEngine> engine = Engine(options);
  Answers held(1);
  OccupyALane(*engine, held.For(0));
  absl::StatusOr<domain::ProjectionResult> other =
      engine->Project(Event("other", GiftPayloadJson(2, "rose", 1)), ProjectedBy::kRelay);
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(other->outcome, ProjectionOutcome::kProjected);
  Release();
  ASSERT_TRUE(held.Wait()[0].ok());
}

TEST_F(ProjectionEngineTest, WithGroupCommitOffEveryCallIsATransactionOfItsOwn) {
  EngineOptions options;
  options.lanes = 1;
  options.group_commit = false;
  std::unique_ptr<ProjectionEngine> engine = Engine(options);
  Answers answers(11);
  OccupyALane(*engine, answers.For(0));
  for (size_t i = 1; i <= 10; ++i) {
    engine->Submit({Single(Event(absl::StrCat("E", i), GiftPayloadJson(2, "rose", 1))),
                    answers.For(i), nullptr});
  }
  Release();
  for (const UnitResult& r : answers.Wait()) ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(engine->Stats().groups, 11);
  EXPECT_EQ(engine->Stats().largest_group_events, 1);
}

TEST_F(ProjectionEngineTest, AGroupHoldsAtMostMaxGroupEventsAndABatchIsNeverSplitAcrossGroups) {
  EngineOptions options;
  options.lanes = 1;
  options.max_group_events = 10;
  std::unique_ptr<ProjectionEngine> engine = Engine(options);
  Answers answers(4);
  OccupyALane(*engine, answers.For(0));
  std::vector<domain::GiftEvent> batch;
  for (int i = 0; i < 25; ++i)
    batch.push_back(Event(absl::StrCat("B", i), GiftPayloadJson(2, "g", 1)));
  engine->Submit({ProjectionUnit{batch, ProjectedBy::kRelay}, answers.For(1), nullptr});
  engine->Submit({Single(Event("S1", GiftPayloadJson(3, "g", 1))), answers.For(2), nullptr});
  engine->Submit({Single(Event("S2", GiftPayloadJson(3, "g", 1))), answers.For(3), nullptr});
  Release();
  const std::vector<UnitResult>& results = answers.Wait();
  for (const UnitResult& r : results) ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(results[1]->size(), 25u);
  // [first], [25-event batch alone], [S1, S2].
  EXPECT_EQ(engine->Stats().groups, 3);
  EXPECT_EQ(engine->Stats().largest_group_events, 25);
  EXPECT_EQ(db_.QueryInt("SELECT gift_count FROM user_gift_wall WHERE user_id = 2"), 25);
}

// --group_by=app_code: the calls that waited are gathered per app, and a batch of two apps is
// projected as one unit per app (no transaction crosses apps), answered together in its order.
TEST_F(ProjectionEngineTest, GroupedByAppNoTransactionHoldsTwoApps) {
  for (bool by_app : {false, true}) {
    SCOPED_TRACE(by_app ? "group_by=app_code" : "group_by=none");
    db_.Exec("DELETE FROM wallet_projection_events");
    db_.Exec("DELETE FROM user_gift_wall");
    db_.Exec("DELETE FROM user_gift_wall_sender");
    EngineOptions options;
    options.lanes = 1;
    options.group_by_app = by_app;
    std::unique_ptr<ProjectionEngine> engine = Engine(options);
    Answers answers(6);
    OccupyALane(*engine, answers.For(0));
    const std::string run = by_app ? "app-" : "any-";
    engine->Submit(
        {Single(Event(run + "D1", GiftPayloadJson(2, "g", 1))), answers.For(1), nullptr});
    engine->Submit({Single(Event(run + "O1", GiftPayloadJson(2, "g", 1), kT0, "other")),
                    answers.For(2), nullptr});
    engine->Submit({ProjectionUnit{{Event(run + "BO", GiftPayloadJson(3, "g", 1), kT0, "other"),
                                    Event(run + "BD", GiftPayloadJson(3, "g", 2)),
                                    Event(run + "BO", GiftPayloadJson(3, "g", 1), kT0, "other")},
                                   ProjectedBy::kRelay},
                    answers.For(3), nullptr});
    engine->Submit(
        {Single(Event(run + "D2", GiftPayloadJson(2, "g", 1))), answers.For(4), nullptr});
    engine->Submit({Single(Event(run + "O2", GiftPayloadJson(2, "g", 1), kT0, "other")),
                    answers.For(5), nullptr});
    Release();
    const std::vector<UnitResult>& results = answers.Wait();
    for (const UnitResult& r : results) ASSERT_TRUE(r.ok()) << r.status();
    // The batch's results in its order: its second "other" event is its first's duplicate.
    ASSERT_EQ(results[3]->size(), 3u);
    EXPECT_EQ((*results[3])[0].outcome, ProjectionOutcome::kProjected);
    EXPECT_EQ((*results[3])[1].outcome, ProjectionOutcome::kProjected);
    EXPECT_EQ((*results[3])[2].outcome, ProjectionOutcome::kAlreadyProjected);
    // The lane's first call, then: everything in one group; or demo's group and other's.
    EXPECT_EQ(engine->Stats().groups, by_app ? 3 : 2);
    EXPECT_EQ(db_.QueryInt("SELECT SUM(gift_count) FROM user_gift_wall WHERE app_code = 'demo'"),
              1 + 1 + 1 + 1 + 2);
    EXPECT_EQ(db_.QueryInt("SELECT SUM(gift_count) FROM user_gift_wall WHERE app_code = 'other'"),
              1 + 1 + 1);
  }
}

TEST_F(ProjectionEngineTest, AFullQueueAnswersResourceExhaustedAtOnceAndShutdownAnswersTheRest) {
  EngineOptions options;
  options.lanes = 1;
  options.queue_capacity = 2;
  std::unique_ptr<ProjectionEngine> engine = Engine(options);
  Answers answers(4);
  OccupyALane(*engine, answers.For(0));
  for (size_t i = 1; i <= 3; ++i) {
    engine->Submit({Single(Event(absl::StrCat("E", i), GiftPayloadJson(2, "rose", 1))),
                    answers.For(i), nullptr});
  }
  // The third could not be queued: it was answered at once, on this thread.
  EXPECT_EQ(answers.Peek(3).status().code(), absl::StatusCode::kResourceExhausted);
  std::thread stop([&] { engine->Shutdown(); });  // nothing queued may start any more
  absl::SleepFor(absl::Milliseconds(100));
  Release();
  stop.join();
  const std::vector<UnitResult>& results = answers.Wait();
  EXPECT_TRUE(results[0].ok()) << "the group in flight finishes: " << results[0].status();
  EXPECT_EQ(results[1].status().code(), absl::StatusCode::kUnavailable) << results[1].status();
  EXPECT_EQ(results[2].status().code(), absl::StatusCode::kUnavailable) << results[2].status();
  EXPECT_EQ(results[3].status().code(), absl::StatusCode::kResourceExhausted)
      << results[3].status();
  EXPECT_EQ(db_.QueryInt("SELECT COUNT(*) FROM user_gift_wall WHERE user_id = 2"), 0);
}

TEST_F(ProjectionEngineTest, AUnitItsCallerNoLongerWantsIsAnsweredWithoutBeingProjected) {
  EngineOptions options;
  std::unique_ptr<ProjectionEngine> engine = Engine(options);
  Answers answers(1);
  engine->Submit({Single(Event("E1", GiftPayloadJson(2, "rose", 1))), answers.For(0),
                  [] { return absl::CancelledError("the client cancelled the call"); }});
  EXPECT_EQ(answers.Wait()[0].status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(db_.QueryInt("SELECT COUNT(*) FROM wallet_projection_events"), 0);
}

// Many callers at once through the engine: every event counts once, every call is answered OK.
TEST_F(ProjectionEngineTest, ThirtyTwoCallersDeliveringOverlappingEventsCountEachOnce) {
  EngineOptions options;
  std::unique_ptr<ProjectionEngine> engine = Engine(options);
  std::atomic<int> projected{0}, errors{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 32; ++t) {
    callers.emplace_back([&, t] {
      for (int i = 0; i < 60; ++i) {
        const int n = (t * 7 + i) % 400;  // callers overlap: each event is sent ~5 times
        absl::StatusOr<domain::ProjectionResult> r = engine->Project(
            Event(absl::StrCat("E", n),
                  GiftPayloadJson(1 + n % 9, absl::StrCat("g", n % 4), 1, 100 + n % 13, 10)),
            ProjectedBy::kRelay);
        if (!r.ok()) {
          if (errors++ < 3) ADD_FAILURE() << r.status();
        } else if (r->outcome == ProjectionOutcome::kProjected) {
          ++projected;
        }
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(errors, 0);
  // The true count, from what the callers sent; the ledger and the answers must both say it.
  std::set<int> sent;
  for (int t = 0; t < 32; ++t) {
    for (int i = 0; i < 60; ++i) sent.insert((t * 7 + i) % 400);
  }
  const int64_t distinct = static_cast<int64_t>(sent.size());
  EXPECT_EQ(db_.QueryInt("SELECT COUNT(*) FROM wallet_projection_events"), distinct);
  EXPECT_EQ(projected, distinct);
  EXPECT_EQ(db_.QueryInt("SELECT SUM(gift_count) FROM user_gift_wall"), distinct);
  EXPECT_EQ(db_.QueryInt("SELECT SUM(sent_count) FROM user_gift_wall_sender"), distinct);
  EXPECT_LT(engine->Stats().groups, engine->Stats().units) << "no call was ever gathered";
}

}  // namespace
}  // namespace giftwall::projection
