#include "server/storage/migrator.h"

#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_database.h"

namespace giftwall::storage {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(Migrate, AppliesEverythingOnceThenNothing) {
  testing::TestDatabase db(/*migrate=*/false);
  std::unique_ptr<SqlConnection> conn = db.Connect();
  EXPECT_EQ(*SchemaVersion(*conn), 0);
  absl::StatusOr<MigrationReport> first = Migrate(*conn, EmbeddedMigrations());
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->applied.size(), EmbeddedMigrations().size());
  EXPECT_EQ(first->schema_version, LatestEmbeddedVersion());
  absl::StatusOr<MigrationReport> second = Migrate(*conn, EmbeddedMigrations());
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_THAT(second->applied, ElementsAre());
  EXPECT_EQ(*SchemaVersion(*conn), LatestEmbeddedVersion());
}

TEST(Migrate, ConcurrentRunsTakeTurns) {
  testing::TestDatabase db(/*migrate=*/false);
  std::vector<std::thread> runners;
  std::atomic<size_t> applied{0};
  std::atomic<int> failures{0};
  for (int i = 0; i < 4; ++i) {
    runners.emplace_back([&] {
      std::unique_ptr<SqlConnection> conn = db.Connect();
      absl::StatusOr<MigrationReport> report = Migrate(*conn, EmbeddedMigrations());
      if (!report.ok()) {
        ++failures;
        ADD_FAILURE() << report.status();
        return;
      }
      applied += report->applied.size();
    });
  }
  for (std::thread& t : runners) t.join();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(applied, EmbeddedMigrations().size());
  EXPECT_EQ(db.QueryInt("SELECT COUNT(*) FROM schema_migrations"),
            static_cast<int64_t>(EmbeddedMigrations().size()));
}

TEST(Migrate, RefusesAMigrationChangedAfterItWasApplied) {
  testing::TestDatabase db(/*migrate=*/false);
  std::unique_ptr<SqlConnection> conn = db.Connect();
  ASSERT_TRUE(Migrate(*conn, {{"0001_t.sql", "CREATE TABLE t (a INT)"}}).ok());
  absl::StatusOr<MigrationReport> report =
      Migrate(*conn, {{"0001_t.sql", "CREATE TABLE t (a BIGINT)"}});
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(report.status().message(), HasSubstr("0001_t.sql was changed after it was applied"));
}

TEST(Migrate, FinishesAMigrationThatAnEarlierRunLeftHalfDone) {
  testing::TestDatabase db(/*migrate=*/false);
  std::unique_ptr<SqlConnection> conn = db.Connect();
  // The first statement took effect, then the process died before the rest and the record.
  ASSERT_TRUE(conn->ExecuteDirect("CREATE TABLE t1 (a INT) CHARSET utf8mb4").ok());
  absl::StatusOr<MigrationReport> report = Migrate(
      *conn, {{"0001_two.sql",
               "CREATE TABLE t1 (a INT) CHARSET utf8mb4; CREATE TABLE t2 (b INT) CHARSET utf8mb4;"
               "ALTER TABLE t1 ADD COLUMN c INT"}});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(db.QueryInt("SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = "
                        "DATABASE() AND table_name = 't1' AND column_name = 'c'"),
            1);
  EXPECT_EQ(*SchemaVersion(*conn), 1);
}

TEST(Migrate, NeedsAVersionInEveryFileName) {
  testing::TestDatabase db(/*migrate=*/false);
  std::unique_ptr<SqlConnection> conn = db.Connect();
  absl::StatusOr<MigrationReport> report = Migrate(*conn, {{"init.sql", "SELECT 1"}});
  ASSERT_FALSE(report.ok());
  EXPECT_THAT(report.status().message(), HasSubstr("must start with its version"));
}

// The test server runs with latin1, case-insensitive defaults: every table must have declared
// its own charset, and identifiers must compare byte for byte.
TEST(Migrate, TablesDeclareTheirCharsetsAndIdentifiersAreBinary) {
  testing::TestDatabase db;
  EXPECT_EQ(db.QueryInt("SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = "
                        "DATABASE() AND character_set_name IS NOT NULL AND character_set_name "
                        "NOT IN ('utf8mb4', 'ascii')"),
            0);
  EXPECT_EQ(db.QueryInt("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = "
                        "DATABASE() AND table_collation NOT LIKE 'utf8mb4%'"),
            0);
  for (const char* column : {"app_code", "event_id", "gift_id"}) {
    EXPECT_EQ(db.QueryInt(std::string("SELECT COUNT(*) FROM information_schema.columns WHERE "
                                      "table_schema = DATABASE() AND column_name = '") +
                          column + "' AND data_type <> 'varbinary'"),
              0)
        << column;
  }
}

}  // namespace
}  // namespace giftwall::storage
