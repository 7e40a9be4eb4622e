#include "tests/support/test_database.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "server/storage/migrator.h"

namespace giftwall::testing {
namespace {

storage::SessionOptions TestSession() {
  storage::SessionOptions session;
  session.lock_wait_timeout = absl::Seconds(5);
  session.rows_path = TestRowsPath();
  return session;
}

}  // namespace

storage::RowsPath TestRowsPath() {
  const char* text = std::getenv("GIFTWALL_TEST_SQL_ROWS");
  storage::RowsPath path = storage::RowsPath::kAuto;
  if (text != nullptr && *text != '\0' && !storage::ParseRowsPath(text, &path)) {
    std::fprintf(stderr, "GIFTWALL_TEST_SQL_ROWS: \"%s\" is not auto, json_table or values\n",
                 text);
    std::abort();
  }
  return path;
}

TestDatabase::TestDatabase(bool migrate) {
  const char* url = std::getenv("GIFTWALL_TEST_MYSQL_URL");
  if (url == nullptr || *url == '\0') {
    std::fprintf(stderr,
                 "GIFTWALL_TEST_MYSQL_URL is not set: run the tests with scripts/test, which "
                 "starts a throwaway MariaDB and sets it\n");
    std::abort();
  }
  absl::StatusOr<storage::MysqlEndpoint> server = storage::ParseMysqlUrl(url);
  if (!server.ok()) {
    std::fprintf(stderr, "GIFTWALL_TEST_MYSQL_URL: %s\n", server.status().ToString().c_str());
    std::abort();
  }
  server_ = *server;
  static std::atomic<int> counter{0};
  endpoint_ = server_;
  endpoint_.database = absl::StrFormat("gw_test_%d_%d_%d", getpid(), counter++,
                                       absl::ToUnixMicros(absl::Now()) % 1000000);
  storage::InitMysqlDriver();

  // The server URL names an existing database (usually "mysql") to connect to first.
  absl::StatusOr<std::unique_ptr<storage::SqlConnection>> admin =
      storage::SqlConnection::Open(server_, TestSession());
  if (!admin.ok()) {
    std::fprintf(stderr, "cannot reach the test database: %s\n", admin.status().ToString().c_str());
    std::abort();
  }
  absl::Status created =
      (*admin)->ExecuteDirect(absl::StrCat("CREATE DATABASE `", endpoint_.database, "`"));
  if (!created.ok()) {
    std::fprintf(stderr, "CREATE DATABASE: %s\n", created.ToString().c_str());
    std::abort();
  }
  conn_ = Connect();
  if (!migrate) return;
  absl::StatusOr<storage::MigrationReport> migrated =
      storage::Migrate(*conn_, storage::EmbeddedMigrations());
  if (!migrated.ok()) {
    std::fprintf(stderr, "migrate: %s\n", migrated.status().ToString().c_str());
    std::abort();
  }
}

TestDatabase::~TestDatabase() {
  conn_.reset();
  absl::StatusOr<std::unique_ptr<storage::SqlConnection>> admin =
      storage::SqlConnection::Open(server_, TestSession());
  if (admin.ok()) {
    (void)(*admin)->ExecuteDirect(
        absl::StrCat("DROP DATABASE IF EXISTS `", endpoint_.database, "`"));
  }
}

std::string TestDatabase::url() const {
  return absl::StrCat("mysql://", endpoint_.user,
                      endpoint_.password.empty() ? "" : absl::StrCat(":", endpoint_.password), "@",
                      endpoint_.host, ":", endpoint_.port, "/", endpoint_.database);
}

storage::PoolOptions TestDatabase::PoolOptions(int size) const {
  storage::PoolOptions options;
  options.endpoint = endpoint_;
  options.max_size = size;
  options.acquire_timeout = absl::Seconds(10);
  return options;
}

std::unique_ptr<storage::SqlConnection> TestDatabase::Connect() const {
  absl::StatusOr<std::unique_ptr<storage::SqlConnection>> conn =
      storage::SqlConnection::Open(endpoint_, TestSession());
  if (!conn.ok()) {
    ADD_FAILURE() << conn.status();
    return nullptr;
  }
  return *std::move(conn);
}

void TestDatabase::Exec(const std::string& sql) {
  absl::Status s = conn_->ExecuteDirect(sql);
  ASSERT_TRUE(s.ok()) << s << "\n in: " << sql;
}

int64_t TestDatabase::QueryInt(const std::string& sql) {
  int64_t value = 0;
  bool seen = false;
  absl::Status s = conn_->Query(sql, {}, [&](const storage::SqlRow& row) {
    if (!seen) value = row.IsNull(0) ? 0 : row.Int(0);
    seen = true;
  });
  EXPECT_TRUE(s.ok()) << s << "\n in: " << sql;
  return value;
}

std::string TestDatabase::QueryString(const std::string& sql) {
  std::string value;
  bool seen = false;
  absl::Status s = conn_->Query(sql, {}, [&](const storage::SqlRow& row) {
    if (!seen) value = row.Str(0);
    seen = true;
  });
  EXPECT_TRUE(s.ok()) << s << "\n in: " << sql;
  return value;
}

void TestDatabase::InsertOutbox(const std::string& app_code, const std::string& event_id,
                                const std::string& event_type, const std::string& payload,
                                int64_t created_at_ms) {
  testing::InsertOutbox(*conn_, app_code, event_id, event_type, payload, created_at_ms);
}

void InsertOutbox(storage::SqlConnection& conn, const std::string& app_code,
                  const std::string& event_id, const std::string& event_type,
                  const std::string& payload, int64_t created_at_ms) {
  absl::StatusOr<int64_t> n = conn.Execute(
      "INSERT INTO wallet_outbox (app_code, event_id, event_type, transaction_id, command_id, "
      "payload, created_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?)",
      {app_code, event_id, event_type, absl::StrCat("tx-", event_id),
       absl::StrCat("cmd-", event_id), payload, created_at_ms});
  ASSERT_TRUE(n.ok()) << n.status();
}

std::string GiftPayloadJson(int64_t target_user_id, const std::string& gift_id, int64_t count,
                            int64_t sender_user_id, int64_t coin_amount) {
  return absl::StrFormat(
      R"({"target_user_id":%d,"gift_id":"%s","gift_count":%d,"sender_user_id":%d,)"
      R"("coin_amount":%d})",
      target_user_id, gift_id, count, sender_user_id, coin_amount);
}

}  // namespace giftwall::testing
