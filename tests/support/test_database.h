// A fresh, migrated database for one test, on the MariaDB that scripts/test started.
#ifndef GIFTWALL_TESTS_SUPPORT_TEST_DATABASE_H_
#define GIFTWALL_TESTS_SUPPORT_TEST_DATABASE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "server/storage/connection_pool.h"
#include "server/storage/mysql_url.h"
#include "server/storage/sql_connection.h"

namespace giftwall::testing {

class TestDatabase {
 public:
  // Creates a uniquely named database on the server named by GIFTWALL_TEST_MYSQL_URL and
  // migrates it (unless told not to). Aborts the test binary with a clear message if the
  // variable is missing.
  explicit TestDatabase(bool migrate = true);
  // Drops the database.
  ~TestDatabase();
  TestDatabase(const TestDatabase&) = delete;
  TestDatabase& operator=(const TestDatabase&) = delete;

  const storage::MysqlEndpoint& endpoint() const { return endpoint_; }
  // mysql://... naming this database, for a server process.
  std::string url() const;
  storage::PoolOptions PoolOptions(int size = 8) const;
  std::unique_ptr<storage::SqlConnection> Connect() const;
  // Replaces the test's own session, e.g. after the server restarted.
  void Reconnect() { conn_ = Connect(); }

  // Runs a statement on the test's own session; fails the test on error.
  void Exec(const std::string& sql);
  // The first column of the first row as an integer (0 if there is no row).
  int64_t QueryInt(const std::string& sql);
  std::string QueryString(const std::string& sql);

  // Writes an outbox row the way the wallet would, on the test's own session (not thread-safe:
  // threads use the free function with a session of their own).
  void InsertOutbox(const std::string& app_code, const std::string& event_id,
                    const std::string& event_type, const std::string& payload,
                    int64_t created_at_ms);

 private:
  storage::MysqlEndpoint server_;
  storage::MysqlEndpoint endpoint_;
  std::unique_ptr<storage::SqlConnection> conn_;
};

// How the tests' sessions and servers read their rows (--sql_rows): GIFTWALL_TEST_SQL_ROWS, by
// default auto. ctest runs the suites that write and read walls once more with it at values.
storage::RowsPath TestRowsPath();

// Writes an outbox row the way the wallet would.
void InsertOutbox(storage::SqlConnection& conn, const std::string& app_code,
                  const std::string& event_id, const std::string& event_type,
                  const std::string& payload, int64_t created_at_ms);

// A payload as the wallet writes it.
std::string GiftPayloadJson(int64_t target_user_id, const std::string& gift_id, int64_t count,
                            int64_t sender_user_id = 0, int64_t coin_amount = 0);

}  // namespace giftwall::testing

#endif  // GIFTWALL_TESTS_SUPPORT_TEST_DATABASE_H_
