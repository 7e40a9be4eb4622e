#include "server/storage/sql_connection.h"

#include <cppconn/exception.h>
#include <cppconn/prepared_statement.h>
#include <cppconn/resultset.h>
#include <cppconn/statement.h>
#include <mysql_connection.h>
#include <mysql_driver.h>

#include <algorithm>
#include <exception>
#include <iterator>
#include <mutex>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "glog/logging.h"
#include "server/common/status_macros.h"

namespace giftwall::storage {
namespace {

// A statement cache larger than this means SQL is being built per call: a bug worth surviving.
// On the VALUES path each statement that reads rows has a text per padded size it meets.
constexpr size_t kMaxPreparedStatements = 256;

int Seconds(absl::Duration d) {
  return static_cast<int>(
      std::max<int64_t>(1, absl::ToInt64Seconds(absl::Ceil(d, absl::Seconds(1)))));
}

sql::mysql::MySQL_Driver* Driver() {
  // get_mysql_driver_instance() is not thread-safe; the magic static calls it exactly once.
  static sql::mysql::MySQL_Driver* const driver = sql::mysql::get_mysql_driver_instance();
  return driver;
}

}  // namespace

void InitMysqlDriver() { Driver(); }

int64_t SqlRow::Int(int column) const { return rs_.getInt64(static_cast<uint32_t>(column + 1)); }

std::string SqlRow::Str(int column) const {
  return rs_.getString(static_cast<uint32_t>(column + 1)).asStdString();
}

bool SqlRow::IsNull(int column) const { return rs_.isNull(static_cast<uint32_t>(column + 1)); }

SqlConnection::SqlConnection(std::unique_ptr<sql::Connection> conn) : conn_(std::move(conn)) {}

SqlConnection::~SqlConnection() {
  // Statements must go before their connection; closing a dead connection may throw.
  prepared_.clear();
  direct_.reset();
  try {
    conn_.reset();
  } catch (const std::exception&) {
  }
}

namespace {

// MariaDB Connector/C under Connector/C++: `sslEnforce` asks for TLS (use_ssl), which it drops
// when the server offers none unless the certificate is verified; `sslVerify` checks the chain
// against sslCA and the host name, together. REQUIRED without verification is made exact by
// CheckTls after the handshake.
void SetTlsOptions(const MysqlTls& tls, sql::ConnectOptionsMap& props) {
  props["sslEnforce"] = tls.mode != SslMode::kDisabled;
  props["sslVerify"] = tls.mode == SslMode::kVerifyIdentity;
  if (!tls.ca_file.empty()) props["sslCA"] = tls.ca_file;
  if (!tls.cert_file.empty()) {
    props["sslCert"] = tls.cert_file;
    props["sslKey"] = tls.key_file;
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<SqlConnection>> SqlConnection::Open(const MysqlEndpoint& endpoint,
                                                                   const SessionOptions& options) {
  sql::ConnectOptionsMap props;
  if (!endpoint.socket.empty()) {
    props["socket"] = endpoint.socket;
    props["hostName"] = std::string("localhost");
  } else {
    props["hostName"] = endpoint.host;
    props["port"] = endpoint.port;
  }
  props["userName"] = endpoint.user;
  props["password"] = endpoint.password;
  props["schema"] = endpoint.database;
  props["OPT_CHARSET_NAME"] = std::string("utf8mb4");
  props["OPT_RECONNECT"] = false;
  props["OPT_CONNECT_TIMEOUT"] = Seconds(options.connect_timeout);
  props["OPT_READ_TIMEOUT"] = Seconds(options.read_timeout);
  props["OPT_WRITE_TIMEOUT"] = Seconds(options.write_timeout);
  SetTlsOptions(endpoint.tls, props);

  std::unique_ptr<SqlConnection> conn;
  try {
    conn.reset(new SqlConnection(std::unique_ptr<sql::Connection>(Driver()->connect(props))));
    conn->direct_.reset(conn->conn_->createStatement());
    conn->endpoint_ = endpoint;
    conn->options_ = options;
  } catch (const sql::SQLException& e) {
    CountMysqlError(e.getErrorCode());
    return absl::UnavailableError(absl::StrFormat("cannot connect to %s: mysql error %d: %s",
                                                  endpoint.Describe(), e.getErrorCode(), e.what()));
  } catch (const std::exception& e) {
    CountMysqlError(0);
    return absl::UnavailableError(
        absl::StrFormat("cannot connect to %s: %s", endpoint.Describe(), e.what()));
  }
  if (absl::Status s = conn->SetUpSession(options); !s.ok()) {
    return absl::UnavailableError(
        absl::StrCat("cannot set up a session on ", endpoint.Describe(), ": ", s.message()));
  }
  if (endpoint.tls.required()) RETURN_IF_ERROR(conn->CheckTls(endpoint));
  return conn;
}

absl::Status SqlConnection::CheckTls(const MysqlEndpoint& endpoint) {
  std::string cipher;
  RETURN_IF_ERROR(Query("SHOW SESSION STATUS LIKE 'Ssl_cipher'", {},
                        [&](const SqlRow& row) { cipher = row.Str(1); }));
  if (!cipher.empty()) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat("refusing a plaintext session on ",
                                             endpoint.Describe(),
                                             ": ssl-mode=", SslModeName(endpoint.tls.mode),
                                             " needs TLS, and the server did not agree to it"));
}

absl::Status SqlConnection::SetUpSession(const SessionOptions& options) {
  std::string version;
  absl::Status s = Query("SELECT VERSION(), CONNECTION_ID()", {}, [&](const SqlRow& row) {
    version = row.Str(0);
    server_id_ = row.Int(1);
  });
  if (!s.ok()) return s;
  is_mariadb_ = absl::StrContains(absl::AsciiStrToLower(version), "mariadb");
  // MariaDB bounds every statement (seconds); MySQL only SELECTs (milliseconds).
  // 0 means no limit, on both servers.
  const std::string statement_limit =
      is_mariadb_ ? absl::StrFormat("max_statement_time = %.3f",
                                    absl::ToDoubleSeconds(options.statement_timeout))
                  : absl::StrFormat("max_execution_time = %d",
                                    absl::ToInt64Milliseconds(options.statement_timeout));
  s = ExecuteDirect(absl::StrFormat(
      "SET SESSION time_zone = '+00:00', "
      "sql_mode = 'STRICT_ALL_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_ZERO_DATE,NO_ZERO_IN_DATE,"
      "NO_ENGINE_SUBSTITUTION', "
      "innodb_lock_wait_timeout = %d, %s",
      Seconds(options.lock_wait_timeout), statement_limit));
  if (!s.ok()) return s;
  // READ COMMITTED: a duplicate claim reads the committed ledger row, and no gap locks.
  RETURN_IF_ERROR(ExecuteDirect("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED"));
  if (options.rows_path != RowsPath::kAuto) {
    rows_path_ = options.rows_path;
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(rows_path_, ProbeRowsPath());
  return absl::OkStatus();
}

absl::StatusOr<RowsPath> SqlConnection::ProbeRowsPath() {
  static constexpr char kProbe[] =
      "SELECT 1 FROM JSON_TABLE('[1]', '$[*]' COLUMNS (x INT PATH '$')) AS t";
  try {
    std::unique_ptr<sql::ResultSet> rows(direct_->executeQuery(kProbe));
    return RowsPath::kJsonTable;
  } catch (const sql::SQLException& e) {
    // A server or proxy that cannot parse it (1064), does not support it (1235; Vitess's
    // VT12001 comes as 1105) or lacks the function (1305). Anything else (a lost session, a
    // timeout) is the session's failure, not an answer.
    constexpr int kNoJsonTable[] = {1064, 1105, 1235, 1305};
    if (std::find(std::begin(kNoJsonTable), std::end(kNoJsonTable), e.getErrorCode()) ==
        std::end(kNoJsonTable)) {
      return FromCurrentException(kProbe);
    }
    // Said once per process, not per session.
    static std::once_flag said;
    std::call_once(said, [&] {
      LOG(WARNING) << "the database has no JSON_TABLE (mysql error " << e.getErrorCode() << ": "
                   << e.what() << "): statements read their rows as VALUES";
    });
    return RowsPath::kValues;
  } catch (...) {
    return FromCurrentException(kProbe);
  }
}

absl::Status SqlConnection::FromCurrentException(absl::string_view sql) {
  try {
    throw;
  } catch (const sql::SQLException& e) {
    const int code = e.getErrorCode();
    if (IsSessionLost(code) || code == 0) broken_ = true;
    if (code == 0) {
      CountMysqlError(0);
      // The connector's own errors (no server error number) leave the session in an
      // unknown state.
      LOG(ERROR) << "mysql connector error: " << e.what() << " in: " << sql;
      return absl::InternalError(
          absl::StrCat("mysql connector error: ", e.what(), " in: ", sql.substr(0, 80)));
    }
    absl::Status error = MysqlError(code, e.getSQLStateCStr(), e.what());
    // Not the database being busy or away, but a bug or a schema that does not match: said
    // once here, with the statement, and passed up as INTERNAL.
    LOG_IF(ERROR, error.code() == absl::StatusCode::kInternal) << error << " in: " << sql;
    return error;
  } catch (const std::exception& e) {
    CountMysqlError(0);
    broken_ = true;
    LOG(ERROR) << "mysql connector error: " << e.what() << " in: " << sql;
    return absl::InternalError(
        absl::StrCat("mysql connector error: ", e.what(), " in: ", sql.substr(0, 80)));
  } catch (...) {
    CountMysqlError(0);
    broken_ = true;
    LOG(ERROR) << "mysql connector error (not a std::exception) in: " << sql;
    return absl::InternalError(
        absl::StrCat("mysql connector error (not a std::exception) in: ", sql.substr(0, 80)));
  }
}

absl::Status SqlConnection::CallerException(absl::string_view sql) {
  std::string what = "an exception that is not a std::exception";
  try {
    throw;
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  LOG(ERROR) << "a row handler threw (" << what << ") reading the rows of: " << sql;
  return absl::InternalError(
      absl::StrCat("a row handler threw (", what, ") reading the rows of: ", sql.substr(0, 80)));
}

absl::StatusOr<sql::PreparedStatement*> SqlConnection::Prepare(absl::string_view sql) {
  if (auto it = prepared_.find(sql); it != prepared_.end()) return it->second.get();
  if (prepared_.size() >= kMaxPreparedStatements) prepared_.clear();
  try {
    std::unique_ptr<sql::PreparedStatement> stmt(
        conn_->prepareStatement(sql::SQLString(std::string(sql))));
    sql::PreparedStatement* raw = stmt.get();
    prepared_.emplace(std::string(sql), std::move(stmt));
    return raw;
  } catch (...) {
    return FromCurrentException(sql);
  }
}

void SqlConnection::Bind(sql::PreparedStatement& stmt, absl::Span<const SqlParam> params,
                         const RowsChunk* chunk) const {
  unsigned int index = 1;
  const auto bind_string = [&](absl::string_view s) {
    stmt.setString(index++, sql::SQLString(s.data(), s.size()));
  };
  for (const SqlParam& param : params) {
    if (const int64_t* i = std::get_if<int64_t>(&param)) {
      stmt.setInt64(index++, *i);
    } else if (const absl::string_view* s = std::get_if<absl::string_view>(&param)) {
      bind_string(*s);
    } else if (const RowSet* rows = std::get<const RowSet*>(param);
               rows_path_ == RowsPath::kJsonTable) {
      bind_string(rows->Json());
    } else {
      CHECK(chunk != nullptr) << "a RowSet bound outside its RowsSql";
      const size_t columns = rows->columns();
      for (const RowSet::Value& value :
           rows->values().subspan(chunk->begin * columns, chunk->rows * columns)) {
        if (const int64_t* n = std::get_if<int64_t>(&value)) {
          stmt.setInt64(index++, *n);
        } else {
          bind_string(std::get<std::string>(value));
        }
      }
      const size_t padding = (chunk->padded - chunk->rows) * columns;
      for (size_t n = 0; n < padding; ++n) stmt.setNull(index++, sql::DataType::VARCHAR);
    }
  }
}

std::vector<RowsChunk> SqlConnection::Chunks(const RowsSql& sql,
                                             absl::Span<const SqlParam> params) const {
  const RowSet* rows = nullptr;
  size_t others = 0;
  size_t sets = 0;
  for (const SqlParam& param : params) {
    const auto* set = std::get_if<const RowSet*>(&param);
    if (set == nullptr) {
      ++others;
      continue;
    }
    CHECK(rows == nullptr || *set == rows) << "one RowsSql reads one set of rows";
    rows = *set;
    ++sets;
  }
  CHECK(rows != nullptr) << "a RowsSql without its RowSet";
  if (rows_path_ == RowsPath::kJsonTable) return {{0, rows->rows(), rows->rows()}};
  // The largest part whose placeholders a statement takes.
  const auto fits = [&](size_t part) {
    return others + sets * part * rows->columns() <= kMaxPlaceholders;
  };
  size_t max_part = 0;
  for (size_t size : kRowsSizes) {
    if (fits(size)) max_part = size;
  }
  if (max_part == 0) return {};
  std::vector<RowsChunk> chunks = RowsChunks(rows->rows(), sql.whole(), max_part);
  if (sql.whole() && !fits(chunks.front().padded)) return {};
  return chunks;
}

absl::StatusOr<int64_t> SqlConnection::Execute(const RowsSql& sql,
                                               absl::Span<const SqlParam> params) {
  const std::vector<RowsChunk> chunks = Chunks(sql, params);
  if (chunks.empty()) return TooManyPlaceholders(params);
  int64_t affected = 0;
  for (const RowsChunk& chunk : chunks) {
    ASSIGN_OR_RETURN(const int64_t n,
                     ExecuteOne(sql.Text(rows_path_, chunk.padded), params, &chunk));
    affected += n;
  }
  return affected;
}

absl::Status SqlConnection::Query(const RowsSql& sql, absl::Span<const SqlParam> params,
                                  absl::FunctionRef<void(const SqlRow&)> on_row) {
  const std::vector<RowsChunk> chunks = Chunks(sql, params);
  if (chunks.empty()) return TooManyPlaceholders(params);
  for (const RowsChunk& chunk : chunks) {
    RETURN_IF_ERROR(QueryOne(sql.Text(rows_path_, chunk.padded), params, &chunk, on_row));
  }
  return absl::OkStatus();
}

absl::Status SqlConnection::TooManyPlaceholders(absl::Span<const SqlParam> params) const {
  for (const SqlParam& param : params) {
    if (const auto* set = std::get_if<const RowSet*>(&param)) {
      return absl::FailedPreconditionError(absl::StrCat(
          (*set)->rows(), " rows of ", (*set)->columns(),
          " columns need more placeholders on the VALUES rows path than a statement takes (",
          kMaxPlaceholders, "), read as a whole: run on a server with JSON_TABLE"));
    }
  }
  return absl::InternalError("no RowSet");
}

absl::StatusOr<int64_t> SqlConnection::Execute(absl::string_view sql,
                                               absl::Span<const SqlParam> params) {
  return ExecuteOne(sql, params, nullptr);
}

absl::Status SqlConnection::Query(absl::string_view sql, absl::Span<const SqlParam> params,
                                  absl::FunctionRef<void(const SqlRow&)> on_row) {
  return QueryOne(sql, params, nullptr, on_row);
}

absl::StatusOr<int64_t> SqlConnection::ExecuteOne(absl::string_view sql,
                                                  absl::Span<const SqlParam> params,
                                                  const RowsChunk* chunk) {
  last_used_ = absl::Now();
  absl::StatusOr<sql::PreparedStatement*> stmt = Prepare(sql);
  if (!stmt.ok()) return stmt.status();
  try {
    Bind(**stmt, params, chunk);
    return static_cast<int64_t>((*stmt)->executeUpdate());
  } catch (...) {
    return FromCurrentException(sql);
  }
}

absl::Status SqlConnection::QueryOne(absl::string_view sql, absl::Span<const SqlParam> params,
                                     const RowsChunk* chunk,
                                     absl::FunctionRef<void(const SqlRow&)> on_row) {
  last_used_ = absl::Now();
  absl::StatusOr<sql::PreparedStatement*> stmt = Prepare(sql);
  if (!stmt.ok()) return stmt.status();
  try {
    Bind(**stmt, params, chunk);
    std::unique_ptr<sql::ResultSet> rs((*stmt)->executeQuery());
    const SqlRow row(*rs);
    while (rs->next()) {
      try {
        on_row(row);
      } catch (const sql::SQLException&) {
        throw;  // the connector's, reading a column
      } catch (...) {
        // The caller's own code failed: a bug to report as such, not as a database error. The
        // result set is left half read, so the session is not used again.
        broken_ = true;
        return CallerException(sql);
      }
    }
    return absl::OkStatus();
  } catch (...) {
    return FromCurrentException(sql);
  }
}

absl::Status SqlConnection::ExecuteDirect(absl::string_view sql) {
  last_used_ = absl::Now();
  try {
    // A statement that returns rows (SELECT ... FOR UPDATE, say) must have them read, or the
    // session's next command is out of sync.
    if (direct_->execute(sql::SQLString(std::string(sql)))) {
      std::unique_ptr<sql::ResultSet> rows(direct_->getResultSet());
    }
    return absl::OkStatus();
  } catch (...) {
    return FromCurrentException(sql);
  }
}

bool SqlConnection::Ping() {
  if (broken_) return false;
  absl::Status s = Query("SELECT 1", {}, [](const SqlRow&) {});
  if (!s.ok()) broken_ = true;
  return s.ok();
}

absl::StatusOr<Transaction> Transaction::Begin(SqlConnection& conn, Isolation isolation) {
  if (isolation != Isolation::kReadCommitted) {
    // Without SESSION, this applies to the next transaction only.
    absl::Status s = conn.ExecuteDirect("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
    if (!s.ok()) return s;
  }
  absl::Status s = conn.ExecuteDirect(isolation == Isolation::kConsistentSnapshot
                                          ? "START TRANSACTION WITH CONSISTENT SNAPSHOT"
                                          : "START TRANSACTION");
  if (!s.ok()) {
    // A pending SET TRANSACTION would otherwise apply to the session's next transaction.
    conn.MarkBroken();
    return s;
  }
  return Transaction(&conn);
}

Transaction::~Transaction() {
  if (conn_ != nullptr) (void)Rollback();
}

absl::Status Transaction::Commit() {
  SqlConnection* conn = std::exchange(conn_, nullptr);
  CHECK(conn != nullptr) << "transaction already finished";
  absl::Status s = conn->ExecuteDirect("COMMIT");
  // Whether a failed COMMIT left a transaction open is unknown: never reuse the session.
  if (!s.ok()) conn->MarkBroken();
  return s;
}

absl::Status Transaction::Rollback() {
  SqlConnection* conn = std::exchange(conn_, nullptr);
  CHECK(conn != nullptr) << "transaction already finished";
  if (conn->broken()) return absl::OkStatus();  // the server rolls back a dead session itself
  absl::Status s = conn->ExecuteDirect("ROLLBACK");
  // A session whose transaction state is unknown must not be reused.
  if (!s.ok()) conn->MarkBroken();
  return s;
}

absl::Status Transaction::SetSavepoint() { return conn_->ExecuteDirect("SAVEPOINT projection"); }

absl::Status Transaction::RollbackToSavepoint() {
  return conn_->ExecuteDirect("ROLLBACK TO SAVEPOINT projection");
}

}  // namespace giftwall::storage
