// One test per rule of the projection contract (DESIGN §2), against a real MariaDB.
#include "server/storage/projection_repository.h"

#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_database.h"

namespace giftwall::storage {
namespace {

using domain::GiftEvent;
using domain::ProjectedBy;
using domain::ProjectionOutcome;
using testing::GiftPayloadJson;
using ::testing::HasSubstr;

constexpr int64_t kT0 = 1'700'000'000'000;

GiftEvent Event(const std::string& event_id, const std::string& payload,
                int64_t occurred_at_ms = kT0, const std::string& app_code = "demo") {
  return GiftEvent{app_code, event_id, payload, occurred_at_ms};
}

class ProjectionRepositoryTest : public ::testing::Test {
 protected:
  ProjectionRepositoryTest() : pool_(db_.PoolOptions()) { Reset(DefaultOptions()); }

  static ProjectionOptions DefaultOptions() {
    ProjectionOptions options;
    options.worker_id = "test-worker";
    options.retry.contention_base = absl::Milliseconds(1);
    return options;
  }
  void Reset(ProjectionOptions options) {
    repo_ = std::make_unique<ProjectionRepository>(pool_, std::move(options));
  }

  ProjectionOutcome Project(const GiftEvent& event, ProjectedBy by = ProjectedBy::kRelay) {
    absl::StatusOr<domain::ProjectionResult> result = repo_->Project(event, by);
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? result->outcome : ProjectionOutcome::kIgnored;
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
  ConnectionPool pool_;
  std::unique_ptr<ProjectionRepository> repo_;
};

TEST_F(ProjectionRepositoryTest, Rule1_LedgerRowRecordsTheProjectedEvent) {
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

TEST_F(ProjectionRepositoryTest, Rule2_DoneEventIsNeverAggregatedAgain) {
  const GiftEvent event = Event("E1", GiftPayloadJson(7, "rose", 3));
  EXPECT_EQ(Project(event), ProjectionOutcome::kProjected);
  EXPECT_EQ(Project(event), ProjectionOutcome::kAlreadyProjected);
  EXPECT_EQ(Project(event, ProjectedBy::kScan), ProjectionOutcome::kAlreadyProjected);
  EXPECT_EQ(GiftCount(7, "rose"), 3);
  EXPECT_EQ(Ledger("E1", "projected_by"), "relay");
}

TEST_F(ProjectionRepositoryTest, Rule2_DeadEventIsNeverAggregatedAgain) {
  EXPECT_EQ(Project(Event("E1", R"({"gift_id":"rose","gift_count":1})")), ProjectionOutcome::kDead);
  // Even a redelivery whose payload would now be valid stays dead: only a requeue revives it.
  absl::StatusOr<domain::ProjectionResult> again =
      repo_->Project(Event("E1", GiftPayloadJson(7, "rose", 1)), ProjectedBy::kRelay);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->outcome, ProjectionOutcome::kDead);
  EXPECT_THAT(again->detail, HasSubstr("missing target_user_id"));
  EXPECT_EQ(WallRows(), 0);
}

TEST_F(ProjectionRepositoryTest, Rule3_FailedEventIsClaimedAgain) {
  InsertLedger("E1", "failed", 2, 0, DbNowMs() + 600'000);
  EXPECT_EQ(Project(Event("E1", GiftPayloadJson(7, "rose", 3))), ProjectionOutcome::kProjected);
  EXPECT_EQ(Ledger("E1", "status"), "done");
  EXPECT_EQ(Ledger("E1", "retry_count"), "2");
  EXPECT_EQ(GiftCount(7, "rose"), 3);
}

TEST_F(ProjectionRepositoryTest, Rule3_ExpiredLeaseIsClaimedAgain) {
  InsertLedger("E1", "processing", 0, DbNowMs() - 1, DbNowMs() - 1);
  EXPECT_EQ(Project(Event("E1", GiftPayloadJson(7, "rose", 3))), ProjectionOutcome::kProjected);
  EXPECT_EQ(Ledger("E1", "status"), "done");
  EXPECT_EQ(Ledger("E1", "locked_by"), "");
}

TEST_F(ProjectionRepositoryTest, Rule3_LiveLeaseAnswersLeased) {
  InsertLedger("E1", "processing", 0, DbNowMs() + 600'000, DbNowMs() + 600'000);
  absl::StatusOr<domain::ProjectionResult> result =
      repo_->Project(Event("E1", GiftPayloadJson(7, "rose", 3)), ProjectedBy::kRelay);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->outcome, ProjectionOutcome::kLeased);
  EXPECT_THAT(result->detail, HasSubstr("other-worker"));
  EXPECT_EQ(WallRows(), 0);
  EXPECT_EQ(Ledger("E1", "status"), "processing");
}

// A duplicate that arrives while another transaction holds the event waits for it and then
// reports what the holder did, without an UPDATE of its own (so no deadlock).
TEST_F(ProjectionRepositoryTest, Rule3_DuplicateWaitsForTheHolderAndSeesItsOutcome) {
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
    result = repo_->Project(Event("E1", GiftPayloadJson(7, "rose", 3)), ProjectedBy::kRelay);
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

TEST_F(ProjectionRepositoryTest, Rule3_DuplicateAnswersLeasedWhenTheHolderOutlastsTheLockWait) {
  PoolOptions options = db_.PoolOptions();
  options.session.lock_wait_timeout = absl::Seconds(1);
  ConnectionPool pool(options);
  ProjectionRepository repo(pool, DefaultOptions());
  std::unique_ptr<SqlConnection> holder = db_.Connect();
  ASSERT_TRUE(holder->ExecuteDirect("START TRANSACTION").ok());
  ASSERT_TRUE(
      holder
          ->ExecuteDirect("INSERT INTO wallet_projection_events (projection_name, app_code, "
                          "event_id, status, created_at_ms, updated_at_ms) VALUES "
                          "('user_gift_wall', 'demo', 'E1', 'processing', 1, 1)")
          .ok());
  absl::StatusOr<domain::ProjectionResult> result =
      repo.Project(Event("E1", GiftPayloadJson(7, "rose", 3)), ProjectedBy::kRelay);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->outcome, ProjectionOutcome::kLeased);
  ASSERT_TRUE(holder->ExecuteDirect("ROLLBACK").ok());
  // The holder gave up: the event is free, and the next delivery projects it.
  result = repo.Project(Event("E1", GiftPayloadJson(7, "rose", 3)), ProjectedBy::kRelay);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->outcome, ProjectionOutcome::kProjected);
}

TEST_F(ProjectionRepositoryTest, Rule4_OtherEventTypesInTheOutboxAreIgnoredByTheScan) {
  db_.InsertOutbox("demo", "R1", "WalletRecharged", R"({"user_id":7})", kT0);
  absl::StatusOr<CatchUpPass> pass = repo_->ProjectPendingGiftWallEvents({"demo", 100, 0});
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->found, 0);
  EXPECT_EQ(db_.QueryInt("SELECT COUNT(*) FROM wallet_projection_events"), 0);
}

TEST_F(ProjectionRepositoryTest, Rule5_PayloadIsReadLikeGo) {
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

TEST_F(ProjectionRepositoryTest, Rule6_InvalidPayloadIsDeadAtOnceWithItsReason) {
  absl::StatusOr<domain::ProjectionResult> result = repo_->Project(
      Event("E1", R"({"target_user_id":7,"gift_id":"rose","gift_count":0})"), ProjectedBy::kRelay);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->outcome, ProjectionOutcome::kDead);
  EXPECT_EQ(result->detail, "invalid gift payload: gift_count must be > 0, got 0");
  EXPECT_EQ(Ledger("E1", "status"), "dead");
  EXPECT_EQ(Ledger("E1", "retry_count"), "0");
  EXPECT_EQ(Ledger("E1", "last_error"), result->detail);
  EXPECT_EQ(WallRows(), 0);
}

TEST_F(ProjectionRepositoryTest, Rule6_AggregateOverflowIsDeadAndTheWallUnchanged) {
  const int64_t big = std::numeric_limits<int64_t>::max() - 5;
  EXPECT_EQ(Project(Event("E1", GiftPayloadJson(7, "rose", big))), ProjectionOutcome::kProjected);
  absl::StatusOr<domain::ProjectionResult> result =
      repo_->Project(Event("E2", GiftPayloadJson(7, "rose", 10), kT0 + 5), ProjectedBy::kRelay);
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
TEST_F(ProjectionRepositoryTest, Rule7_TransientFailureIsRecordedFailedWithBackoffThenDead) {
  ProjectionOptions options = DefaultOptions();
  options.retry.max_retries = 3;
  options.retry.backoff_base = absl::Seconds(60);
  Reset(options);
  ASSERT_EQ(Project(Event("E0", GiftPayloadJson(7, "rose", 1))), ProjectionOutcome::kProjected);
  // The wall's table vanishes for a while: every fold fails after its claim.
  db_.Exec("RENAME TABLE user_gift_wall TO user_gift_wall_away");
  const GiftEvent event = Event("E1", GiftPayloadJson(7, "rose", 3));
  for (int failure = 1; failure <= 3; ++failure) {
    const int64_t before = DbNowMs();
    absl::StatusOr<domain::ProjectionResult> result = repo_->Project(event, ProjectedBy::kRelay);
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable) << result.status();
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

TEST_F(ProjectionRepositoryTest, Rule8_LockWaitTimeoutIsRetriedAndNotCountedAsFailure) {
  PoolOptions pool_options = db_.PoolOptions();
  pool_options.session.lock_wait_timeout = absl::Seconds(1);
  ConnectionPool pool(pool_options);
  ProjectionRepository repo(pool, DefaultOptions());
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
      repo.Project(Event("E1", GiftPayloadJson(7, "rose", 3)), ProjectedBy::kRelay);
  release.join();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->outcome, ProjectionOutcome::kProjected);
  EXPECT_EQ(Ledger("E1", "retry_count"), "0");
  EXPECT_EQ(GiftCount(7, "rose"), 4);
}

TEST_F(ProjectionRepositoryTest, Rule8_PersistentContentionAnswersAbortedAndWritesNothing) {
  PoolOptions pool_options = db_.PoolOptions();
  pool_options.session.lock_wait_timeout = absl::Seconds(1);
  ConnectionPool pool(pool_options);
  ProjectionOptions options = DefaultOptions();
  options.retry.contention_attempts = 2;
  ProjectionRepository repo(pool, options);
  ASSERT_EQ(Project(Event("E0", GiftPayloadJson(7, "rose", 1))), ProjectionOutcome::kProjected);
  std::unique_ptr<SqlConnection> blocker = db_.Connect();
  ASSERT_TRUE(blocker->ExecuteDirect("START TRANSACTION").ok());
  ASSERT_TRUE(blocker->ExecuteDirect("UPDATE user_gift_wall SET updated_at_ms = 2").ok());
  absl::StatusOr<domain::ProjectionResult> result =
      repo.Project(Event("E1", GiftPayloadJson(7, "rose", 3)), ProjectedBy::kRelay);
  ASSERT_TRUE(blocker->ExecuteDirect("ROLLBACK").ok());
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kAborted) << result.status();
  EXPECT_EQ(db_.QueryInt("SELECT COUNT(*) FROM wallet_projection_events WHERE event_id = 'E1'"), 0);
  EXPECT_EQ(GiftCount(7, "rose"), 1);
}

TEST_F(ProjectionRepositoryTest, Rule9_LedgerTimesComeFromTheDatabaseClock) {
  ProjectionOptions options = DefaultOptions();
  options.retry.backoff_base = absl::Seconds(100);
  Reset(options);
  db_.Exec("RENAME TABLE user_gift_wall TO user_gift_wall_away");
  const int64_t before = DbNowMs();
  EXPECT_FALSE(
      repo_->Project(Event("E1", GiftPayloadJson(7, "rose", 1)), ProjectedBy::kRelay).ok());
  const int64_t after = DbNowMs();
  db_.Exec("RENAME TABLE user_gift_wall_away TO user_gift_wall");
  const int64_t updated = std::stoll(Ledger("E1", "updated_at_ms"));
  EXPECT_GE(updated, before);
  EXPECT_LE(updated, after);
  const int64_t next = std::stoll(Ledger("E1", "next_attempt_at_ms"));
  EXPECT_GE(next, updated + 50'000);
  EXPECT_LE(next, updated + 100'000);
}

TEST_F(ProjectionRepositoryTest, Rule10_AnyDeliveryOrderGivesTheSameWall) {
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
TEST_F(ProjectionRepositoryTest, Rule10_CoinsAndSendersAddUp) {
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
TEST_F(ProjectionRepositoryTest, Rule10_TopSenderTieGoesToWhoReachedTheCountFirst) {
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

TEST_F(ProjectionRepositoryTest, Rule10_FirstSenderIsTheSenderOfTheEarliestEventWithOne) {
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

TEST_F(ProjectionRepositoryTest, Rule10_NameAndIconComeFromTheLatestEventThatCarriesThem) {
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

TEST_F(ProjectionRepositoryTest, Rule6_CoinOverflowIsDeadAndNothingChanges) {
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

TEST_F(ProjectionRepositoryTest, Rule11_ScanFindsEventsTheRelayLost) {
  for (int i = 0; i < 10; ++i) {
    db_.InsertOutbox("demo", absl::StrCat("E", i), "WalletGiftDebited",
                     GiftPayloadJson(7, "rose", 1), kT0 + i);
  }
  for (int i = 0; i < 10; i += 3) {  // the relay delivered E0, E3, E6, E9
    EXPECT_EQ(Project(Event(absl::StrCat("E", i), GiftPayloadJson(7, "rose", 1), kT0 + i)),
              ProjectionOutcome::kProjected);
  }
  absl::StatusOr<CatchUpPass> pass = repo_->ProjectPendingGiftWallEvents({"demo", 100, 0});
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->found, 6);
  EXPECT_EQ(pass->projected, 6);
  EXPECT_EQ(pass->processed, 6);
  EXPECT_EQ(GiftCount(7, "rose"), 10);
  EXPECT_EQ(Ledger("E1", "projected_by"), "scan");
  EXPECT_EQ(Ledger("E3", "projected_by"), "relay");
  // Nothing left: a second pass finds nothing.
  pass = repo_->ProjectPendingGiftWallEvents({"demo", 100, 0});
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->found, 0);
}

TEST_F(ProjectionRepositoryTest, Rule11_ScanRetriesDueFailuresButNotBeforeTheirBackoff) {
  db_.InsertOutbox("demo", "F1", "WalletGiftDebited", GiftPayloadJson(7, "rose", 1), kT0);
  db_.InsertOutbox("demo", "F2", "WalletGiftDebited", GiftPayloadJson(7, "rose", 2), kT0 + 1);
  InsertLedger("F1", "failed", 1, 0, DbNowMs() + 600'000);  // backoff not over
  InsertLedger("F2", "failed", 1, 0, DbNowMs() - 1);        // due
  absl::StatusOr<CatchUpPass> pass = repo_->ProjectPendingGiftWallEvents({"demo", 100, 0});
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->found, 1);
  EXPECT_EQ(Ledger("F1", "status"), "failed");
  EXPECT_EQ(Ledger("F2", "status"), "done");
  EXPECT_EQ(Ledger("F2", "projected_by"), "scan");
  EXPECT_EQ(GiftCount(7, "rose"), 2);
}

TEST_F(ProjectionRepositoryTest, Rule11_ScanTakesOverExpiredLeasesOnly) {
  db_.InsertOutbox("demo", "P1", "WalletGiftDebited", GiftPayloadJson(7, "rose", 1), kT0);
  db_.InsertOutbox("demo", "P2", "WalletGiftDebited", GiftPayloadJson(7, "rose", 2), kT0 + 1);
  InsertLedger("P1", "processing", 0, DbNowMs() + 600'000, DbNowMs() + 600'000);
  InsertLedger("P2", "processing", 0, DbNowMs() - 1, DbNowMs() - 1);
  absl::StatusOr<CatchUpPass> pass = repo_->ProjectPendingGiftWallEvents({"demo", 100, 0});
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->processed, 1);
  EXPECT_EQ(Ledger("P1", "status"), "processing");
  EXPECT_EQ(Ledger("P2", "status"), "done");
}

TEST_F(ProjectionRepositoryTest, Rule11_ScanLeavesYoungEventsToTheRelay) {
  db_.InsertOutbox("demo", "Y1", "WalletGiftDebited", GiftPayloadJson(7, "rose", 1), DbNowMs());
  CatchUpRequest request{"demo", 100, 0, absl::Seconds(30)};
  absl::StatusOr<CatchUpPass> pass = repo_->ProjectPendingGiftWallEvents(request);
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->found, 0);
  request.min_age = absl::ZeroDuration();
  pass = repo_->ProjectPendingGiftWallEvents(request);
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->projected, 1);
}

TEST_F(ProjectionRepositoryTest, Rule11_ScanStartsAtTheHorizonAndPagesThroughByLimit) {
  for (int i = 0; i < 5; ++i) {
    db_.InsertOutbox("demo", absl::StrCat("H", i), "WalletGiftDebited",
                     GiftPayloadJson(7, "rose", 1), kT0 + 1000 * i);
  }
  // From a horizon past H0 and H1, a pass does not see them.
  absl::StatusOr<CatchUpPass> pass = repo_->ProjectPendingGiftWallEvents({"demo", 2, kT0 + 1500});
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->projected, 2);  // H2, H3: the limit
  EXPECT_EQ(pass->resume_from_ms, kT0 + 3000);
  pass = repo_->ProjectPendingGiftWallEvents({"demo", 2, pass->resume_from_ms});
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->projected, 1);  // H4, and the outbox is exhausted
  EXPECT_GT(pass->resume_from_ms, kT0 + 4000);
  EXPECT_EQ(Ledger("H0", "status"), "");
  // A full sweep (horizon 0) finds what was behind the horizon.
  pass = repo_->ProjectPendingGiftWallEvents({"demo", 100, 0});
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->projected, 2);
  EXPECT_EQ(GiftCount(7, "rose"), 5);
}

// No statement reads all history: the outbox is read a window of rows at a time, and a pass
// that reads its windows without finding anything says how far it got.
TEST_F(ProjectionRepositoryTest, Rule11_ScanReadsTheOutboxInBoundedWindows) {
  for (int i = 0; i < 150; ++i) {
    const std::string id = absl::StrFormat("W%03d", i);
    db_.InsertOutbox("demo", id, "WalletGiftDebited", GiftPayloadJson(7, "rose", 1), kT0 + i);
    if (i == 149) continue;  // the one the relay lost
    ASSERT_EQ(Project(Event(id, GiftPayloadJson(7, "rose", 1), kT0 + i)),
              ProjectionOutcome::kProjected);
  }
  CatchUpRequest request{"demo", 10, 0};
  request.window_rows = 5;  // 20 windows a pass: 100 rows
  absl::StatusOr<CatchUpPass> pass = repo_->ProjectPendingGiftWallEvents(request);
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->found, 0);
  EXPECT_FALSE(pass->reached_newest);
  EXPECT_EQ(pass->resume_from_ms, kT0 + 99);
  request.horizon_ms = pass->resume_from_ms;
  pass = repo_->ProjectPendingGiftWallEvents(request);
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->projected, 1);  // W149, behind 100 rows of projected history
  EXPECT_TRUE(pass->reached_newest);
  EXPECT_EQ(GiftCount(7, "rose"), 150);
}

TEST_F(ProjectionRepositoryTest, Rule11_ScanLimitIsClampedToOneThroughOneHundred) {
  for (int i = 0; i < 3; ++i) {
    db_.InsertOutbox("demo", absl::StrCat("L", i), "WalletGiftDebited",
                     GiftPayloadJson(7, "rose", 1), kT0 + i);
  }
  absl::StatusOr<CatchUpPass> pass = repo_->ProjectPendingGiftWallEvents({"demo", -5, 0});
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->projected, 3);  // <= 0 means the seed's default of 20
}

TEST_F(ProjectionRepositoryTest, Rule11_ScanProjectsTheOutboxPayloadAndKeepsBadOnesDead) {
  db_.InsertOutbox("demo", "B1", "WalletGiftDebited", R"({"target_user_id":7})", kT0);
  db_.InsertOutbox("demo", "B2", "WalletGiftDebited", GiftPayloadJson(7, "rose", 4), kT0 + 1);
  absl::StatusOr<CatchUpPass> pass = repo_->ProjectPendingGiftWallEvents({"demo", 100, 0});
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->dead, 1);
  EXPECT_EQ(pass->projected, 1);
  EXPECT_EQ(Ledger("B1", "status"), "dead");
  EXPECT_EQ(GiftCount(7, "rose"), 4);
}

TEST_F(ProjectionRepositoryTest, RequeueReprojectsADeadEventFromItsCorrectedOutboxRow) {
  db_.InsertOutbox("demo", "Q1", "WalletGiftDebited", R"({"target_user_id":7,"gift_id":"rose"})",
                   kT0);
  ASSERT_EQ(Project(Event("Q1", R"({"target_user_id":7,"gift_id":"rose"})")),
            ProjectionOutcome::kDead);
  // Still bad: a dry run says so, a requeue keeps it dead with the reason.
  absl::StatusOr<RequeueResult> r = repo_->RequeueDeadEvent("demo", "Q1", "", /*dry_run=*/true);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->matched);
  EXPECT_FALSE(r->requeued);
  EXPECT_THAT(r->reason, HasSubstr("would stay dead: invalid gift payload: missing gift_count"));
  r = repo_->RequeueDeadEvent("demo", "Q1", "", /*dry_run=*/false);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->requeued);
  EXPECT_THAT(r->reason, HasSubstr("still dead"));
  EXPECT_EQ(Ledger("Q1", "requeue_count"), "1");

  // The wallet team corrects the row: the requeue projects it at once.
  db_.Exec(
      "UPDATE wallet_outbox SET payload = '{\"target_user_id\":7,\"gift_id\":\"rose\","
      "\"gift_count\":4}' WHERE event_id = 'Q1'");
  r = repo_->RequeueDeadEvent("demo", "Q1", "", /*dry_run=*/true);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->matched);
  EXPECT_TRUE(r->requeued) << "a dry run says what would be requeued";
  EXPECT_EQ(r->reason, "");
  EXPECT_EQ(Ledger("Q1", "status"), "dead") << "a dry run changes nothing";
  r = repo_->RequeueDeadEvent("demo", "Q1", "", /*dry_run=*/false);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->requeued);
  EXPECT_EQ(Ledger("Q1", "status"), "done");
  EXPECT_EQ(Ledger("Q1", "projected_by"), "requeue");
  EXPECT_EQ(Ledger("Q1", "retry_count"), "0");
  EXPECT_EQ(Ledger("Q1", "requeue_count"), "2");
  EXPECT_EQ(GiftCount(7, "rose"), 4);
  // Done now: a second requeue is skipped and counts nothing twice.
  r = repo_->RequeueDeadEvent("demo", "Q1", "", /*dry_run=*/false);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->matched);
  EXPECT_EQ(r->reason, "not dead (status done)");
  EXPECT_EQ(GiftCount(7, "rose"), 4);
}

TEST_F(ProjectionRepositoryTest, RequeueSkipsEventsItCannotReproject) {
  absl::StatusOr<RequeueResult> r = repo_->RequeueDeadEvent("demo", "nope", "", false);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->reason, "no ledger row");
  // Dead, but the outbox row was pruned.
  ASSERT_EQ(Project(Event("G1", "{}")), ProjectionOutcome::kDead);
  r = repo_->RequeueDeadEvent("demo", "G1", "", false);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->matched);
  EXPECT_FALSE(r->requeued);
  EXPECT_EQ(r->reason, "outbox row is gone");
  EXPECT_EQ(Ledger("G1", "status"), "dead");
}

TEST_F(ProjectionRepositoryTest, IdentifiersDifferingInCaseOrTrailingSpaceAreDifferentEvents) {
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

TEST_F(ProjectionRepositoryTest, BatchAnswersInOrderAndProjectsEachEventOnce) {
  const std::vector<GiftEvent> batch = {
      Event("B2", GiftPayloadJson(8, "rose", 2)), Event("B1", GiftPayloadJson(7, "rose", 1)),
      Event("B2", GiftPayloadJson(8, "rose", 2)), Event("BX", R"({"gift_id":"x"})"),
      Event("B3", GiftPayloadJson(7, "lily", 3))};
  absl::StatusOr<std::vector<domain::ProjectionResult>> results =
      repo_->ProjectBatch(batch, ProjectedBy::kRelay);
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
  results = repo_->ProjectBatch(batch, ProjectedBy::kRelay);
  ASSERT_TRUE(results.ok()) << results.status();
  EXPECT_EQ((*results)[0].outcome, ProjectionOutcome::kAlreadyProjected);
  EXPECT_EQ((*results)[3].outcome, ProjectionOutcome::kDead);
  EXPECT_EQ(GiftCount(8, "rose"), 2);
}

TEST_F(ProjectionRepositoryTest, BatchOverflowGoesDeadAloneAndTheRestCommits) {
  const int64_t big = std::numeric_limits<int64_t>::max();
  const std::vector<GiftEvent> batch = {Event("O1", GiftPayloadJson(7, "rose", big)),
                                        Event("O2", GiftPayloadJson(7, "rose", 1)),
                                        Event("O3", GiftPayloadJson(7, "lily", 1))};
  absl::StatusOr<std::vector<domain::ProjectionResult>> results =
      repo_->ProjectBatch(batch, ProjectedBy::kRelay);
  ASSERT_TRUE(results.ok()) << results.status();
  EXPECT_EQ((*results)[0].outcome, ProjectionOutcome::kProjected);
  EXPECT_EQ((*results)[1].outcome, ProjectionOutcome::kDead);
  EXPECT_EQ((*results)[2].outcome, ProjectionOutcome::kProjected);
  EXPECT_EQ(GiftCount(7, "rose"), big);
  EXPECT_EQ(GiftCount(7, "lily"), 1);
}

TEST_F(ProjectionRepositoryTest, BatchTransientFailureLeavesNothingHalfWritten) {
  db_.Exec("RENAME TABLE user_gift_wall TO user_gift_wall_away");
  const std::vector<GiftEvent> batch = {Event("T1", GiftPayloadJson(7, "rose", 1)),
                                        Event("T2", GiftPayloadJson(8, "rose", 1))};
  absl::StatusOr<std::vector<domain::ProjectionResult>> results =
      repo_->ProjectBatch(batch, ProjectedBy::kRelay);
  db_.Exec("RENAME TABLE user_gift_wall_away TO user_gift_wall");
  ASSERT_FALSE(results.ok());
  EXPECT_EQ(results.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(WallRows(), 0);
  // Only the event whose fold failed is on record (failed); nothing is done.
  EXPECT_EQ(db_.QueryInt("SELECT COUNT(*) FROM wallet_projection_events WHERE status = 'done'"), 0);
  EXPECT_EQ(db_.QueryInt("SELECT COUNT(*) FROM wallet_projection_events WHERE status = 'failed'"),
            1);
  results = repo_->ProjectBatch(batch, ProjectedBy::kRelay);
  ASSERT_TRUE(results.ok()) << results.status();
  EXPECT_EQ(GiftCount(7, "rose") + GiftCount(8, "rose"), 2);
}

}  // namespace
}  // namespace giftwall::storage
