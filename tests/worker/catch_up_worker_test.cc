#include "server/worker/catch_up_worker.h"

#include <map>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/support/test_database.h"
#include "tests/support/test_projection.h"
#include "tests/support/timing.h"

namespace giftwall::worker {
namespace {

using domain::GiftEvent;

constexpr int64_t kT0 = 1'700'000'000'000;

CatchUpOptions Fast() {
  CatchUpOptions options;
  options.interval = absl::Milliseconds(50);
  options.min_age = absl::ZeroDuration();
  options.batch = 7;  // several passes per round
  return options;
}

TEST(CatchUpWorker, ProjectsWhatTheRelayLostForEveryAppInTheOutbox) {
  testing::TestDatabase db;
  storage::ConnectionPool pool(db.PoolOptions());
  testing::TestProjection projection(pool);
  for (const char* app : {"app-a", "app-b"}) {
    for (int i = 0; i < 30; ++i) {
      db.InsertOutbox(app, absl::StrCat("E", i), "WalletGiftDebited",
                      testing::GiftPayloadJson(1 + i % 3, "rose", 1), kT0 + i);
    }
  }
  CatchUpWorker worker(projection.recovery, projection.ledger, projection.outbox, nullptr, Fast());
  CatchUpRound round = worker.RunRound();
  EXPECT_EQ(round.apps, 2);
  EXPECT_EQ(round.projected, 60);
  EXPECT_EQ(round.errors, 0);
  EXPECT_EQ(db.QueryInt("SELECT SUM(gift_count) FROM user_gift_wall"), 60);
  EXPECT_EQ(
      db.QueryInt("SELECT COUNT(*) FROM wallet_projection_events WHERE projected_by = 'scan'"), 60);
  EXPECT_EQ(worker.RunRound().projected, 0);
}

TEST(CatchUpWorker, ScansOnlyTheAppCodesItIsGiven) {
  testing::TestDatabase db;
  storage::ConnectionPool pool(db.PoolOptions());
  testing::TestProjection projection(pool);
  db.InsertOutbox("app-a", "E1", "WalletGiftDebited", testing::GiftPayloadJson(1, "rose", 1), kT0);
  db.InsertOutbox("app-b", "E1", "WalletGiftDebited", testing::GiftPayloadJson(1, "rose", 1), kT0);
  CatchUpOptions options = Fast();
  options.app_codes = {"app-b"};
  CatchUpWorker worker(projection.recovery, projection.ledger, projection.outbox, nullptr, options);
  EXPECT_EQ(worker.RunRound().projected, 1);
  EXPECT_EQ(db.QueryInt("SELECT COUNT(*) FROM user_gift_wall WHERE app_code = 'app-a'"), 0);
}

class RecordingSink : public AppStatusSink {
 public:
  void Report(const std::string& app_code, const storage::ProjectionStatus& status) override {
    reports[app_code] = status;
  }
  void Forget(const std::string& app_code) override { reports.erase(app_code); }
  void ReportInvalidAppCodeEvents(int64_t events) override { invalid_app_code_events = events; }

  std::map<std::string, storage::ProjectionStatus> reports;
  int64_t invalid_app_code_events = -1;
};

TEST(CatchUpWorker, ScansRowsUnderNonNormalizedCodesAsTheAppsAndCountsInvalidCodes) {
  testing::TestDatabase db;
  storage::ConnectionPool pool(db.PoolOptions());
  testing::TestProjection projection(pool);
  db.InsertOutbox("APP3X", "E1", "WalletGiftDebited", testing::GiftPayloadJson(1, "rose", 2), kT0);
  db.InsertOutbox(" app3x", "E2", "WalletGiftDebited", testing::GiftPayloadJson(1, "rose", 3), kT0);
  db.InsertOutbox("BAD CODE", "E1", "WalletGiftDebited", testing::GiftPayloadJson(1, "rose", 1),
                  kT0);
  db.InsertOutbox("BAD CODE", "E2", "WalletGiftDebited", testing::GiftPayloadJson(1, "rose", 1),
                  kT0);
  CatchUpOptions options = Fast();
  options.app_codes = {"app3x"};
  CatchUpWorker worker(projection.recovery, projection.ledger, projection.outbox, nullptr, options);
  RecordingSink sink;
  worker.ReportStatusTo(&sink);
  CatchUpRound round = worker.RunRound();
  EXPECT_EQ(round.apps, 1);
  EXPECT_EQ(round.projected, 2);
  EXPECT_EQ(round.errors, 0);
  EXPECT_EQ(db.QueryInt("SELECT SUM(gift_count) FROM user_gift_wall WHERE app_code = 'app3x'"), 5);
  EXPECT_EQ(db.QueryInt("SELECT COUNT(*) FROM user_gift_wall WHERE app_code <> 'app3x'"), 0);
  ASSERT_EQ(sink.reports.count("app3x"), 1u);
  EXPECT_EQ(sink.reports["app3x"].done, 2);
  EXPECT_EQ(sink.reports["app3x"].unprojected, 0);
  EXPECT_EQ(sink.invalid_app_code_events, 2);
}

// The background thread finds an event written after it started, within a few intervals.
TEST(CatchUpWorker, BackgroundThreadProjectsNewOutboxRowsAndStopsCleanly) {
  testing::TestDatabase db;
  storage::ConnectionPool pool(db.PoolOptions());
  testing::TestProjection projection(pool);
  CatchUpWorker worker(projection.recovery, projection.ledger, projection.outbox, nullptr, Fast());
  worker.Start();
  db.InsertOutbox("demo", "late", "WalletGiftDebited", testing::GiftPayloadJson(5, "rose", 2), kT0);
  int64_t count = 0;
  for (int i = 0; i < 200 && count == 0; ++i) {
    absl::SleepFor(absl::Milliseconds(50));
    count = db.QueryInt("SELECT COALESCE(SUM(gift_count), 0) FROM user_gift_wall");
  }
  EXPECT_EQ(count, 2);
  const absl::Time start = absl::Now();
  worker.Stop();
  if (testing::kWallClockBoundsHold) {
    EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  }
}

// DESIGN's horizon rule: the horizon never passes the database's now - min_age - margin, even
// after passes cut short by their candidate limit. An event committed late, behind everything the
// passes projected (a wallet clock skew, a long transaction), is found by the next round, not by
// the hourly full sweep.
TEST(CatchUpWorker, Rule11_PassesCutShortByTheirLimitKeepTheSafetyMargin) {
  testing::TestDatabase db;
  storage::ConnectionPool pool(db.PoolOptions());
  testing::TestProjection projection(pool);
  const int64_t now = db.QueryInt("SELECT CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)");
  for (int i = 0; i < 3; ++i) {
    db.InsertOutbox("demo", absl::StrCat("early", i), "WalletGiftDebited",
                    testing::GiftPayloadJson(1, "rose", 1), now - 60'000 + i * 10'000);
  }
  CatchUpOptions options = Fast();
  options.batch = 1;  // every pass stops at its limit
  options.safety_margin = absl::Minutes(5);
  options.full_sweep_every = absl::Hours(1);
  CatchUpWorker worker(projection.recovery, projection.ledger, projection.outbox, nullptr, options);
  EXPECT_EQ(worker.RunRound().projected, 3);
  // Committed now, created before every event the round projected, within the margin.
  db.InsertOutbox("demo", "late", "WalletGiftDebited", testing::GiftPayloadJson(1, "rose", 1),
                  now - 70'000);
  EXPECT_EQ(worker.RunRound().projected, 1);
  EXPECT_EQ(db.QueryInt("SELECT SUM(gift_count) FROM user_gift_wall"), 4);
}

// Several processes may scan at once: the ledger keeps every event to one effect.
TEST(CatchUpWorker, ConcurrentScannersCountEachEventOnce) {
  testing::TestDatabase db;
  for (int i = 0; i < 300; ++i) {
    db.InsertOutbox("demo", absl::StrCat("E", i), "WalletGiftDebited",
                    testing::GiftPayloadJson(1 + i % 7, absl::StrCat("g", i % 3), 1 + i % 4),
                    kT0 + i % 50);
  }
  int64_t expected = 0;
  for (int i = 0; i < 300; ++i) expected += 1 + i % 4;
  std::vector<std::thread> scanners;
  std::atomic<int> projected{0};
  for (int s = 0; s < 3; ++s) {
    scanners.emplace_back([&, s] {
      storage::ConnectionPool pool(db.PoolOptions(4));
      testing::TestProjection projection(pool);
      CatchUpWorker worker(projection.recovery, projection.ledger, projection.outbox, nullptr,
                           Fast());
      for (int round = 0; round < 5; ++round) projected += worker.RunRound().projected;
    });
  }
  for (std::thread& t : scanners) t.join();
  EXPECT_EQ(projected, 300);
  EXPECT_EQ(db.QueryInt("SELECT SUM(gift_count) FROM user_gift_wall"), expected);
}

// One replica at a time scans an app: the one that holds its scan lease. When that replica dies
// (it renews the lease no more), the first round of another after the lease's duration takes the
// app over.
TEST(CatchUpWorker, OneReplicaScansAnAppAndAnotherTakesOverWhenItDies) {
  testing::TestDatabase db;
  // Recent events: a scan that has caught up looks only a safety margin back.
  const int64_t now = absl::ToUnixMillis(absl::Now()) - 60'000;
  for (int i = 0; i < 20; ++i) {
    db.InsertOutbox("demo", absl::StrCat("A", i), "WalletGiftDebited",
                    testing::GiftPayloadJson(1, "rose", 1), now + i);
  }
  storage::ConnectionPool pool_a(db.PoolOptions(4)), pool_b(db.PoolOptions(4));
  testing::TestProjection projection_a(pool_a), projection_b(pool_b);
  const absl::Duration lease = absl::Seconds(3);
  storage::ScanLeases leases_a(db.endpoint(), db.PoolOptions().session, {"a", lease});
  storage::ScanLeases leases_b(db.endpoint(), db.PoolOptions().session, {"b", lease});
  CatchUpWorker a(projection_a.recovery, projection_a.ledger, projection_a.outbox, &leases_a,
                  Fast());
  CatchUpWorker b(projection_b.recovery, projection_b.ledger, projection_b.outbox, &leases_b,
                  Fast());

  CatchUpRound round = a.RunRound();
  EXPECT_EQ(round.apps, 1);
  EXPECT_EQ(round.projected, 20);
  for (int i = 20; i < 30; ++i) {
    db.InsertOutbox("demo", absl::StrCat("A", i), "WalletGiftDebited",
                    testing::GiftPayloadJson(1, "rose", 1), now + i);
  }
  round = b.RunRound();
  EXPECT_EQ(round.apps, 0);
  EXPECT_EQ(round.skipped, 1) << "two replicas scanned one app at once";
  EXPECT_EQ(round.projected, 0);
  round = a.RunRound();  // the holder goes on
  EXPECT_EQ(round.projected, 10);
  EXPECT_EQ(
      db.QueryString("SELECT holder FROM giftwall_leases WHERE name = 'scan/demo'").substr(0, 2),
      "a/");

  // The holder stops renewing (a crashed replica): once its lease has run out, the other takes
  // over, with the next token.
  const int64_t token = db.QueryInt("SELECT token FROM giftwall_leases WHERE name = 'scan/demo'");
  for (int i = 30; i < 35; ++i) {
    db.InsertOutbox("demo", absl::StrCat("A", i), "WalletGiftDebited",
                    testing::GiftPayloadJson(1, "rose", 1), now + i);
  }
  round = b.RunRound();
  EXPECT_EQ(round.skipped, 1) << "taken over before the lease ran out";
  absl::SleepFor(lease + absl::Milliseconds(200));
  round = b.RunRound();
  EXPECT_EQ(round.apps, 1);
  EXPECT_EQ(round.projected, 5);
  EXPECT_EQ(db.QueryInt("SELECT token FROM giftwall_leases WHERE name = 'scan/demo'"), token + 1);
  // The dead replica's worker finds it lost the app, and leaves it to the other.
  round = a.RunRound();
  EXPECT_EQ(round.skipped, 1);
  EXPECT_EQ(db.QueryInt("SELECT SUM(gift_count) FROM user_gift_wall"), 35);
}

}  // namespace
}  // namespace giftwall::worker
