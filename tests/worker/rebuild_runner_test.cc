#include "server/worker/rebuild_runner.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/projection/group_projector.h"
#include "tests/support/test_database.h"

namespace giftwall::worker {
namespace {

constexpr int64_t kT0 = 1'700'000'000'000;

TEST(RebuildRunner, RebuildsEveryUserAndReportsProgressToTheEnd) {
  testing::TestDatabase db;
  storage::ConnectionPool pool(db.PoolOptions());
  projection::GroupProjector projection(pool, domain::RetryPolicy());
  projection::WallAudit audit(pool, domain::RetryPolicy());
  for (int i = 0; i < 40; ++i) {
    const std::string payload = testing::GiftPayloadJson(1 + i % 8, "rose", 1, 100 + i % 3, 10);
    db.InsertOutbox("demo", absl::StrCat("E", i), "WalletGiftDebited", payload, kT0 + i);
    ASSERT_TRUE(projection
                    .Project(domain::GiftEvent{"demo", absl::StrCat("E", i), payload, kT0 + i},
                             domain::ProjectedBy::kRelay)
                    .ok());
  }
  db.Exec("UPDATE user_gift_wall SET gift_count = 0");  // every wall drifted
  RebuildRunner runner(audit);
  {
    // While another process rebuilds the app (it holds the lease), a rebuild is refused.
    absl::StatusOr<std::unique_ptr<storage::LeaseKeeper>> elsewhere = audit.LockRebuild("demo");
    ASSERT_TRUE(elsewhere.ok());
    absl::StatusOr<std::shared_ptr<RebuildJob>> refused = runner.Start("demo");
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  }
  absl::StatusOr<std::shared_ptr<RebuildJob>> job = runner.Start("demo");
  ASSERT_TRUE(job.ok()) << job.status();
  uint64_t seen = 0;
  RebuildProgress progress;
  int64_t last_done = -1;
  for (int i = 0; i < 600 && !progress.finished; ++i) {
    if ((*job)->WaitForChange(&seen, absl::Milliseconds(100), &progress)) {
      EXPECT_GE(progress.done, last_done) << "progress never goes back";
      last_done = progress.done;
    }
  }
  ASSERT_TRUE(progress.finished);
  EXPECT_TRUE(progress.result.ok()) << progress.result;
  EXPECT_EQ(progress.phase, "done");
  EXPECT_EQ(progress.total, 8);
  EXPECT_EQ(progress.done, 8);
  EXPECT_EQ(db.QueryInt("SELECT SUM(gift_count) FROM user_gift_wall"), 40);
  absl::StatusOr<projection::VerifyReport> report = audit.Verify("demo", 0);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->drifted, 0);
  // Once finished, the lock is free again.
  absl::StatusOr<std::shared_ptr<RebuildJob>> again = runner.Start("demo");
  EXPECT_TRUE(again.ok()) << again.status();
}

// Rebuilds are limited per server (--max_concurrent_rebuilds): past the limit RESOURCE_EXHAUSTED
// at once, and a slot is free again once a rebuild has finished.
TEST(RebuildRunner, RebuildsPastTheLimitAreRefusedUntilOneFinishes) {
  testing::TestDatabase db;
  storage::ConnectionPool pool(db.PoolOptions());
  projection::WallAudit audit(pool, domain::RetryPolicy());
  RebuildRunner runner(audit, /*max_running=*/1);
  // The first rebuild waits to list its users while another session holds the ledger.
  std::unique_ptr<storage::SqlConnection> blocker = db.Connect();
  ASSERT_TRUE(blocker->ExecuteDirect("LOCK TABLES wallet_projection_events WRITE").ok());
  absl::StatusOr<std::shared_ptr<RebuildJob>> first = runner.Start("one");
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<std::shared_ptr<RebuildJob>> second = runner.Start("two");
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(second.status().message()),
              ::testing::HasSubstr("--max_concurrent_rebuilds"));
  ASSERT_TRUE(blocker->ExecuteDirect("UNLOCK TABLES").ok());
  uint64_t seen = 0;
  RebuildProgress progress;
  for (int i = 0; i < 600 && !progress.finished; ++i) {
    (*first)->WaitForChange(&seen, absl::Milliseconds(100), &progress);
  }
  ASSERT_TRUE(progress.finished);
  second = runner.Start("two");
  EXPECT_TRUE(second.ok()) << second.status();
}

}  // namespace
}  // namespace giftwall::worker
