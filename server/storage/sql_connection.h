// One MySQL/MariaDB session. The only place (with the pool) that touches the connector; its
// exceptions stop here and come out as absl::Status carrying the server's error number and
// its kind (db_error.h).
#ifndef GIFTWALL_SERVER_STORAGE_SQL_CONNECTION_H_
#define GIFTWALL_SERVER_STORAGE_SQL_CONNECTION_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "server/storage/db_error.h"
#include "server/storage/mysql_url.h"
#include "server/storage/row_set.h"

namespace sql {
class Connection;
class PreparedStatement;
class ResultSet;
class Statement;
}  // namespace sql

namespace giftwall::storage {

// Loads the connector's driver. Its first use is not thread-safe: main calls this before any
// thread starts (later calls are no-ops).
void InitMysqlDriver();

// The settings every session starts with.
struct SessionOptions {
  absl::Duration connect_timeout = absl::Seconds(3);
  absl::Duration read_timeout = absl::Seconds(15);
  absl::Duration write_timeout = absl::Seconds(15);
  // Longest a statement may run before the server stops it; zero: no limit (migrations).
  absl::Duration statement_timeout = absl::Seconds(10);
  // How long a statement waits for a row lock before 1205.
  absl::Duration lock_wait_timeout = absl::Seconds(1);
  // How statements read their sets of rows (row_set.h); kAuto asks the server.
  RowsPath rows_path = RowsPath::kAuto;
};

// A bound parameter of a prepared statement. A RowSet binds where its RowsSql names kRowsTable:
// as one JSON value, or as one value per column of each row and NULLs for the padding.
using SqlParam = std::variant<int64_t, absl::string_view, const RowSet*>;

// The current row of a result.
class SqlRow {
 public:
  explicit SqlRow(const sql::ResultSet& rs) : rs_(rs) {}
  int64_t Int(int column) const;  // 0-based
  std::string Str(int column) const;
  bool IsNull(int column) const;

 private:
  const sql::ResultSet& rs_;
};

class SqlConnection {
 public:
  // Connects and sets up the session: utf8mb4, UTC, strict SQL mode, READ COMMITTED, the lock
  // wait and statement bounds. Auto-reconnect stays off: a silent reconnect would drop an open
  // transaction. UNAVAILABLE if the server cannot be reached.
  static absl::StatusOr<std::unique_ptr<SqlConnection>> Open(const MysqlEndpoint& endpoint,
                                                             const SessionOptions& options);
  ~SqlConnection();
  SqlConnection(const SqlConnection&) = delete;
  SqlConnection& operator=(const SqlConnection&) = delete;

  // Runs a prepared statement (prepared once per connection, then cached); returns the number
  // of affected rows (0/1/2 for an upsert: no CLIENT_FOUND_ROWS).
  absl::StatusOr<int64_t> Execute(absl::string_view sql, absl::Span<const SqlParam> params = {});
  // Runs a prepared query and calls `on_row` for every row.
  absl::Status Query(absl::string_view sql, absl::Span<const SqlParam> params,
                     absl::FunctionRef<void(const SqlRow&)> on_row);
  // The same for a statement that reads a RowSet (one of `params`, or the same one more than
  // once), in the text for the session's rows path and the set's size; on the VALUES path
  // perhaps as several statements, each with a part of the rows (RowsSql), whose affected rows
  // add up. FAILED_PRECONDITION if a part would need more placeholders than a statement takes.
  absl::StatusOr<int64_t> Execute(const RowsSql& sql, absl::Span<const SqlParam> params);
  absl::Status Query(const RowsSql& sql, absl::Span<const SqlParam> params,
                     absl::FunctionRef<void(const SqlRow&)> on_row);
  // Runs a statement that cannot be prepared or needs no parameters (transaction control, DDL).
  absl::Status ExecuteDirect(absl::string_view sql);

  // A cheap round trip; false (and broken) if the session is gone.
  bool Ping();

  // True once the session saw a client-side error (lost, gone away, killed): it must be
  // discarded, never reused.
  bool broken() const { return broken_; }
  // For a session left in an unknown state, e.g. a ROLLBACK that failed.
  void MarkBroken() { broken_ = true; }
  // What the session was opened with: another session like it opens with these.
  const MysqlEndpoint& endpoint() const { return endpoint_; }
  const SessionOptions& session_options() const { return options_; }
  // The server's id for this session (what KILL takes).
  int64_t server_id() const { return server_id_; }
  bool is_mariadb() const { return is_mariadb_; }
  // kJsonTable or kValues: how this session's statements read their rows.
  RowsPath rows_path() const { return rows_path_; }
  absl::Time last_used() const { return last_used_; }

 private:
  explicit SqlConnection(std::unique_ptr<sql::Connection> conn);
  absl::Status SetUpSession(const SessionOptions& options);
  // UNAVAILABLE unless the session runs over TLS (the endpoint's ssl-mode requires it).
  absl::Status CheckTls(const MysqlEndpoint& endpoint);
  // kJsonTable if the server runs JSON_TABLE, else kValues; UNAVAILABLE if the session is lost.
  absl::StatusOr<RowsPath> ProbeRowsPath();
  absl::StatusOr<sql::PreparedStatement*> Prepare(absl::string_view sql);
  // Binds `params`; a RowSet's rows of `chunk` on the VALUES path.
  void Bind(sql::PreparedStatement& stmt, absl::Span<const SqlParam> params,
            const RowsChunk* chunk) const;
  absl::StatusOr<int64_t> ExecuteOne(absl::string_view sql, absl::Span<const SqlParam> params,
                                     const RowsChunk* chunk);
  absl::Status QueryOne(absl::string_view sql, absl::Span<const SqlParam> params,
                        const RowsChunk* chunk, absl::FunctionRef<void(const SqlRow&)> on_row);
  // The statements `sql` runs as for its RowSet parameter (one set, bound once or more): one on
  // the JSON_TABLE path; none if a part would take more placeholders than a statement takes.
  std::vector<RowsChunk> Chunks(const RowsSql& sql, absl::Span<const SqlParam> params) const;
  absl::Status TooManyPlaceholders(absl::Span<const SqlParam> params) const;
  // Converts the exception in flight into a status, marking the session broken if need be.
  absl::Status FromCurrentException(absl::string_view sql);
  // Inside a catch block: an exception thrown by a caller's row handler, not by the connector.
  absl::Status CallerException(absl::string_view sql);

  std::unique_ptr<sql::Connection> conn_;
  std::unique_ptr<sql::Statement> direct_;
  absl::flat_hash_map<std::string, std::unique_ptr<sql::PreparedStatement>> prepared_;
  MysqlEndpoint endpoint_;
  SessionOptions options_;
  bool broken_ = false;
  bool is_mariadb_ = true;
  RowsPath rows_path_ = RowsPath::kJsonTable;
  int64_t server_id_ = 0;
  absl::Time last_used_ = absl::Now();
};

// An open transaction on a session: rolls back unless committed.
class Transaction {
 public:
  enum class Isolation {
    kReadCommitted,       // the session's default
    kRepeatableRead,      // gap locks on locking reads; a snapshot from the first plain read
    kConsistentSnapshot,  // repeatable read with the snapshot taken at once
  };
  static absl::StatusOr<Transaction> Begin(SqlConnection& conn,
                                           Isolation isolation = Isolation::kReadCommitted);
  Transaction(Transaction&& other) noexcept : conn_(std::exchange(other.conn_, nullptr)) {}
  Transaction& operator=(Transaction&&) = delete;
  Transaction(const Transaction&) = delete;
  ~Transaction();

  absl::Status Commit();
  absl::Status Rollback();
  // One savepoint at a time: setting it again moves it.
  absl::Status SetSavepoint();
  absl::Status RollbackToSavepoint();

  SqlConnection& conn() const { return *conn_; }

 private:
  explicit Transaction(SqlConnection* conn) : conn_(conn) {}
  SqlConnection* conn_;  // null once finished
};

}  // namespace giftwall::storage

#endif  // GIFTWALL_SERVER_STORAGE_SQL_CONNECTION_H_
