// Many callers, one database: every event is counted exactly once and no caller sees a
// deadlock. And a session killed in the middle of a fold leaves nothing half-written.
#include <algorithm>
#include <atomic>
#include <map>
#include <numeric>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "server/projection/group_projector.h"
#include "server/storage/db_error.h"
#include "tests/support/test_database.h"
#include "tests/support/test_projection.h"

namespace giftwall::projection {
namespace {

using domain::GiftEvent;
using domain::ProjectedBy;
using domain::ProjectionOutcome;
using storage::ConnectionPool;
using storage::PoolOptions;
using storage::SqlConnection;

constexpr int64_t kT0 = 1'700'000'000'000;

struct Expected {
  int64_t count = 0;
  int64_t first = 0;
  int64_t last = 0;
};

// `n` events over 20 walls and 5 gifts, with their expected fold per (user, gift).
std::vector<GiftEvent> MakeEvents(std::map<std::pair<int64_t, std::string>, Expected>* expected,
                                  int n = 500) {
  std::vector<GiftEvent> events;
  std::mt19937 rng(7);
  for (int i = 0; i < n; ++i) {
    const int64_t user = 1 + i % 20;
    const std::string gift = absl::StrCat("gift-", i % 5);
    const int64_t count = 1 + static_cast<int64_t>(rng() % 9);
    const int64_t at = kT0 + static_cast<int64_t>(rng() % 100000);
    events.push_back(GiftEvent{"demo", absl::StrCat("evt-", i),
                               testing::GiftPayloadJson(user, gift, count), at});
    Expected& e = (*expected)[{user, gift}];
    e.count += count;
    e.first = e.first == 0 ? at : std::min(e.first, at);
    e.last = std::max(e.last, at);
  }
  return events;
}

// The wall is `expected`, and each of the `events` events is done.
void ExpectWall(testing::TestDatabase& db,
                const std::map<std::pair<int64_t, std::string>, Expected>& expected,
                int64_t events = 500) {
  EXPECT_EQ(db.QueryInt("SELECT COUNT(*) FROM user_gift_wall"),
            static_cast<int64_t>(expected.size()));
  for (const auto& [key, e] : expected) {
    const std::string where = absl::StrFormat(
        " FROM user_gift_wall WHERE app_code = 'demo' AND user_id = %d AND gift_id = '%s'",
        key.first, key.second);
    EXPECT_EQ(db.QueryInt("SELECT gift_count" + where), e.count) << key.first << "/" << key.second;
    EXPECT_EQ(db.QueryInt("SELECT first_received_at_ms" + where), e.first);
    EXPECT_EQ(db.QueryInt("SELECT last_received_at_ms" + where), e.last);
  }
  EXPECT_EQ(db.QueryInt("SELECT COUNT(*) FROM wallet_projection_events WHERE status = 'done'"),
            events);
  EXPECT_EQ(db.QueryInt("SELECT COUNT(*) FROM wallet_projection_events WHERE status <> 'done'"), 0);
}

PoolOptions ProductionLikePool(const testing::TestDatabase& db) {
  PoolOptions options = db.PoolOptions(16);
  options.session.lock_wait_timeout = absl::Seconds(1);
  return options;
}

TEST(ProjectionConcurrency, SixteenCallersDeliveringTheSameEventsCountEachOnce) {
  testing::TestDatabase db;
  std::map<std::pair<int64_t, std::string>, Expected> expected;
  const std::vector<GiftEvent> events = MakeEvents(&expected);
  ConnectionPool pool(ProductionLikePool(db));
  GroupProjector repo(pool, testing::FastRetry());

  std::atomic<int> projected{0}, errors{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 16; ++t) {
    callers.emplace_back([&, t] {
      std::vector<size_t> order(events.size());
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), std::mt19937(static_cast<unsigned>(t)));
      for (size_t i : order) {
        absl::StatusOr<domain::ProjectionResult> r = repo.Project(events[i], ProjectedBy::kRelay);
        if (!r.ok()) {
          if (errors++ < 5) ADD_FAILURE() << "caller " << t << ": " << r.status();
          continue;
        }
        if (r->outcome == ProjectionOutcome::kProjected) ++projected;
        if (r->outcome != ProjectionOutcome::kProjected &&
            r->outcome != ProjectionOutcome::kAlreadyProjected &&
            r->outcome != ProjectionOutcome::kLeased) {
          ADD_FAILURE() << "unexpected outcome " << static_cast<int>(r->outcome);
        }
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(errors, 0);
  EXPECT_EQ(projected, 500);
  ExpectWall(db, expected);
}

TEST(ProjectionConcurrency, OverlappingBatchesFromEightCallersNeverDeadlockAndCountEachOnce) {
  testing::TestDatabase db;
  std::map<std::pair<int64_t, std::string>, Expected> expected;
  const std::vector<GiftEvent> events = MakeEvents(&expected);
  ConnectionPool pool(ProductionLikePool(db));
  GroupProjector repo(pool, testing::FastRetry());

  const int64_t deadlocks_before = storage::MysqlErrorCounts()[1213];
  std::atomic<int> errors{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 8; ++t) {
    callers.emplace_back([&, t] {
      std::vector<GiftEvent> shuffled = events;
      std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(static_cast<unsigned>(100 + t)));
      for (size_t start = 0; start < shuffled.size(); start += 50) {
        const std::vector<GiftEvent> batch(
            shuffled.begin() + static_cast<std::ptrdiff_t>(start),
            shuffled.begin() + static_cast<std::ptrdiff_t>(start + 50));
        const UnitResult r = repo.ProjectBatch(batch, ProjectedBy::kRelay);
        if (!r.ok() && errors++ < 5) ADD_FAILURE() << "caller " << t << ": " << r.status();
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(errors, 0);
  // Every batch took its row locks in one order, and an event another batch inserted first was
  // skipped, not rolled back over (DESIGN §2.13): no deadlock to retry.
  EXPECT_EQ(storage::MysqlErrorCounts()[1213], deadlocks_before)
      << "overlapping batches deadlocked";
  // A LEASED answer leaves an event to another caller, which projects it: all 500 are done.
  ExpectWall(db, expected);
}

// A failed event is re-claimed by an UPDATE: concurrent redeliveries of it contend for the row
// (both may hold the duplicate key's shared lock, then both want it exclusive). The loser is
// retried as contention; every caller still gets OK and the event counts once.
TEST(ProjectionConcurrency, SixteenRedeliveriesOfAFailedEventCountItOnce) {
  testing::TestDatabase db;
  ConnectionPool pool(ProductionLikePool(db));
  GroupProjector repo(pool, testing::FastRetry());
  for (int round = 0; round < 5; ++round) {
    const std::string id = absl::StrCat("F", round);
    db.Exec(absl::StrCat(
        "INSERT INTO wallet_projection_events (projection_name, app_code, event_id, status, "
        "retry_count, created_at_ms, updated_at_ms) VALUES ('user_gift_wall', 'demo', '",
        id, "', 'failed', 3, 1, 1)"));
    const GiftEvent event{"demo", id, testing::GiftPayloadJson(7, "rose", 2), kT0};
    std::atomic<int> projected{0}, errors{0};
    std::vector<std::thread> callers;
    for (int t = 0; t < 16; ++t) {
      callers.emplace_back([&] {
        absl::StatusOr<domain::ProjectionResult> r = repo.Project(event, ProjectedBy::kRelay);
        if (!r.ok()) {
          if (errors++ < 3) ADD_FAILURE() << r.status();
          return;
        }
        if (r->outcome == ProjectionOutcome::kProjected) ++projected;
      });
    }
    for (std::thread& t : callers) t.join();
    EXPECT_EQ(errors, 0);
    EXPECT_EQ(projected, 1);
  }
  EXPECT_EQ(db.QueryInt("SELECT gift_count FROM user_gift_wall"), 10);
  EXPECT_EQ(db.QueryInt("SELECT COUNT(*) FROM wallet_projection_events WHERE status = 'done' "
                        "AND retry_count = 3"),
            5);
}

// Projects `e` while another session holds the wall's rows, so that the fold stops right after
// its claim, then KILLs the fold's session: a real transient failure. Returns the fold's answer.
absl::StatusOr<domain::ProjectionResult> ProjectWithItsSessionKilled(testing::TestDatabase& db,
                                                                     GroupProjector& repo,
                                                                     const GiftEvent& e) {
  std::unique_ptr<SqlConnection> blocker = db.Connect();
  EXPECT_TRUE(blocker->ExecuteDirect("START TRANSACTION").ok());
  EXPECT_TRUE(blocker->ExecuteDirect("SELECT * FROM user_gift_wall FOR UPDATE").ok());
  absl::StatusOr<domain::ProjectionResult> result;
  std::thread fold([&] { result = repo.Project(e, ProjectedBy::kRelay); });
  // Find the fold's session waiting on the wall row, and kill it.
  int64_t victim = 0;
  for (int i = 0; i < 1000 && victim == 0; ++i) {
    victim = db.QueryInt(
        "SELECT id FROM information_schema.processlist WHERE db = DATABASE() AND info LIKE "
        "'%INSERT INTO user_gift_wall%' AND id <> CONNECTION_ID() LIMIT 1");
    if (victim == 0) absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_NE(victim, 0) << "the fold never reached the wall";
  if (victim != 0) db.Exec(absl::StrCat("KILL ", victim));
  fold.join();
  EXPECT_TRUE(blocker->ExecuteDirect("ROLLBACK").ok());
  return result;
}

// KILL the session of a fold that has claimed its event and is waiting to write the wall: the
// transaction dies with its session, so neither the wall nor the ledger's done survives; the
// failure is recorded, the pool replaces the session, and a redelivery projects the event.
TEST(ProjectionConcurrency, SessionKilledMidFoldLeavesNothingHalfWritten) {
  testing::TestDatabase db;
  PoolOptions pool_options = db.PoolOptions(4);
  pool_options.session.lock_wait_timeout = absl::Seconds(20);
  ConnectionPool pool(pool_options);
  GroupProjector repo(pool, testing::FastRetry());
  const auto event = [](const std::string& id, int64_t count) {
    return GiftEvent{"demo", id, testing::GiftPayloadJson(7, "rose", count), kT0};
  };
  ASSERT_TRUE(repo.Project(event("E0", 1), ProjectedBy::kRelay).ok());

  const absl::StatusOr<domain::ProjectionResult> result =
      ProjectWithItsSessionKilled(db, repo, event("E1", 5));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable) << result.status();
  EXPECT_EQ(db.QueryInt("SELECT gift_count FROM user_gift_wall"), 1);
  EXPECT_EQ(db.QueryString("SELECT status FROM wallet_projection_events WHERE event_id = 'E1'"),
            "failed");
  EXPECT_EQ(db.QueryInt("SELECT retry_count FROM wallet_projection_events WHERE event_id = 'E1'"),
            1);
  EXPECT_GE(pool.Stats().discarded_total, 1);

  // Redelivery: the relay may retry a failed event at once.
  absl::StatusOr<domain::ProjectionResult> again =
      repo.Project(event("E1", 5), ProjectedBy::kRelay);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->outcome, ProjectionOutcome::kProjected);
  EXPECT_EQ(db.QueryInt("SELECT gift_count FROM user_gift_wall"), 6);
}

// Rule 7 with a real transient failure: each time the fold's session is killed, the call says
// UNAVAILABLE, the ledger counts the failure and backs off, and at max_retries the event is dead:
// redelivered, it answers DEAD and the wall never counted it.
TEST(ProjectionConcurrency, Rule7_KilledSessionsAreFailuresCountedUntilTheEventIsDead) {
  testing::TestDatabase db;
  PoolOptions pool_options = db.PoolOptions(4);
  pool_options.session.lock_wait_timeout = absl::Seconds(20);
  ConnectionPool pool(pool_options);
  domain::RetryPolicy retry = testing::FastRetry();
  retry.max_retries = 2;
  GroupProjector repo(pool, retry);
  const auto event = [](const std::string& id, int64_t count) {
    return GiftEvent{"demo", id, testing::GiftPayloadJson(7, "rose", count), kT0};
  };
  ASSERT_TRUE(repo.Project(event("E0", 1), ProjectedBy::kRelay).ok());
  const auto ledger = [&db](const std::string& column) {
    return db.QueryString(
        absl::StrCat("SELECT ", column, " FROM wallet_projection_events WHERE event_id = 'E1'"));
  };
  for (int failure = 1; failure <= 2; ++failure) {
    const absl::StatusOr<domain::ProjectionResult> result =
        ProjectWithItsSessionKilled(db, repo, event("E1", 5));
    ASSERT_FALSE(result.ok()) << "failure " << failure;
    EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable) << result.status();
    EXPECT_EQ(ledger("retry_count"), absl::StrCat(failure));
    EXPECT_EQ(ledger("status"), failure < 2 ? "failed" : "dead");
    EXPECT_NE(ledger("last_error"), "");
  }
  absl::StatusOr<domain::ProjectionResult> again =
      repo.Project(event("E1", 5), ProjectedBy::kRelay);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->outcome, ProjectionOutcome::kDead);
  EXPECT_EQ(db.QueryInt("SELECT gift_count FROM user_gift_wall"), 1);
  EXPECT_GE(pool.Stats().discarded_total, 2);
}

// The three ways back to the wall, racing on real threads over the same events: an operator's
// requeue of dead events (their outbox rows corrected meanwhile), four relays redelivering
// every event, and two catch-up scans finding the failed and the lost ones. Each event is
// folded exactly once: PROJECTED is answered once per event over all three paths together, and
// the wall is the fold of the corrected payloads.
TEST(ProjectionConcurrency, RequeueRelayAndScanRacingOnRealThreadsFoldEachEventOnce) {
  testing::TestDatabase db;
  ConnectionPool pool(ProductionLikePool(db));
  testing::TestProjection repo(pool);
  std::map<std::pair<int64_t, std::string>, Expected> expected;
  const std::vector<GiftEvent> events = MakeEvents(&expected, 300);
  for (const GiftEvent& e : events) {
    db.InsertOutbox("demo", e.event_id, "WalletGiftDebited", e.payload_json, e.occurred_at_ms);
  }
  // 0-99 went dead on a bad deploy's payload (now corrected in the outbox), 100-199 failed
  // once and are due, 200-299 the relay lost.
  std::vector<std::string> dead_ids;
  for (size_t i = 0; i < 100; ++i) {
    GiftEvent broken = events[i];
    broken.payload_json = R"({"target_user_id":1,"gift_id":"broken"})";
    absl::StatusOr<domain::ProjectionResult> r =
        repo.projector.Project(broken, ProjectedBy::kRelay);
    ASSERT_TRUE(r.ok() && r->outcome == ProjectionOutcome::kDead) << r.status();
    dead_ids.push_back(events[i].event_id);
  }
  for (size_t i = 100; i < 200; ++i) {
    db.Exec(absl::StrCat(
        "INSERT INTO wallet_projection_events (projection_name, app_code, event_id, status, "
        "retry_count, last_error, created_at_ms, updated_at_ms) VALUES ('user_gift_wall', "
        "'demo', '",
        events[i].event_id, "', 'failed', 1, 'connection lost', 1, 1)"));
  }

  std::atomic<int> projected{0}, errors{0};
  std::atomic<int> relays_left{4};
  const auto fail = [&](const std::string& who, const absl::Status& s) {
    if (errors++ < 5) ADD_FAILURE() << who << ": " << s;
  };
  std::vector<std::thread> threads;
  threads.emplace_back([&] {
    RequeueRequest request;
    request.app_code = "demo";
    request.event_ids = dead_ids;
    absl::StatusOr<RequeueReport> report = repo.recovery.RequeueDeadEvents(request);
    if (!report.ok()) return fail("requeue", report.status());
    EXPECT_EQ(report->matched, 100);
    EXPECT_EQ(report->requeued, 100);
    projected += static_cast<int>(report->requeued);
  });
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::vector<GiftEvent> order = events;
      std::shuffle(order.begin(), order.end(), std::mt19937(static_cast<unsigned>(t)));
      for (const GiftEvent& e : order) {
        absl::StatusOr<domain::ProjectionResult> r = repo.projector.Project(e, ProjectedBy::kRelay);
        if (!r.ok()) {
          fail("relay", r.status());
        } else if (r->outcome == ProjectionOutcome::kProjected) {
          ++projected;
        }
      }
      --relays_left;
    });
  }
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      CatchUpRequest request;
      request.app_code = "demo";
      request.limit = 100;
      request.min_age = absl::ZeroDuration();
      for (bool last = false; !last;) {
        last = relays_left == 0;  // one more pass after the relays are done
        absl::StatusOr<CatchUpPass> pass = repo.recovery.ProjectPendingGiftWallEvents(request);
        if (!pass.ok()) return fail("scan", pass.status());
        projected += pass->projected;
        if (pass->found > 0) last = false;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(errors, 0);
  EXPECT_EQ(projected, 300) << "an event was projected twice, or never";
  EXPECT_EQ(db.QueryInt("SELECT COUNT(*) FROM wallet_projection_events WHERE status = 'done'"),
            300);
  EXPECT_EQ(db.QueryInt("SELECT COUNT(*) FROM wallet_projection_events WHERE projected_by = "
                        "'requeue'"),
            100);
  ExpectWall(db, expected, 300);
}

}  // namespace
}  // namespace giftwall::projection
