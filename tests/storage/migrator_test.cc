#include "server/storage/migrator.h"

#include <atomic>
#include <thread>

#include "absl/strings/str_cat.h"
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
  // Neither bookkeeping table: readiness names both.
  absl::StatusOr<SchemaState> none = ReadSchemaState(*conn);
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(none.status().message(), HasSubstr("no giftwall_schema_migrations table"));
  EXPECT_THAT(none.status().message(), HasSubstr("schema_migrations was an earlier release's"));
  absl::StatusOr<MigrationReport> first = Migrate(*conn, EmbeddedMigrations());
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->applied.size(), EmbeddedMigrations().size());
  EXPECT_EQ(first->schema_version, LatestEmbeddedVersion());
  absl::StatusOr<MigrationReport> second = Migrate(*conn, EmbeddedMigrations());
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_THAT(second->applied, ElementsAre());
  EXPECT_EQ(ReadSchemaState(*conn)->version, LatestEmbeddedVersion());
  EXPECT_TRUE(ReadSchemaState(*conn)->dirty.empty());
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
  EXPECT_EQ(db.QueryInt("SELECT COUNT(*) FROM giftwall_schema_migrations"),
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

TEST(Migrate, PassesOverStatementsAlreadyInEffect) {
  testing::TestDatabase db(/*migrate=*/false);
  std::unique_ptr<SqlConnection> conn = db.Connect();
  // A DBA ran the first statement with their own tools, and recorded nothing.
  ASSERT_TRUE(conn->ExecuteDirect("CREATE TABLE t1 (a INT) CHARSET utf8mb4").ok());
  absl::StatusOr<MigrationReport> report = Migrate(
      *conn, {{"0001_two.sql",
               "CREATE TABLE t1 (a INT) CHARSET utf8mb4; CREATE TABLE t2 (b INT) CHARSET utf8mb4;"
               "ALTER TABLE t1 ADD COLUMN c INT"}});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(db.QueryInt("SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = "
                        "DATABASE() AND table_name = 't1' AND column_name = 'c'"),
            1);
  EXPECT_EQ(ReadSchemaState(*conn)->version, 1);
}

// A migration that stopped half-way is recorded dirty: nothing runs over it, readiness says why,
// and once an operator has finished it by hand, --clear_dirty records it as done.
TEST(Migrate, AMigrationThatStoppedPartWayIsDirtyUntilAnOperatorClearsIt) {
  testing::TestDatabase db(/*migrate=*/false);
  std::unique_ptr<SqlConnection> conn = db.Connect();
  const std::vector<Migration> broken = {
      {"0001_half.sql", "CREATE TABLE h1 (a INT) CHARSET utf8mb4; THIS IS NOT SQL"}};
  ASSERT_FALSE(Migrate(*conn, broken).ok());
  absl::StatusOr<SchemaState> state = ReadSchemaState(*conn);
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_THAT(state->dirty, HasSubstr("migration 0001_half.sql stopped part way"));
  EXPECT_THAT(state->dirty, HasSubstr("giftwall-server migrate --clear_dirty=1"));
  absl::StatusOr<MigrationReport> again = Migrate(*conn, broken);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(again.status().message(), HasSubstr("0001_half.sql stopped part way"));
  EXPECT_FALSE(PendingSql(*conn, broken).ok()) << "no plan over a dirty migration either";

  EXPECT_EQ(ClearDirty(*conn, 2).code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(ClearDirty(*conn, 1).ok());
  EXPECT_TRUE(ReadSchemaState(*conn)->dirty.empty());
  again = Migrate(*conn, broken);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_THAT(again->applied, ElementsAre());
  EXPECT_EQ(ClearDirty(*conn, 1).code(), absl::StatusCode::kFailedPrecondition);
}

// For DBAs who run DDL with their own tools: the SQL, and the INSERT that records each
// migration, with its checksum. Nothing is applied.
TEST(Migrate, PrintShowsThePendingSqlAndAppliesNothing) {
  testing::TestDatabase db(/*migrate=*/false);
  std::unique_ptr<SqlConnection> conn = db.Connect();
  const std::vector<Migration> one = {{"0001_t.sql", "CREATE TABLE t (a INT) CHARSET utf8mb4"}};
  absl::StatusOr<std::string> sql = PendingSql(*conn, one);
  ASSERT_TRUE(sql.ok()) << sql.status();
  EXPECT_THAT(*sql, HasSubstr("-- migration 0001_t.sql\nCREATE TABLE t (a INT) CHARSET utf8mb4;"));
  EXPECT_THAT(*sql, ::testing::ContainsRegex(
                        "INSERT INTO giftwall_schema_migrations \\(version, name, checksum, "
                        "applied_at_ms, dirty\\) VALUES \\(1, '0001_t.sql', '[0-9a-f]{16}'"));
  EXPECT_EQ(db.QueryInt("SELECT COUNT(*) FROM giftwall_schema_migrations"), 0);
  EXPECT_EQ(db.QueryInt("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = "
                        "DATABASE() AND table_name = 't'"),
            0);
  // Run by hand, as printed: the next migrate finds it applied.
  for (const std::string& stmt :
       {std::string("CREATE TABLE t (a INT) CHARSET utf8mb4"), sql->substr(sql->find("INSERT"))}) {
    ASSERT_TRUE(conn->ExecuteDirect(stmt.substr(0, stmt.find(";"))).ok()) << stmt;
  }
  absl::StatusOr<MigrationReport> report = Migrate(*conn, one);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_THAT(report->applied, ElementsAre());
  EXPECT_EQ(*PendingSql(*conn, one), "-- nothing to apply: the schema is up to date\n");
}

// The wallet shares the database: golang-migrate's schema_migrations(version, dirty) and
// Flyway's flyway_schema_history are another tool's, left exactly as they were.
TEST(Migrate, LeavesOtherToolsBookkeepingAsItWas) {
  testing::TestDatabase db(/*migrate=*/false);
  std::unique_ptr<SqlConnection> conn = db.Connect();
  db.Exec(
      "CREATE TABLE schema_migrations (version BIGINT NOT NULL PRIMARY KEY, dirty BOOLEAN "
      "NOT NULL) CHARSET utf8mb4");
  db.Exec("INSERT INTO schema_migrations VALUES (20240101120000, 0)");
  db.Exec(
      "CREATE TABLE flyway_schema_history (installed_rank INT NOT NULL PRIMARY KEY, version "
      "VARCHAR(50), description VARCHAR(200) NOT NULL, type VARCHAR(20) NOT NULL, script "
      "VARCHAR(1000) NOT NULL, checksum INT, installed_by VARCHAR(100) NOT NULL, "
      "installed_on TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, execution_time INT NOT "
      "NULL, success BOOLEAN NOT NULL) CHARSET utf8mb4");
  db.Exec(
      "INSERT INTO flyway_schema_history VALUES (1, '1', 'init', 'SQL', 'V1__init.sql', "
      "12345, 'wallet', '2024-01-01 00:00:00', 10, 1)");
  auto snapshot = [&] {
    std::string out;
    for (const char* table : {"schema_migrations", "flyway_schema_history"}) {
      EXPECT_TRUE(conn->Query(absl::StrCat("SHOW CREATE TABLE ", table), {},
                              [&](const SqlRow& row) { out += row.Str(1); })
                      .ok());
      EXPECT_TRUE(conn->Query(absl::StrCat("CHECKSUM TABLE ", table, " EXTENDED"), {},
                              [&](const SqlRow& row) { out += row.Str(1); })
                      .ok());
      out += absl::StrCat(db.QueryInt(absl::StrCat("SELECT COUNT(*) FROM ", table)));
    }
    return out;
  };
  const std::string before = snapshot();
  absl::StatusOr<MigrationReport> report = Migrate(*conn, EmbeddedMigrations());
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->applied.size(), EmbeddedMigrations().size());
  EXPECT_EQ(snapshot(), before);
  EXPECT_EQ(ReadSchemaState(*conn)->version, LatestEmbeddedVersion());
}

// An install of an earlier release kept its rows in its own schema_migrations: they are copied
// once, even by concurrent migrates, and nothing is applied again. The old table stays for the
// pods of the previous release.
TEST(Migrate, CopiesAnEarlierReleasesOwnRowsOnceUnderConcurrentRuns) {
  testing::TestDatabase db;  // migrated: the schema is there
  db.Exec(
      "CREATE TABLE schema_migrations (version INT NOT NULL PRIMARY KEY, name VARCHAR(255) "
      "NOT NULL, checksum VARCHAR(16) NOT NULL, applied_at_ms BIGINT NOT NULL) "
      "CHARSET utf8mb4");
  db.Exec(
      "INSERT INTO schema_migrations SELECT version, name, checksum, applied_at_ms FROM "
      "giftwall_schema_migrations");
  db.Exec("DROP TABLE giftwall_schema_migrations");
  std::vector<std::thread> runners;
  std::atomic<size_t> applied{0};
  for (int i = 0; i < 4; ++i) {
    runners.emplace_back([&] {
      std::unique_ptr<SqlConnection> conn = db.Connect();
      absl::StatusOr<MigrationReport> report = Migrate(*conn, EmbeddedMigrations());
      ASSERT_TRUE(report.ok()) << report.status();
      applied += report->applied.size();
    });
  }
  for (std::thread& t : runners) t.join();
  EXPECT_EQ(applied, 0u) << "nothing applied again";
  const int64_t migrations = static_cast<int64_t>(EmbeddedMigrations().size());
  EXPECT_EQ(db.QueryInt("SELECT COUNT(*) FROM giftwall_schema_migrations"), migrations);
  EXPECT_EQ(db.QueryInt("SELECT COUNT(*) FROM schema_migrations"), migrations) << "kept";
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
