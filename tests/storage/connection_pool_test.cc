#include "server/storage/connection_pool.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/storage/row_set.h"
#include "tests/support/test_database.h"
#include "tests/support/timing.h"

namespace giftwall::storage {
namespace {

using ::testing::HasSubstr;

std::string Variable(SqlConnection& conn, const std::string& expression) {
  std::string value;
  absl::Status s = conn.Query(absl::StrCat("SELECT CAST(", expression, " AS CHAR)"), {},
                              [&](const SqlRow& row) { value = row.Str(0); });
  EXPECT_TRUE(s.ok()) << s;
  return value;
}

TEST(ConnectionPool, SessionsAreSetUpForTheProjection) {
  testing::TestDatabase db;
  PoolOptions options = db.PoolOptions();
  options.session.lock_wait_timeout = absl::Seconds(2);
  options.session.statement_timeout = absl::Seconds(7);
  ConnectionPool pool(options);
  absl::StatusOr<PooledConnection> conn = pool.Acquire();
  ASSERT_TRUE(conn.ok()) << conn.status();
  EXPECT_EQ(Variable(**conn, "@@character_set_client"), "utf8mb4");
  EXPECT_EQ(Variable(**conn, "@@time_zone"), "+00:00");
  EXPECT_THAT(Variable(**conn, "@@sql_mode"), HasSubstr("STRICT_ALL_TABLES"));
  EXPECT_EQ(Variable(**conn, "@@tx_isolation"), "READ-COMMITTED");
  EXPECT_EQ(Variable(**conn, "@@innodb_lock_wait_timeout"), "2");
  EXPECT_EQ(Variable(**conn, "@@max_statement_time"), "7.000000");
  EXPECT_EQ(Variable(**conn, "@@autocommit + 0"), "1");
}

// Both rows paths read the same rows: text that is not ASCII, bytes, integers at their limits;
// a set that the VALUES path reads in two statements (5 rows: 4, then 1), one it pads (3 rows to
// 4) and an empty one (padded to 1).
TEST(ConnectionPool, BothRowsPathsReadTheSameRows) {
  enum Column { kNumber, kWord, kId };
  static constexpr RowColumn kColumns[] = {
      {kNumber, "j_number", "BIGINT"},
      {kWord, "j_word", "VARCHAR(16) CHARACTER SET utf8mb4"},
      {kId, "j_id", kHexId},
  };
  static const RowsSql sql(
      kColumns, "SELECT jt.j_number, jt.j_word, UNHEX(jt.j_id), ? FROM {rows} ORDER BY 1");
  testing::TestDatabase db;
  std::vector<std::string> read[2];
  for (RowsPath path : {RowsPath::kAuto, RowsPath::kJsonTable, RowsPath::kValues}) {
    PoolOptions options = db.PoolOptions(1);
    options.session.rows_path = path;
    ConnectionPool pool(options);
    absl::StatusOr<PooledConnection> conn = pool.Acquire();
    ASSERT_TRUE(conn.ok()) << conn.status();
    // MariaDB 10.6+ has JSON_TABLE: auto takes it.
    EXPECT_EQ((*conn)->rows_path(),
              path == RowsPath::kValues ? RowsPath::kValues : RowsPath::kJsonTable);
    RowSet rows(kColumns);
    rows.Row()
        .Int(kNumber, INT64_MIN)
        .Text(kWord, "玫瑰 \"'\\")
        .Bytes(kId, std::string("\0\xff", 2));
    rows.Row().Int(kNumber, INT64_MAX).Text(kWord, "").Bytes(kId, "E1");
    for (int i = 0; i < 3; ++i) rows.Row().Int(kNumber, i).Text(kWord, "x").Bytes(kId, "e");
    std::vector<std::string>& out = read[path == RowsPath::kValues ? 1 : 0];
    out.clear();
    absl::Status s = (*conn)->Query(sql, {"tail", &rows}, [&](const SqlRow& row) {
      out.push_back(absl::StrCat(row.Int(0), "|", row.Str(1), "|", row.Str(2), "|", row.Str(3)));
    });
    ASSERT_TRUE(s.ok()) << s;
    ASSERT_EQ(out.size(), 5u);
    std::sort(out.begin(), out.end());  // each statement's rows in order, not the parts'
    EXPECT_EQ(out[0], absl::StrCat(INT64_MIN, "|玫瑰 \"'\\|", std::string("\0\xff", 2), "|tail"));
    RowSet three(kColumns);
    for (int i = 0; i < 3; ++i) three.Row().Int(kNumber, i).Text(kWord, "y").Bytes(kId, "f");
    int three_read = 0;
    ASSERT_TRUE((*conn)->Query(sql, {"tail", &three}, [&](const SqlRow&) { ++three_read; }).ok());
    EXPECT_EQ(three_read, 3);
    const RowSet none(kColumns);
    int none_read = 0;
    ASSERT_TRUE((*conn)->Query(sql, {"tail", &none}, [&](const SqlRow&) { ++none_read; }).ok());
    EXPECT_EQ(none_read, 0);
  }
  EXPECT_EQ(read[0], read[1]);
}

// A set wider and longer than one statement's placeholders allow on the VALUES path (3,000 rows
// of 24 columns: 72,000 values) is read in parts that each fit.
TEST(ConnectionPool, TheValuesPathSplitsASetPastAStatementsPlaceholders) {
  static const std::vector<RowColumn> kWide = [] {
    static const std::vector<std::string> names = [] {
      std::vector<std::string> n;
      for (int i = 0; i < 24; ++i) n.push_back(absl::StrCat("j_", i));
      return n;
    }();
    std::vector<RowColumn> columns;
    for (int i = 0; i < 24; ++i) columns.push_back({i, names[i].c_str(), "BIGINT"});
    return columns;
  }();
  static const RowsSql sql(kWide, "SELECT COUNT(*), SUM(jt.j_0 + jt.j_23) FROM {rows}");
  testing::TestDatabase db;
  PoolOptions options = db.PoolOptions(1);
  options.session.rows_path = RowsPath::kValues;
  ConnectionPool pool(options);
  absl::StatusOr<PooledConnection> conn = pool.Acquire();
  ASSERT_TRUE(conn.ok()) << conn.status();
  RowSet rows(kWide);
  for (int r = 0; r < 3000; ++r) {
    rows.Row();
    for (int i = 0; i < 24; ++i) rows.Int(i, r);
  }
  int64_t count = 0, sum = 0;
  absl::Status s = (*conn)->Query(sql, {&rows}, [&](const SqlRow& row) {
    count += row.Int(0);
    sum += row.Int(1);
  });
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(count, 3000);
  EXPECT_EQ(sum, 2 * (2999 * 3000 / 2));
}

TEST(ConnectionPool, ReusesSessions) {
  testing::TestDatabase db;
  ConnectionPool pool(db.PoolOptions(2));
  int64_t first = 0;
  {
    absl::StatusOr<PooledConnection> conn = pool.Acquire();
    ASSERT_TRUE(conn.ok()) << conn.status();
    first = (*conn)->server_id();
  }
  absl::StatusOr<PooledConnection> conn = pool.Acquire();
  ASSERT_TRUE(conn.ok()) << conn.status();
  EXPECT_EQ((*conn)->server_id(), first);
  EXPECT_EQ(pool.Stats().opened_total, 1);
}

TEST(ConnectionPool, IsBoundedAndTimesOutWithUnavailable) {
  testing::TestDatabase db;
  PoolOptions options = db.PoolOptions(2);
  options.acquire_timeout = absl::Milliseconds(200);
  ConnectionPool pool(options);
  absl::StatusOr<PooledConnection> a = pool.Acquire(), b = pool.Acquire();
  ASSERT_TRUE(a.ok() && b.ok());
  const absl::Time start = absl::Now();
  absl::StatusOr<PooledConnection> c = pool.Acquire();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(c.status().message(), HasSubstr("pool exhausted"));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(150));
  // A returned session frees a waiter.
  *a = std::move(*b);
  absl::StatusOr<PooledConnection> d = pool.Acquire();
  EXPECT_TRUE(d.ok()) << d.status();
}

TEST(ConnectionPool, KilledSessionIsDiscardedAndThePoolRecovers) {
  testing::TestDatabase db;
  ConnectionPool pool(db.PoolOptions(2));
  int64_t killed_id = 0;
  {
    absl::StatusOr<PooledConnection> conn = pool.Acquire();
    ASSERT_TRUE(conn.ok()) << conn.status();
    killed_id = (*conn)->server_id();
    db.Exec(absl::StrCat("KILL ", killed_id));
    absl::Status s = (*conn)->Query("SELECT 1", {}, [](const SqlRow&) {});
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
    EXPECT_TRUE((*conn)->broken());
  }
  EXPECT_EQ(pool.Stats().discarded_total, 1);
  absl::StatusOr<PooledConnection> conn = pool.Acquire();
  ASSERT_TRUE(conn.ok()) << conn.status();
  EXPECT_NE((*conn)->server_id(), killed_id);
  EXPECT_TRUE((*conn)->Ping());
}

TEST(ConnectionPool, IdleSessionsAreValidatedBeforeReuse) {
  testing::TestDatabase db;
  PoolOptions options = db.PoolOptions(2);
  options.validate_after_idle = absl::ZeroDuration();
  ConnectionPool pool(options);
  int64_t killed_id = 0;
  {
    absl::StatusOr<PooledConnection> conn = pool.Acquire();
    ASSERT_TRUE(conn.ok()) << conn.status();
    killed_id = (*conn)->server_id();
  }
  db.Exec(absl::StrCat("KILL ", killed_id));
  // The dead idle session is noticed at hand-out, not by the caller's first statement.
  absl::StatusOr<PooledConnection> conn = pool.Acquire();
  ASSERT_TRUE(conn.ok()) << conn.status();
  EXPECT_NE((*conn)->server_id(), killed_id);
  EXPECT_TRUE((*conn)->Query("SELECT 1", {}, [](const SqlRow&) {}).ok());
}

TEST(ConnectionPool, UnreachableDatabaseIsUnavailable) {
  testing::TestDatabase db;
  PoolOptions options = db.PoolOptions();
  options.endpoint.port = 1;  // nothing listens there
  ConnectionPool pool(options);
  absl::StatusOr<PooledConnection> conn = pool.Acquire();
  ASSERT_FALSE(conn.ok());
  EXPECT_EQ(conn.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(conn.status().message(), HasSubstr("cannot connect"));
  EXPECT_EQ(pool.Stats().leased, 0);
}

TEST(ConnectionPool, StatementsAreBoundedInTime) {
  testing::TestDatabase db;
  PoolOptions options = db.PoolOptions();
  options.session.statement_timeout = absl::Milliseconds(500);
  ConnectionPool pool(options);
  absl::StatusOr<PooledConnection> conn = pool.Acquire();
  ASSERT_TRUE(conn.ok()) << conn.status();
  const absl::Time start = absl::Now();
  absl::Status s = (*conn)->Query(
      "SELECT COUNT(*) FROM information_schema.columns a, information_schema.columns b, "
      "information_schema.columns c",
      {}, [](const SqlRow&) {});
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  if (testing::kWallClockBoundsHold) {
    EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  }
  EXPECT_TRUE((*conn)->Ping()) << "a statement timeout leaves the session usable";
}

// A row handler that throws is the caller's bug, not the database's: INTERNAL saying so, the
// session not used again, and the pool fine.
TEST(ConnectionPool, ARowHandlerThatThrowsIsReportedAsSuchNotAsADatabaseError) {
  testing::TestDatabase db;
  ConnectionPool pool(db.PoolOptions());
  for (bool std_exception : {true, false}) {
    absl::StatusOr<PooledConnection> conn = pool.Acquire();
    ASSERT_TRUE(conn.ok()) << conn.status();
    absl::Status s = (*conn)->Query("SELECT 1 UNION ALL SELECT 2", {}, [&](const SqlRow&) {
      if (std_exception) throw std::runtime_error("boom");
      throw 42;
    });
    EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
    EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("a row handler threw"));
    EXPECT_THAT(std::string(s.message()),
                ::testing::HasSubstr(std_exception ? "(boom)" : "not a std::exception"));
    EXPECT_EQ(MysqlErrno(s), 0);
    EXPECT_TRUE((*conn)->broken());
  }
  absl::StatusOr<PooledConnection> conn = pool.Acquire();
  ASSERT_TRUE(conn.ok()) << conn.status();
  EXPECT_TRUE((*conn)->Ping());
}

// An error that is not the database being busy or away keeps its code (INTERNAL) and its errno.
TEST(ConnectionPool, ASchemaErrorIsInternalWithItsErrno) {
  testing::TestDatabase db;
  ConnectionPool pool(db.PoolOptions());
  absl::StatusOr<PooledConnection> conn = pool.Acquire();
  ASSERT_TRUE(conn.ok()) << conn.status();
  absl::Status s = (*conn)->Query("SELECT no_such_column FROM wallet_projection_events", {},
                                  [](const SqlRow&) {});
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
  EXPECT_EQ(MysqlErrno(s), 1054);
  EXPECT_FALSE((*conn)->broken());
}

}  // namespace
}  // namespace giftwall::storage
