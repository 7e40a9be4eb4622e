// One test per rule of the projection contract (DESIGN §2) for the projection of events, against a
// real MariaDB.
#include "server/projection/group_projector.h"

#include <atomic>
#include <cctype>
#include <limits>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/storage/db_error.h"
#include "tests/projection/projection_test_fixture.h"
#include "tests/support/timing.h"

namespace giftwall::projection {
namespace {

using domain::GiftEvent;
using domain::ProjectedBy;
using domain::ProjectionOutcome;
using storage::ConnectionPool;
using storage::PoolOptions;
using storage::SqlConnection;
using testing::GiftPayloadJson;
using ::testing::HasSubstr;

using GroupProjectorTest = ProjectionTest;

TEST_F(GroupProjectorTest, Rule1_LedgerRowRecordsTheProjectedEvent) {
  const int64_t before = DbNowMs();
  EXPECT_EQ(Project(Event("E1", GiftPayloadJson(7, "rose", 3))), ProjectionOutcome::kProjected);
  EXPECT_EQ(Ledger("E1", "status"), "done");
  EXPECT_EQ(Ledger("E1", "projected_by"), "relay");
  EXPECT_EQ(Ledger("E1", "target_user_id"), "7");
  EXPECT_EQ(Ledger("E1", "retry_count"), "0");
  EXPECT_EQ(Ledger("E1", "locked_by"), "");
  EXPECT_EQ(Ledger("E1", "locked_until_ms"), "0");
  EXPECT_EQ(Ledger("E1", "last_error"), "");
  EXPECT_GE(std::stoll(Ledger("E1", "processed_at_ms")), before);
  EXPECT_GE(std::stoll(Ledger("E1", "created_at_ms")), before);
  EXPECT_EQ(GiftCount(7, "rose"), 3);
}

TEST_F(GroupProjectorTest, Rule2_DoneEventIsNeverAggregatedAgain) {
  const GiftEvent event = Event("E1", GiftPayloadJson(7, "rose", 3));
  EXPECT_EQ(Project(event), ProjectionOutcome::kProjected);
  EXPECT_EQ(Project(event), ProjectionOutcome::kAlreadyProjected);
  EXPECT_EQ(Project(event, ProjectedBy::kScan), ProjectionOutcome::kAlreadyProjected);
  EXPECT_EQ(GiftCount(7, "rose"), 3);
  EXPECT_EQ(Ledger("E1", "projected_by"), "relay");
}

TEST_F(GroupProjectorTest, Rule2_DeadEventIsNeverAggregatedAgain) {
  EXPECT_EQ(Project(Event("E1", R"({"gift_id":"rose","gift_count":1})")), ProjectionOutcome::kDead);
  // Even a redelivery whose payload would now be valid stays dead: only a requeue revives it.
  absl::StatusOr<domain::ProjectionResult> again = projection_->projector.Project(
      Event("E1", GiftPayloadJson(7, "rose", 1)), ProjectedBy::kRelay);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->outcome, ProjectionOutcome::kDead);
  EXPECT_THAT(again->detail, HasSubstr("missing target_user_id"));
  EXPECT_EQ(WallRows(), 0);
}

TEST_F(GroupProjectorTest, Rule3_FailedEventIsClaimedAgain) {
  InsertLedger("E1", "failed", 2, 0, DbNowMs() + 600'000);
  EXPECT_EQ(Project(Event("E1", GiftPayloadJson(7, "rose", 3))), ProjectionOutcome::kProjected);
  EXPECT_EQ(Ledger("E1", "status"), "done");
  EXPECT_EQ(Ledger("E1", "retry_count"), "2");
  EXPECT_EQ(GiftCount(7, "rose"), 3);
}

TEST_F(GroupProjectorTest, Rule3_ExpiredLeaseIsClaimedAgain) {
  InsertLedger("E1", "processing", 0, DbNowMs() - 1, DbNowMs() - 1);
  EXPECT_EQ(Project(Event("E1", GiftPayloadJson(7, "rose", 3))), ProjectionOutcome::kProjected);
  EXPECT_EQ(Ledger("E1", "status"), "done");
  EXPECT_EQ(Ledger("E1", "locked_by"), "");
}

TEST_F(GroupProjectorTest, Rule3_LiveLeaseAnswersLeased) {
  InsertLedger("E1", "processing", 0, DbNowMs() + 600'000, DbNowMs() + 600'000);
  absl::StatusOr<domain::ProjectionResult> result = projection_->projector.Project(
      Event("E1", GiftPayloadJson(7, "rose", 3)), ProjectedBy::kRelay);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->outcome, ProjectionOutcome::kLeased);
  EXPECT_THAT(result->detail, HasSubstr("other-worker"));
  EXPECT_EQ(WallRows(), 0);
  EXPECT_EQ(Ledger("E1", "status"), "processing");
}

// A duplicate that arrives while another transaction holds the event waits for it and then
// reports what the holder did, without an UPDATE of its own (so no deadlock).
TEST_F(GroupProjectorTest, Rule3_DuplicateWaitsForTheHolderAndSeesItsOutcome) {
  std::unique_ptr<SqlConnection> holder = db_.Connect();
  ASSERT_TRUE(holder->ExecuteDirect("START TRANSACTION").ok());
  ASSERT_TRUE(
      holder
          ->ExecuteDirect("INSERT INTO wallet_projection_events (projection_name, app_code, "
                          "event_id, status, created_at_ms, updated_at_ms) VALUES "
                          "('user_gift_wall', 'demo', 'E1', 'processing', 1, 1)")
          .ok());
  absl::StatusOr<domain::ProjectionResult> result;
  absl::Notification finished;
  std::thread duplicate([&] {
    result = projection_->projector.Project(Event("E1", GiftPayloadJson(7, "rose", 3)),
                                            ProjectedBy::kRelay);
    finished.Notify();
  });
  EXPECT_FALSE(finished.WaitForNotificationWithTimeout(absl::Milliseconds(300)))
      << "the duplicate did not wait for the holder";
  ASSERT_TRUE(holder->ExecuteDirect("UPDATE wallet_projection_events SET status = 'done'").ok());
  ASSERT_TRUE(holder->ExecuteDirect("COMMIT").ok());
  duplicate.join();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->outcome, ProjectionOutcome::kAlreadyProjected);
  EXPECT_EQ(WallRows(), 0);
}

TEST_F(GroupProjectorTest, Rule3_DuplicateAnswersLeasedWhenTheHolderOutlastsTheLockWait) {
  PoolOptions options = db_.PoolOptions();
  options.session.lock_wait_timeout = absl::Seconds(1);
  ConnectionPool pool(options);
  testing::TestProjection repo(pool);
  std::unique_ptr<SqlConnection> holder = db_.Connect();
  ASSERT_TRUE(holder->ExecuteDirect("START TRANSACTION").ok());
  ASSERT_TRUE(
      holder
          ->ExecuteDirect("INSERT INTO wallet_projection_events (projection_name, app_code, "
                          "event_id, status, created_at_ms, updated_at_ms) VALUES "
                          "('user_gift_wall', 'demo', 'E1', 'processing', 1, 1)")
          .ok());
  absl::StatusOr<domain::ProjectionResult> result =
      repo.projector.Project(Event("E1", GiftPayloadJson(7, "rose", 3)), ProjectedBy::kRelay);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->outcome, ProjectionOutcome::kLeased);
  ASSERT_TRUE(holder->ExecuteDirect("ROLLBACK").ok());
  // The holder gave up: the event is free, and the next delivery projects it.
  result = repo.projector.Project(Event("E1", GiftPayloadJson(7, "rose", 3)), ProjectedBy::kRelay);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->outcome, ProjectionOutcome::kProjected);
}

// In a batch, the one event another caller holds answers LEASED; every other event projects, and
// the held event's wait is not paid once per event.
TEST_F(GroupProjectorTest, Rule3_AHeldEventInABatchAloneAnswersLeased) {
  PoolOptions options = db_.PoolOptions();
  options.session.lock_wait_timeout = absl::Seconds(1);
  ConnectionPool pool(options);
  testing::TestProjection repo(pool);
  std::unique_ptr<SqlConnection> holder = db_.Connect();
  ASSERT_TRUE(holder->ExecuteDirect("START TRANSACTION").ok());
  ASSERT_TRUE(
      holder
          ->ExecuteDirect("INSERT INTO wallet_projection_events (projection_name, app_code, "
                          "event_id, status, created_at_ms, updated_at_ms) VALUES "
                          "('user_gift_wall', 'demo', 'B5', 'processing', 1, 1)")
          .ok());
  std::vector<GiftEvent> batch;
  for (int i = 0; i < 12; ++i) {
    batch.push_back(Event(absl::StrCat("B", i), GiftPayloadJson(7 + i % 3, "rose", 1)));
  }
  const absl::Time start = absl::Now();
  UnitResult results = repo.projector.ProjectBatch(batch, ProjectedBy::kRelay);
  const absl::Duration took = absl::Now() - start;
  ASSERT_TRUE(holder->ExecuteDirect("ROLLBACK").ok());
  ASSERT_TRUE(results.ok()) << results.status();
  for (int i = 0; i < 12; ++i) {
    EXPECT_EQ((*results)[static_cast<size_t>(i)].outcome,
              i == 5 ? ProjectionOutcome::kLeased : ProjectionOutcome::kProjected)
        << "B" << i;
  }
  EXPECT_EQ(db_.QueryInt("SELECT SUM(gift_count) FROM user_gift_wall"), 11);
  // The group's own wait, then the held event's: not one wait per event or per halving.
  if (testing::kWallClockBoundsHold) {
    EXPECT_LT(took, absl::Seconds(8)) << took;
  }
}

TEST_F(GroupProjectorTest, Rule5_PayloadIsReadLikeGo) {
  // Keys match case-insensitively, the last duplicate wins, null means absent, unknown keys
  // are ignored, and the gift id is trimmed.
  EXPECT_EQ(Project(Event("E1", R"({"Target_User_ID":7,"GIFT_ID":" rose ","gift_count":1,)"
                                R"("gift_count":4,"sender_user_id":null,"extra":[1,{"a":2}]})")),
            ProjectionOutcome::kProjected);
  EXPECT_EQ(GiftCount(7, "rose"), 4);
  // An integer in quotes is a type error, as in Go: the whole payload is invalid.
  EXPECT_EQ(Project(Event("E2", R"({"target_user_id":"7","gift_id":"rose","gift_count":1})")),
            ProjectionOutcome::kDead);
  // An empty payload means {}: incomplete.
  EXPECT_EQ(Project(Event("E3", "")), ProjectionOutcome::kDead);
  EXPECT_THAT(Ledger("E3", "last_error"), HasSubstr("missing target_user_id"));
  EXPECT_EQ(GiftCount(7, "rose"), 4);
}

TEST_F(GroupProjectorTest, Rule6_InvalidPayloadIsDeadAtOnceWithItsReason) {
  absl::StatusOr<domain::ProjectionResult> result = projection_->projector.Project(
      Event("E1", R"({"target_user_id":7,"gift_id":"rose","gift_count":0})"), ProjectedBy::kRelay);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->outcome, ProjectionOutcome::kDead);
  EXPECT_EQ(result->detail, "invalid gift payload: gift_count must be > 0, got 0");
  EXPECT_EQ(Ledger("E1", "status"), "dead");
  EXPECT_EQ(Ledger("E1", "retry_count"), "0");
  EXPECT_EQ(Ledger("E1", "last_error"), result->detail);
  EXPECT_EQ(WallRows(), 0);
}

TEST_F(GroupProjectorTest, Rule6_AggregateOverflowIsDeadAndTheWallUnchanged) {
  const int64_t big = std::numeric_limits<int64_t>::max() - 5;
  EXPECT_EQ(Project(Event("E1", GiftPayloadJson(7, "rose", big))), ProjectionOutcome::kProjected);
  absl::StatusOr<domain::ProjectionResult> result = projection_->projector.Project(
      Event("E2", GiftPayloadJson(7, "rose", 10), kT0 + 5), ProjectedBy::kRelay);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->outcome, ProjectionOutcome::kDead);
  EXPECT_THAT(result->detail, HasSubstr("out of range"));
  EXPECT_EQ(Ledger("E2", "status"), "dead");
  EXPECT_EQ(GiftCount(7, "rose"), big);
  EXPECT_EQ(db_.QueryInt("SELECT last_received_at_ms FROM user_gift_wall"), kT0);
  // Other gifts of the same wall still project.
  EXPECT_EQ(Project(Event("E3", GiftPayloadJson(7, "lily", 1))), ProjectionOutcome::kProjected);
}

// A fold that fails for a reason a retry may fix is rolled back, recorded failed with a backoff,
// and goes dead after max_retries failures.
TEST_F(GroupProjectorTest, Rule7_TransientFailureIsRecordedFailedWithBackoffThenDead) {
  domain::RetryPolicy retry = testing::FastRetry();
  retry.max_retries = 3;
  retry.backoff_base = absl::Seconds(60);
  Reset(retry);
  ASSERT_EQ(Project(Event("E0", GiftPayloadJson(7, "rose", 1))), ProjectionOutcome::kProjected);
  // The wall's table vanishes for a while: every fold fails after its claim. A missing table is
  // no busy database: the call says INTERNAL (a retry is not what fixes it), and the failure is
  // recorded like any other.
  db_.Exec("RENAME TABLE user_gift_wall TO user_gift_wall_away");
  const GiftEvent event = Event("E1", GiftPayloadJson(7, "rose", 3));
  for (int failure = 1; failure <= 3; ++failure) {
    const int64_t before = DbNowMs();
    absl::StatusOr<domain::ProjectionResult> result =
        projection_->projector.Project(event, ProjectedBy::kRelay);
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.status().code(), absl::StatusCode::kInternal) << result.status();
    EXPECT_THAT(result.status().message(), HasSubstr("user_gift_wall"));
    EXPECT_EQ(Ledger("E1", "retry_count"), absl::StrCat(failure));
    EXPECT_THAT(Ledger("E1", "last_error"), HasSubstr("user_gift_wall"));
    if (failure < 3) {
      EXPECT_EQ(Ledger("E1", "status"), "failed");
      // Backoff: at least half of base * 2^(failure-1) from the database's now.
      const int64_t next = std::stoll(Ledger("E1", "next_attempt_at_ms"));
      EXPECT_GE(next, before + 30'000 * (1 << (failure - 1)));
      EXPECT_LE(next, DbNowMs() + 60'000 * (1 << (failure - 1)));
    }
  }
  EXPECT_EQ(Ledger("E1", "status"), "dead");
  db_.Exec("RENAME TABLE user_gift_wall_away TO user_gift_wall");
  EXPECT_EQ(Project(event), ProjectionOutcome::kDead);
  EXPECT_EQ(GiftCount(7, "rose"), 1);
}

TEST_F(GroupProjectorTest, Rule8_LockWaitTimeoutIsRetriedAndNotCountedAsFailure) {
  PoolOptions pool_options = db_.PoolOptions();
  pool_options.session.lock_wait_timeout = absl::Seconds(1);
  ConnectionPool pool(pool_options);
  testing::TestProjection repo(pool);
  ASSERT_EQ(Project(Event("E0", GiftPayloadJson(7, "rose", 1))), ProjectionOutcome::kProjected);
  // Another session holds the wall row for longer than one lock wait.
  std::unique_ptr<SqlConnection> blocker = db_.Connect();
  ASSERT_TRUE(blocker->ExecuteDirect("START TRANSACTION").ok());
  ASSERT_TRUE(blocker->ExecuteDirect("UPDATE user_gift_wall SET updated_at_ms = 2").ok());
  std::thread release([&] {
    absl::SleepFor(absl::Milliseconds(1500));
    ASSERT_TRUE(blocker->ExecuteDirect("COMMIT").ok());
  });
  absl::StatusOr<domain::ProjectionResult> result =
      repo.projector.Project(Event("E1", GiftPayloadJson(7, "rose", 3)), ProjectedBy::kRelay);
  release.join();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->outcome, ProjectionOutcome::kProjected);
  EXPECT_EQ(Ledger("E1", "retry_count"), "0");
  EXPECT_EQ(GiftCount(7, "rose"), 4);
}

TEST_F(GroupProjectorTest, Rule8_PersistentContentionAnswersAbortedAndWritesNothing) {
  PoolOptions pool_options = db_.PoolOptions();
  pool_options.session.lock_wait_timeout = absl::Seconds(1);
  ConnectionPool pool(pool_options);
  domain::RetryPolicy retry = testing::FastRetry();
  retry.contention_attempts = 2;
  testing::TestProjection repo(pool, retry);
  ASSERT_EQ(Project(Event("E0", GiftPayloadJson(7, "rose", 1))), ProjectionOutcome::kProjected);
  std::unique_ptr<SqlConnection> blocker = db_.Connect();
  ASSERT_TRUE(blocker->ExecuteDirect("START TRANSACTION").ok());
  ASSERT_TRUE(blocker->ExecuteDirect("UPDATE user_gift_wall SET updated_at_ms = 2").ok());
  absl::StatusOr<domain::ProjectionResult> result =
      repo.projector.Project(Event("E1", GiftPayloadJson(7, "rose", 3)), ProjectedBy::kRelay);
  ASSERT_TRUE(blocker->ExecuteDirect("ROLLBACK").ok());
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kAborted) << result.status();
  EXPECT_EQ(db_.QueryInt("SELECT COUNT(*) FROM wallet_projection_events WHERE event_id = 'E1'"), 0);
  EXPECT_EQ(GiftCount(7, "rose"), 1);
}

// A real deadlock (1213): another transaction holds user 8's wall row; the group takes user 7's
// and waits for 8's; the other then asks for 7's. InnoDB rolls back the lighter of the two, the
// group (the other has modified 300 rows first). The group retries the whole transaction and
// projects, and no event is charged a failure (DESIGN §2.8).
TEST_F(GroupProjectorTest, Rule8_ADeadlockRollsTheGroupBackAndItsRetryProjects) {
  PoolOptions pool_options = db_.PoolOptions();
  // Nothing times out while the cycle forms, however slow the machine.
  pool_options.session.lock_wait_timeout = absl::Seconds(50);
  pool_options.session.statement_timeout = absl::Seconds(100);
  pool_options.session.read_timeout = absl::Seconds(120);
  ConnectionPool pool(pool_options);
  testing::TestProjection repo(pool);
  std::vector<ProjectionUnit> seed;
  for (int i = 0; i < 300; ++i) {
    seed.push_back(
        {{Event(absl::StrCat("H", i), GiftPayloadJson(9, "rose", 1))}, ProjectedBy::kRelay});
  }
  seed.push_back({{Event("A7", GiftPayloadJson(7, "rose", 1))}, ProjectedBy::kRelay});
  seed.push_back({{Event("A8", GiftPayloadJson(8, "rose", 1))}, ProjectedBy::kRelay});
  for (const UnitResult& r : repo.projector.ProjectGroup(seed)) ASSERT_TRUE(r.ok()) << r.status();

  std::unique_ptr<SqlConnection> other = db_.Connect();
  ASSERT_TRUE(other->ExecuteDirect("SET SESSION innodb_lock_wait_timeout = 50").ok());
  ASSERT_TRUE(other->ExecuteDirect("START TRANSACTION").ok());
  ASSERT_TRUE(other
                  ->ExecuteDirect("UPDATE wallet_projection_events SET last_error = 'heavy' "
                                  "WHERE target_user_id = 9")
                  .ok());
  ASSERT_TRUE(
      other->ExecuteDirect("UPDATE user_gift_wall SET updated_at_ms = 2 WHERE user_id = 8").ok());
  const int64_t deadlocks_before = storage::MysqlErrorCounts()[1213];
  std::vector<UnitResult> results;
  std::thread group([&] {
    results = repo.projector.ProjectGroup(
        {{{Event("E7", GiftPayloadJson(7, "rose", 2))}, ProjectedBy::kRelay},
         {{Event("E8", GiftPayloadJson(8, "rose", 3))}, ProjectedBy::kRelay}});
  });
  // Once the group's merge of the walls waits for user 8's row (holding user 7's), close the
  // cycle. A merge of two rows that has run for half a second is waiting (InnoDB's own view of
  // lock waits, innodb_trx, does not show it on MariaDB 10.11). Only this test's database is
  // looked at: other tests run beside it.
  bool waiting = false;
  for (int i = 0; i < 3000 && !waiting; ++i) {
    waiting = db_.QueryInt(
                  "SELECT COUNT(*) FROM information_schema.processlist WHERE db = DATABASE() AND "
                  "info REGEXP 'INSERT INTO user_gift_wall[[:space:]]' AND time_ms > 500") > 0;
    if (!waiting) absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_TRUE(waiting) << "the group never waited for user 8's row";
  ASSERT_TRUE(
      other->ExecuteDirect("UPDATE user_gift_wall SET updated_at_ms = 3 WHERE user_id = 7").ok())
      << "the other transaction was the deadlock's victim";
  ASSERT_TRUE(other->ExecuteDirect("COMMIT").ok());
  group.join();
  ASSERT_EQ(results.size(), 2u);
  for (const UnitResult& r : results) {
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->front().outcome, ProjectionOutcome::kProjected);
  }
  EXPECT_GT(storage::MysqlErrorCounts()[1213], deadlocks_before) << "no deadlock happened";
  EXPECT_EQ(Ledger("E7", "retry_count"), "0");
  EXPECT_EQ(Ledger("E8", "retry_count"), "0");
  EXPECT_EQ(GiftCount(7, "rose"), 3);
  EXPECT_EQ(GiftCount(8, "rose"), 4);
}

// Groups that overlap in every way (the same walls, senders and events, delivered in opposite
// orders, an event even carrying another wall in another caller's copy) never deadlock: every
// group takes its row locks in one order (DESIGN §2.13). Each event projects once.
TEST_F(GroupProjectorTest, Rule8_OverlappingGroupsNeverDeadlockUnderTheOneLockOrder) {
  ConnectionPool pool(db_.PoolOptions(16));
  testing::TestProjection repo(pool);
  const int64_t deadlocks_before = storage::MysqlErrorCounts()[1213];
  std::vector<std::thread> callers;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t) {
    callers.emplace_back([&, t] {
      for (int round = 0; round < 15; ++round) {
        std::vector<ProjectionUnit> units;
        for (int i = 0; i < 12; ++i) {
          const int n = (t % 2 == 0) ? i : 11 - i;  // half the callers in reverse order
          const std::string id = absl::StrCat("R", round, "-", (n + t) % 12);
          units.push_back({{Event(id, GiftPayloadJson(1 + n % 4, absl::StrCat("g", n % 3), 1,
                                                      100 + n % 5, 10))},
                           ProjectedBy::kRelay});
        }
        for (const UnitResult& r : repo.projector.ProjectGroup(units)) {
          if (!r.ok() && failures++ < 3) ADD_FAILURE() << r.status();
        }
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(storage::MysqlErrorCounts()[1213], deadlocks_before) << "overlapping groups deadlocked";
  EXPECT_EQ(db_.QueryInt("SELECT COUNT(*) FROM wallet_projection_events"), 15 * 12);
  EXPECT_EQ(db_.QueryInt("SELECT SUM(gift_count) FROM user_gift_wall"), 15 * 12);
}

TEST_F(GroupProjectorTest, Rule9_LedgerTimesComeFromTheDatabaseClock) {
  domain::RetryPolicy retry = testing::FastRetry();
  retry.backoff_base = absl::Seconds(100);
  Reset(retry);
  db_.Exec("RENAME TABLE user_gift_wall TO user_gift_wall_away");
  const int64_t before = DbNowMs();
  EXPECT_FALSE(projection_->projector
                   .Project(Event("E1", GiftPayloadJson(7, "rose", 1)), ProjectedBy::kRelay)
                   .ok());
  const int64_t after = DbNowMs();
  db_.Exec("RENAME TABLE user_gift_wall_away TO user_gift_wall");
  const int64_t updated = std::stoll(Ledger("E1", "updated_at_ms"));
  EXPECT_GE(updated, before);
  EXPECT_LE(updated, after);
  const int64_t next = std::stoll(Ledger("E1", "next_attempt_at_ms"));
  EXPECT_GE(next, updated + 50'000);
  EXPECT_LE(next, updated + 100'000);
}

TEST_F(GroupProjectorTest, Rule10_AnyDeliveryOrderGivesTheSameWall) {
  // The same five events, delivered in two orders to two users' walls.
  const std::vector<std::pair<int64_t, int64_t>> events = {
      {kT0 + 50, 2}, {kT0 + 10, 1}, {kT0 + 90, 5}, {kT0 + 30, 3}, {kT0 + 70, 4}};
  for (int64_t user : {1, 2}) {
    for (size_t k = 0; k < events.size(); ++k) {
      const size_t i = user == 1 ? k : events.size() - 1 - k;
      EXPECT_EQ(Project(Event(absl::StrCat("U", user, "-", i),
                              GiftPayloadJson(user, "rose", events[i].second), events[i].first)),
                ProjectionOutcome::kProjected);
    }
  }
  for (int64_t user : {1, 2}) {
    const std::string where = absl::StrCat(" FROM user_gift_wall WHERE user_id = ", user);
    EXPECT_EQ(db_.QueryInt("SELECT gift_count" + where), 15);
    EXPECT_EQ(db_.QueryInt("SELECT first_received_at_ms" + where), kT0 + 10);
    EXPECT_EQ(db_.QueryInt("SELECT last_received_at_ms" + where), kT0 + 90);
  }
}

// Sums: coins as debited at event time; events without a sender count toward the gift only.
TEST_F(GroupProjectorTest, Rule10_CoinsAndSendersAddUp) {
  EXPECT_EQ(Project(Event("S1", GiftPayloadJson(7, "rose", 2, 100, 20))),
            ProjectionOutcome::kProjected);
  EXPECT_EQ(Project(Event("S2", GiftPayloadJson(7, "rose", 3, 101, 30), kT0 + 1)),
            ProjectionOutcome::kProjected);
  EXPECT_EQ(Project(Event("S3", GiftPayloadJson(7, "rose", 1, 100, 10), kT0 + 2)),
            ProjectionOutcome::kProjected);
  EXPECT_EQ(Project(Event("S4", GiftPayloadJson(7, "rose", 4, 0, 40), kT0 + 3)),  // no sender
            ProjectionOutcome::kProjected);
  const std::string wall = " FROM user_gift_wall WHERE user_id = 7 AND gift_id = 'rose'";
  EXPECT_EQ(db_.QueryInt("SELECT gift_count" + wall), 10);
  EXPECT_EQ(db_.QueryInt("SELECT total_coins" + wall), 100);
  EXPECT_EQ(db_.QueryInt("SELECT sender_count" + wall), 2);
  const std::string sender = " FROM user_gift_wall_sender WHERE user_id = 7 AND sender_user_id = ";
  EXPECT_EQ(db_.QueryInt("SELECT sent_count" + sender + "100"), 3);
  EXPECT_EQ(db_.QueryInt("SELECT sent_coins" + sender + "100"), 30);
  EXPECT_EQ(db_.QueryInt("SELECT first_sent_at_ms" + sender + "100"), kT0);
  EXPECT_EQ(db_.QueryInt("SELECT last_sent_at_ms" + sender + "100"), kT0 + 2);
  EXPECT_EQ(db_.QueryInt("SELECT COUNT(*) FROM user_gift_wall_sender"), 2);
}

// The 冠名: the highest sent_count; a tie goes to whoever reached that count first (the earlier
// last_sent_at_ms), then the lower user id. Same answer in any delivery order.
TEST_F(GroupProjectorTest, Rule10_TopSenderTieGoesToWhoReachedTheCountFirst) {
  // Sender 200 reaches 2 at t+10; sender 100 reaches 2 at t+30; then sender 100 passes at t+40.
  const std::vector<GiftEvent> events = {
      Event("A1", GiftPayloadJson(7, "rose", 2, 200, 0), kT0 + 10),
      Event("B1", GiftPayloadJson(7, "rose", 1, 100, 0), kT0 + 20),
      Event("B2", GiftPayloadJson(7, "rose", 1, 100, 0), kT0 + 30),
      Event("B3", GiftPayloadJson(7, "rose", 1, 100, 0), kT0 + 40)};
  const std::string top = "SELECT top_sender_user_id FROM user_gift_wall WHERE user_id = 7";
  ASSERT_EQ(Project(events[0]), ProjectionOutcome::kProjected);
  EXPECT_EQ(db_.QueryInt(top), 200);
  ASSERT_EQ(Project(events[1]), ProjectionOutcome::kProjected);
  ASSERT_EQ(Project(events[2]), ProjectionOutcome::kProjected);
  EXPECT_EQ(db_.QueryInt(top), 200) << "a tie stays with who got there first";
  ASSERT_EQ(Project(events[3]), ProjectionOutcome::kProjected);
  EXPECT_EQ(db_.QueryInt(top), 100) << "passing takes the top";
  EXPECT_EQ(db_.QueryInt("SELECT top_sender_count FROM user_gift_wall WHERE user_id = 7"), 3);
  EXPECT_EQ(db_.QueryInt("SELECT top_sender_last_sent_at_ms FROM user_gift_wall WHERE user_id = 7"),
            kT0 + 40);

  // The same events in reverse order, on another wall: the tie at 2 is decided by time, not
  // by arrival.
  for (auto it = events.rbegin() + 1; it != events.rend(); ++it) {
    GiftEvent e = *it;
    e.event_id += "-r";
    e.payload_json =
        absl::StrReplaceAll(e.payload_json, {{"\"target_user_id\":7", "\"target_user_id\":8"}});
    ASSERT_EQ(Project(e), ProjectionOutcome::kProjected);
  }
  EXPECT_EQ(db_.QueryInt("SELECT top_sender_user_id FROM user_gift_wall WHERE user_id = 8"), 200);
  // Equal count and equal time: the lower user id.
  EXPECT_EQ(Project(Event("C1", GiftPayloadJson(9, "rose", 1, 300, 0), kT0)),
            ProjectionOutcome::kProjected);
  EXPECT_EQ(Project(Event("C2", GiftPayloadJson(9, "rose", 1, 299, 0), kT0)),
            ProjectionOutcome::kProjected);
  EXPECT_EQ(db_.QueryInt("SELECT top_sender_user_id FROM user_gift_wall WHERE user_id = 9"), 299);
}

TEST_F(GroupProjectorTest, Rule10_FirstSenderIsTheSenderOfTheEarliestEventWithOne) {
  EXPECT_EQ(Project(Event("F3", GiftPayloadJson(7, "rose", 1, 0, 0), kT0)),  // earliest, no sender
            ProjectionOutcome::kProjected);
  EXPECT_EQ(Project(Event("F2", GiftPayloadJson(7, "rose", 1, 102, 0), kT0 + 50)),
            ProjectionOutcome::kProjected);
  EXPECT_EQ(Project(Event("F1", GiftPayloadJson(7, "rose", 1, 101, 0), kT0 + 50)),
            ProjectionOutcome::kProjected);  // same time, smaller event id: earlier
  EXPECT_EQ(Project(Event("F9", GiftPayloadJson(7, "rose", 1, 109, 0), kT0 + 60)),
            ProjectionOutcome::kProjected);
  EXPECT_EQ(db_.QueryInt("SELECT first_sender_user_id FROM user_gift_wall"), 101);
}

TEST_F(GroupProjectorTest, Rule10_NameAndIconComeFromTheLatestEventThatCarriesThem) {
  auto payload = [](const std::string& extra) {
    return absl::StrCat(R"({"target_user_id":7,"gift_id":"rose","gift_count":1)", extra, "}");
  };
  EXPECT_EQ(
      Project(Event("N2", payload(R"(,"gift_name":"Rose v2","gift_icon":"v2.png")"), kT0 + 20)),
      ProjectionOutcome::kProjected);
  EXPECT_EQ(
      Project(Event("N1", payload(R"(,"gift_name":"Rose v1","gift_icon":"v1.png")"), kT0 + 10)),
      ProjectionOutcome::kProjected);  // older, arrives later: changes nothing
  EXPECT_EQ(Project(Event("N3", payload(""), kT0 + 30)), ProjectionOutcome::kProjected);
  EXPECT_EQ(Project(Event("N4", payload(R"(,"gift_name":"  ","gift_icon":"v4.png")"), kT0 + 40)),
            ProjectionOutcome::kProjected);  // a blank name is no name
  EXPECT_EQ(db_.QueryString("SELECT gift_name FROM user_gift_wall"), "Rose v2");
  EXPECT_EQ(db_.QueryString("SELECT gift_icon FROM user_gift_wall"), "v4.png");
}

TEST_F(GroupProjectorTest, Rule6_CoinOverflowIsDeadAndNothingChanges) {
  const int64_t big = std::numeric_limits<int64_t>::max() - 1;
  EXPECT_EQ(Project(Event("E1", GiftPayloadJson(7, "rose", 1, 100, big))),
            ProjectionOutcome::kProjected);
  // Overflows the wall's and the sender's coins: neither row changes, not even the sender's.
  EXPECT_EQ(Project(Event("E2", GiftPayloadJson(7, "rose", 1, 100, 5), kT0 + 1)),
            ProjectionOutcome::kDead);
  EXPECT_EQ(db_.QueryInt("SELECT gift_count FROM user_gift_wall"), 1);
  EXPECT_EQ(db_.QueryInt("SELECT sent_count FROM user_gift_wall_sender"), 1);
  EXPECT_EQ(db_.QueryInt("SELECT last_received_at_ms FROM user_gift_wall"), kT0);
  // Another sender's event also overflows the wall's total: dead, and no sender row appears.
  EXPECT_EQ(Project(Event("E3", GiftPayloadJson(7, "rose", 1, 101, 5), kT0 + 2)),
            ProjectionOutcome::kDead);
  EXPECT_EQ(db_.QueryInt("SELECT COUNT(*) FROM user_gift_wall_sender"), 1);
  EXPECT_EQ(db_.QueryInt("SELECT sender_count FROM user_gift_wall"), 1);
}

TEST_F(GroupProjectorTest, IdentifiersDifferingInCaseOrTrailingSpaceAreDifferentEvents) {
  for (const char* id : {"E1", "e1", "E1 "}) {
    EXPECT_EQ(Project(Event(id, GiftPayloadJson(7, "rose", 1))), ProjectionOutcome::kProjected)
        << "[" << id << "]";
  }
  EXPECT_EQ(Project(Event("E1 ", GiftPayloadJson(7, "rose", 1))),
            ProjectionOutcome::kAlreadyProjected);
  EXPECT_EQ(GiftCount(7, "rose"), 3);
  // Gift ids are case-sensitive too.
  EXPECT_EQ(Project(Event("E2", GiftPayloadJson(7, "Rose", 1))), ProjectionOutcome::kProjected);
  EXPECT_EQ(WallRows(), 2);
  // And apps are separate tenants.
  EXPECT_EQ(Project(Event("E1", GiftPayloadJson(7, "rose", 1), kT0, "other")),
            ProjectionOutcome::kProjected);
}

TEST_F(GroupProjectorTest, BatchAnswersInOrderAndProjectsEachEventOnce) {
  const std::vector<GiftEvent> batch = {
      Event("B2", GiftPayloadJson(8, "rose", 2)), Event("B1", GiftPayloadJson(7, "rose", 1)),
      Event("B2", GiftPayloadJson(8, "rose", 2)), Event("BX", R"({"gift_id":"x"})"),
      Event("B3", GiftPayloadJson(7, "lily", 3))};
  absl::StatusOr<std::vector<domain::ProjectionResult>> results =
      projection_->projector.ProjectBatch(batch, ProjectedBy::kRelay);
  ASSERT_TRUE(results.ok()) << results.status();
  std::vector<ProjectionOutcome> outcomes;
  for (const auto& r : *results) outcomes.push_back(r.outcome);
  EXPECT_THAT(outcomes,
              ::testing::ElementsAre(ProjectionOutcome::kProjected, ProjectionOutcome::kProjected,
                                     ProjectionOutcome::kAlreadyProjected, ProjectionOutcome::kDead,
                                     ProjectionOutcome::kProjected));
  EXPECT_EQ(GiftCount(8, "rose"), 2);
  EXPECT_EQ(GiftCount(7, "lily"), 3);
  // Redelivering the whole batch changes nothing.
  results = projection_->projector.ProjectBatch(batch, ProjectedBy::kRelay);
  ASSERT_TRUE(results.ok()) << results.status();
  EXPECT_EQ((*results)[0].outcome, ProjectionOutcome::kAlreadyProjected);
  EXPECT_EQ((*results)[3].outcome, ProjectionOutcome::kDead);
  EXPECT_EQ(GiftCount(8, "rose"), 2);
}

// The database's own permanent errors (§2.6), from columns narrowed here on purpose: data too
// long (1406) and out of range (1264) make only their event dead, with the database's reason,
// and the rest of the group commits.
TEST_F(GroupProjectorTest, Rule6_DataTooLongAndOutOfRangeAreDeadAloneAndTheRestCommits) {
  db_.Exec(
      "ALTER TABLE user_gift_wall MODIFY gift_name VARCHAR(8) CHARACTER SET utf8mb4 COLLATE "
      "utf8mb4_bin NOT NULL DEFAULT ''");
  db_.Exec("ALTER TABLE user_gift_wall_sender MODIFY sent_coins INT NOT NULL");
  const std::vector<GiftEvent> batch = {
      Event("N1", R"({"target_user_id":7,"gift_id":"rose","gift_count":1,)"
                  R"("gift_name":"a name too long for the column"})"),
      Event("N2", GiftPayloadJson(7, "rose", 2)),
      Event("C1", GiftPayloadJson(7, "lily", 1, 9, 3'000'000'000)),
      Event("C2", GiftPayloadJson(7, "lily", 1, 9, 10))};
  absl::StatusOr<std::vector<domain::ProjectionResult>> results =
      projection_->projector.ProjectBatch(batch, ProjectedBy::kRelay);
  ASSERT_TRUE(results.ok()) << results.status();
  EXPECT_EQ((*results)[0].outcome, ProjectionOutcome::kDead);
  EXPECT_THAT((*results)[0].detail, HasSubstr("gift_name"));
  EXPECT_EQ((*results)[1].outcome, ProjectionOutcome::kProjected);
  EXPECT_EQ((*results)[2].outcome, ProjectionOutcome::kDead);
  EXPECT_THAT((*results)[2].detail, HasSubstr("sent_coins"));
  EXPECT_EQ((*results)[3].outcome, ProjectionOutcome::kProjected);
  EXPECT_EQ(Ledger("N1", "status"), "dead");
  EXPECT_EQ(Ledger("C1", "status"), "dead");
  EXPECT_EQ(Ledger("N1", "retry_count"), "0");
  EXPECT_EQ(GiftCount(7, "rose"), 2);
  EXPECT_EQ(GiftCount(7, "lily"), 1);
  EXPECT_EQ(db_.QueryInt("SELECT sent_coins FROM user_gift_wall_sender"), 10);
}

TEST_F(GroupProjectorTest, BatchOverflowGoesDeadAloneAndTheRestCommits) {
  const int64_t big = std::numeric_limits<int64_t>::max();
  const std::vector<GiftEvent> batch = {Event("O1", GiftPayloadJson(7, "rose", big)),
                                        Event("O2", GiftPayloadJson(7, "rose", 1)),
                                        Event("O3", GiftPayloadJson(7, "lily", 1))};
  absl::StatusOr<std::vector<domain::ProjectionResult>> results =
      projection_->projector.ProjectBatch(batch, ProjectedBy::kRelay);
  ASSERT_TRUE(results.ok()) << results.status();
  EXPECT_EQ((*results)[0].outcome, ProjectionOutcome::kProjected);
  EXPECT_EQ((*results)[1].outcome, ProjectionOutcome::kDead);
  EXPECT_EQ((*results)[2].outcome, ProjectionOutcome::kProjected);
  EXPECT_EQ(GiftCount(7, "rose"), big);
  EXPECT_EQ(GiftCount(7, "lily"), 1);
}

// A wall holds at most --max_wall_gifts distinct gifts (§2.14): a gift new to a full wall goes
// dead with a reason naming the cap, gifts already on it always project, and a requeue once the
// cap is raised loses nothing.
TEST_F(GroupProjectorTest, Rule14_AGiftNewToAFullWallGoesDeadAndOneAlreadyOnItProjects) {
  Reset(testing::FastRetry(), /*max_wall_gifts=*/3);
  ASSERT_EQ(Project(Event("A1", GiftPayloadJson(7, "a", 1))), ProjectionOutcome::kProjected);
  ASSERT_EQ(Project(Event("B1", GiftPayloadJson(7, "b", 1))), ProjectionOutcome::kProjected);
  // One group: room for one new gift (the first by gift_id), and more of a gift on the wall.
  std::vector<ProjectionUnit> units = {
      {{Event("E1", GiftPayloadJson(7, "e", 1)), Event("D1", GiftPayloadJson(7, "d", 1))}},
      {{Event("C1", GiftPayloadJson(7, "c", 1))}},
      {{Event("A2", GiftPayloadJson(7, "a", 4)), Event("X1", GiftPayloadJson(8, "x", 1))}}};
  const std::vector<UnitResult> results = projection_->projector.ProjectGroup(units);
  ASSERT_EQ(results.size(), 3u);
  for (const UnitResult& r : results) ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*results[0])[0].outcome, ProjectionOutcome::kDead);
  EXPECT_THAT((*results[0])[0].detail, HasSubstr("already holds 3 distinct gifts"));
  EXPECT_THAT((*results[0])[0].detail, HasSubstr("--max_wall_gifts"));
  EXPECT_EQ((*results[0])[1].outcome, ProjectionOutcome::kDead);
  EXPECT_EQ((*results[1])[0].outcome, ProjectionOutcome::kProjected);
  EXPECT_EQ((*results[2])[0].outcome, ProjectionOutcome::kProjected);
  EXPECT_EQ((*results[2])[1].outcome, ProjectionOutcome::kProjected) << "another wall";
  EXPECT_EQ(db_.QueryInt("SELECT COUNT(*) FROM user_gift_wall WHERE user_id = 7"), 3);
  EXPECT_EQ(GiftCount(7, "a"), 5);
  EXPECT_EQ(GiftCount(7, "c"), 1);
  EXPECT_EQ(Ledger("D1", "status"), "dead");
  EXPECT_THAT(Ledger("D1", "last_error"), HasSubstr("raise the cap, then requeue"));

  // Alone, too; and a gift on the wall still projects.
  EXPECT_EQ(Project(Event("F1", GiftPayloadJson(7, "f", 1))), ProjectionOutcome::kDead);
  EXPECT_EQ(Project(Event("B2", GiftPayloadJson(7, "b", 2))), ProjectionOutcome::kProjected);
  EXPECT_EQ(GiftCount(7, "b"), 3);

  // The cap raised, the dead events requeued: nothing was lost.
  Reset(testing::FastRetry(), /*max_wall_gifts=*/10);
  for (const std::string id : {"D1", "E1", "F1"}) {
    const std::string gift(1, static_cast<char>(std::tolower(id[0])));
    EXPECT_EQ(Project(Event(id, GiftPayloadJson(7, gift, 1)), ProjectedBy::kRequeue),
              ProjectionOutcome::kProjected)
        << id;
  }
  EXPECT_EQ(db_.QueryInt("SELECT COUNT(*) FROM user_gift_wall WHERE user_id = 7"), 6);
}

// The ledger cannot even be read: every event of the group answers UNAVAILABLE, none is lost to
// an answer the relay would ack.
TEST_F(GroupProjectorTest, Rule7_ALedgerThatCannotBeReadFailsEveryEventWithItsError) {
  db_.Exec("RENAME TABLE wallet_projection_events TO ledger_away");
  std::vector<ProjectionUnit> units = {
      {{Event("R1", GiftPayloadJson(7, "rose", 1))}},
      {{Event("R2", GiftPayloadJson(8, "rose", 1)), Event("R3", GiftPayloadJson(9, "rose", 1))}}};
  const std::vector<UnitResult> results = projection_->projector.ProjectGroup(units);
  db_.Exec("RENAME TABLE ledger_away TO wallet_projection_events");
  ASSERT_EQ(results.size(), 2u);
  for (const UnitResult& r : results) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInternal) << r.status();
    EXPECT_EQ(storage::MysqlErrno(r.status()), 1146) << "the MySQL errno travels with it";
  }
  EXPECT_EQ(WallRows(), 0);
}

// Every claimed event of the batch failed to fold: each is recorded failed (§2.7), and the
// walls and done rows are as before.
TEST_F(GroupProjectorTest, BatchTransientFailureRecordsItsEventsFailedAndWritesNothingElse) {
  db_.Exec("RENAME TABLE user_gift_wall TO user_gift_wall_away");
  const std::vector<GiftEvent> batch = {Event("T1", GiftPayloadJson(7, "rose", 1)),
                                        Event("T2", GiftPayloadJson(8, "rose", 1))};
  absl::StatusOr<std::vector<domain::ProjectionResult>> results =
      projection_->projector.ProjectBatch(batch, ProjectedBy::kRelay);
  db_.Exec("RENAME TABLE user_gift_wall_away TO user_gift_wall");
  ASSERT_FALSE(results.ok());
  EXPECT_EQ(results.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(WallRows(), 0);
  EXPECT_EQ(db_.QueryInt("SELECT COUNT(*) FROM wallet_projection_events WHERE status = 'done'"), 0);
  EXPECT_EQ(db_.QueryInt("SELECT COUNT(*) FROM wallet_projection_events WHERE status = 'failed' "
                         "AND retry_count = 1"),
            2);
  results = projection_->projector.ProjectBatch(batch, ProjectedBy::kRelay);
  ASSERT_TRUE(results.ok()) << results.status();
  EXPECT_EQ(GiftCount(7, "rose") + GiftCount(8, "rose"), 2);
}

}  // namespace
}  // namespace giftwall::projection
