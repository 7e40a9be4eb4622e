#include "server/storage/migrator.h"

#include <algorithm>
#include <functional>
#include <map>

#include "absl/functional/function_ref.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "glog/logging.h"
#include "server/common/status_macros.h"
#include "server/storage/db_error.h"
#include "server/storage/lease_store.h"
#include "server/storage/sql_script.h"

namespace giftwall::storage {
namespace {

// The service's bookkeeping, under a name of its own: the database is shared with the wallet,
// whose tools (golang-migrate, Flyway) keep tables called schema_migrations and
// flyway_schema_history there. `dirty`: the migration was started and has not finished.
constexpr absl::string_view kTable = "giftwall_schema_migrations";
constexpr absl::string_view kCreateMigrationsTable = R"sql(
CREATE TABLE IF NOT EXISTS giftwall_schema_migrations (
  version INT NOT NULL,
  name VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  checksum VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  applied_at_ms BIGINT NOT NULL,
  dirty TINYINT NOT NULL DEFAULT 0,
  PRIMARY KEY (version)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin)sql";

constexpr absl::string_view kSelectApplied =
    "SELECT version, name, checksum, dirty FROM giftwall_schema_migrations";

// Recorded dirty before the first statement runs, clean after the last.
constexpr absl::string_view kRecordStarted = R"sql(
INSERT INTO giftwall_schema_migrations (version, name, checksum, applied_at_ms, dirty)
VALUES (?, ?, ?, CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED), 1))sql";
constexpr absl::string_view kRecordFinished =
    "UPDATE giftwall_schema_migrations SET dirty = 0 WHERE version = ?";

// Releases before this one kept their rows in `schema_migrations`. That name is taken only if
// its columns are exactly the service's own: golang-migrate's (version, dirty) is another
// tool's table, never read or written.
constexpr absl::string_view kLegacyColumns = R"sql(
SELECT GROUP_CONCAT(COLUMN_NAME ORDER BY COLUMN_NAME SEPARATOR ',')
FROM information_schema.COLUMNS
WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'schema_migrations')sql";
constexpr absl::string_view kLegacyOwnColumns = "applied_at_ms,checksum,name,version";
constexpr absl::string_view kCopyLegacy = R"sql(
INSERT IGNORE INTO giftwall_schema_migrations (version, name, checksum, applied_at_ms)
SELECT version, name, checksum, applied_at_ms FROM schema_migrations)sql";

// The migration's lease (DESIGN §2.20): one run at a time on every node of a cluster; another
// waits for it. The lease table's own migration runs first, whatever the list, before the lease.
constexpr absl::string_view kLeaseName = "migrate";
constexpr absl::string_view kLeasesMigration = "0011_leases.sql";
constexpr absl::Duration kLeaseDuration = absl::Seconds(30);
constexpr absl::Duration kLeaseWait = absl::Seconds(120);

// Errors that mean "this statement already took effect": a run that died half-way through a
// migration re-runs it, and DDL is not transactional.
bool AlreadyApplied(int code) {
  return code == 1050 /* table exists */ || code == 1060 /* duplicate column */ ||
         code == 1061 /* duplicate key name */ || code == 1091 /* can't drop: absent */ ||
         code == 1826 /* duplicate foreign key */ || code == 3822 /* duplicate check */;
}

std::string Checksum(absl::string_view sql) {
  uint64_t hash = 14695981039346656037ull;  // FNV-1a 64
  for (unsigned char c : sql) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return absl::StrFormat("%016x", hash);
}

absl::StatusOr<int> VersionOf(const Migration& m) {
  const size_t digits =
      std::find_if(m.name.begin(), m.name.end(), [](char c) { return !absl::ascii_isdigit(c); }) -
      m.name.begin();
  int version = 0;
  if (digits == 0 || !absl::SimpleAtoi(m.name.substr(0, digits), &version) || version <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("migration file \"", m.name, "\" must start with its version, e.g. 0001_"));
  }
  return version;
}

struct Applied {
  std::string name;
  std::string checksum;
  bool dirty = false;
};

absl::StatusOr<std::map<int, Applied>> ReadApplied(SqlConnection& conn) {
  std::map<int, Applied> applied;
  absl::Status s = conn.Query(kSelectApplied, {}, [&](const SqlRow& row) {
    applied[static_cast<int>(row.Int(0))] = Applied{row.Str(1), row.Str(2), row.Int(3) != 0};
  });
  if (!s.ok()) return s;
  return applied;
}

// The rows of a legacy `schema_migrations` of the service's own, copied once (INSERT IGNORE:
// under the lock, and a second run copies nothing). The table itself stays for a release, so
// that pods of the previous version keep their readiness during a rolling update.
absl::Status CopyLegacyRows(SqlConnection& conn) {
  std::string columns;
  RETURN_IF_ERROR(conn.Query(kLegacyColumns, {}, [&](const SqlRow& row) { columns = row.Str(0); }));
  if (columns.empty()) return absl::OkStatus();
  if (columns != kLegacyOwnColumns) {
    LOG(INFO) << "schema_migrations (" << columns
              << ") is another tool's bookkeeping: left as it is";
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(const int64_t copied, conn.Execute(kCopyLegacy));
  if (copied > 0) {
    LOG(INFO) << "copied " << copied << " row(s) of the legacy schema_migrations to " << kTable;
  }
  return absl::OkStatus();
}

std::string DirtyMessage(int version, absl::string_view name) {
  return absl::StrFormat(
      "migration %s stopped part way (recorded dirty in %s): finish it by hand, then run "
      "`giftwall-server migrate --clear_dirty=%d` (docs/OPERATIONS.md)",
      name, kTable, version);
}

// What recording `m` as applied by hand takes (migrate --print).
std::string RecordAppliedSql(const Migration& m, int version) {
  return absl::StrFormat(
      "INSERT INTO giftwall_schema_migrations (version, name, checksum, applied_at_ms, dirty) "
      "VALUES (%d, '%s', '%s', CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED), 0)",
      version, m.name, Checksum(m.sql));
}

// Runs `write` in a transaction that checks the migration's lease first; again, a few times, if
// it meets contention (on a cluster, the keeper's renewal through another node is one).
absl::Status Fenced(SqlConnection& conn, const Lease& lease,
                    absl::FunctionRef<absl::Status()> write) {
  constexpr int kAttempts = 5;
  for (int attempt = 1;; ++attempt) {
    absl::Status s = [&]() -> absl::Status {
      ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(conn));
      RETURN_IF_ERROR(LeaseStatements(conn).Fence(lease));
      RETURN_IF_ERROR(write());
      return tx.Commit();
    }();
    if (s.ok() || !IsContention(s) || conn.broken() || attempt == kAttempts) return s;
    absl::SleepFor(absl::Milliseconds(20 * attempt));
  }
}

absl::Status Apply(SqlConnection& conn, const Migration& m, int version, const Lease& lease) {
  RETURN_IF_ERROR(Fenced(conn, lease, [&] {
    return conn.Execute(kRecordStarted, {int64_t{version}, m.name, Checksum(m.sql)}).status();
  }));
  for (const std::string& stmt : SplitSqlStatements(m.sql)) {
    // DDL commits on its own: the lease is checked just before each statement. On a cluster the
    // check's write can meet another node's bid for the lease (1213 at commit): tried again.
    RETURN_IF_ERROR(Fenced(conn, lease, [] { return absl::OkStatus(); }));
    absl::Status s = conn.ExecuteDirect(stmt);
    if (!s.ok() && AlreadyApplied(MysqlErrno(s))) {
      LOG(WARNING) << "migration " << m.name << ": statement already in effect (" << s.message()
                   << "); an earlier run stopped part way";
      continue;
    }
    if (!s.ok()) return Annotate(s, absl::StrCat("migration ", m.name));
  }
  return Fenced(conn, lease,
                [&] { return conn.Execute(kRecordFinished, {int64_t{version}}).status(); });
}

const Migration& LeasesMigration() {
  const std::vector<Migration>& all = EmbeddedMigrations();
  auto it = std::find_if(all.begin(), all.end(),
                         [](const Migration& m) { return m.name == kLeasesMigration; });
  CHECK(it != all.end()) << "the embedded migrations lack " << kLeasesMigration;
  return *it;
}

}  // namespace

int LatestEmbeddedVersion() {
  int latest = 0;
  for (const Migration& m : EmbeddedMigrations()) {
    absl::StatusOr<int> v = VersionOf(m);
    CHECK(v.ok()) << v.status();
    latest = std::max(latest, *v);
  }
  return latest;
}

absl::StatusOr<SchemaState> ReadSchemaState(SqlConnection& conn) {
  absl::StatusOr<std::map<int, Applied>> applied = ReadApplied(conn);
  if (!applied.ok()) {
    if (MysqlErrno(applied.status()) != 1146 /* no such table */) return applied.status();
    return absl::FailedPreconditionError(
        absl::StrCat("no ", kTable,
                     " table (this release's bookkeeping; schema_migrations was an earlier "
                     "release's, and is not read): run `giftwall-server migrate`"));
  }
  SchemaState state;
  for (const auto& [version, a] : *applied) {
    if (a.dirty && state.dirty.empty()) state.dirty = DirtyMessage(version, a.name);
    state.version = std::max(state.version, version);
  }
  return state;
}

namespace {

// The bookkeeping table, there, with the legacy rows copied; what it records.
absl::StatusOr<std::map<int, Applied>> Bookkeeping(SqlConnection& conn) {
  RETURN_IF_ERROR(conn.ExecuteDirect(kCreateMigrationsTable));
  RETURN_IF_ERROR(CopyLegacyRows(conn));
  return ReadApplied(conn);
}

// Runs `body` under the migration's lease, with the bookkeeping ready.
template <typename T>
absl::StatusOr<T> UnderLease(
    SqlConnection& conn,
    const std::function<absl::StatusOr<T>(std::map<int, Applied>&, const Lease&)>& body) {
  for (const std::string& stmt : SplitSqlStatements(LeasesMigration().sql)) {
    RETURN_IF_ERROR(conn.ExecuteDirect(stmt));
  }
  absl::StatusOr<std::unique_ptr<LeaseKeeper>> lease =
      LeaseKeeper::Take(conn.endpoint(), conn.session_options(), kLeaseName,
                        NewLeaseHolder("migrate"), kLeaseDuration, kLeaseWait);
  if (!lease.ok()) {
    if (lease.status().code() != absl::StatusCode::kFailedPrecondition) return lease.status();
    return absl::UnavailableError(absl::StrCat("another migration ran for over ",
                                               absl::FormatDuration(kLeaseWait), ": ",
                                               lease.status().message()));
  }
  using AppliedMap = std::map<int, Applied>;
  ASSIGN_OR_RETURN(AppliedMap applied, Bookkeeping(conn));
  return body(applied, (*lease)->lease());
}

// The migrations by version, each checked against what was recorded of it; refuses to go on
// over a dirty one.
absl::StatusOr<std::map<int, const Migration*>> Plan(const std::vector<Migration>& migrations,
                                                     const std::map<int, Applied>& applied) {
  for (const auto& [version, a] : applied) {
    if (a.dirty) return absl::FailedPreconditionError(DirtyMessage(version, a.name));
  }
  std::map<int, const Migration*> ordered;
  for (const Migration& m : migrations) {
    ASSIGN_OR_RETURN(const int version, VersionOf(m));
    if (!ordered.emplace(version, &m).second) {
      return absl::InvalidArgumentError(absl::StrFormat("two migrations have version %d", version));
    }
    if (auto it = applied.find(version);
        it != applied.end() && it->second.checksum != Checksum(m.sql)) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "migration %s was changed after it was applied (recorded as %s); add a new "
          "migration instead of editing an applied one",
          m.name, it->second.name));
    }
  }
  return ordered;
}

}  // namespace

absl::StatusOr<MigrationReport> Migrate(SqlConnection& conn,
                                        const std::vector<Migration>& migrations) {
  return UnderLease<MigrationReport>(
      conn,
      [&](std::map<int, Applied>& applied, const Lease& lease) -> absl::StatusOr<MigrationReport> {
        ASSIGN_OR_RETURN(const auto ordered, Plan(migrations, applied));
        MigrationReport report;
        for (const auto& [version, m] : ordered) {
          if (applied.count(version) > 0) continue;
          LOG(INFO) << "applying migration " << m->name;
          RETURN_IF_ERROR(Apply(conn, *m, version, lease));
          report.applied.push_back(m->name);
          applied[version] = Applied{m->name, Checksum(m->sql), false};
        }
        report.schema_version = applied.empty() ? 0 : applied.rbegin()->first;
        return report;
      });
}

absl::StatusOr<std::string> PendingSql(SqlConnection& conn,
                                       const std::vector<Migration>& migrations) {
  // Applies nothing, so it takes no lease (it writes only the bookkeeping, as before).
  using AppliedMap = std::map<int, Applied>;
  ASSIGN_OR_RETURN(const AppliedMap applied, Bookkeeping(conn));
  ASSIGN_OR_RETURN(const auto ordered, Plan(migrations, applied));
  std::string out;
  for (const auto& [version, m] : ordered) {
    if (applied.count(version) > 0) continue;
    absl::StrAppend(&out, "-- migration ", m->name, "\n");
    for (const std::string& stmt : SplitSqlStatements(m->sql)) {
      absl::StrAppend(&out, stmt, ";\n");
    }
    absl::StrAppend(&out, "-- then record it as applied:\n", RecordAppliedSql(*m, version),
                    ";\n\n");
  }
  if (out.empty()) out = "-- nothing to apply: the schema is up to date\n";
  return out;
}

absl::Status ClearDirty(SqlConnection& conn, int version) {
  return UnderLease<bool>(
             conn,
             [&](std::map<int, Applied>& applied, const Lease& lease) -> absl::StatusOr<bool> {
               auto it = applied.find(version);
               if (it == applied.end() || !it->second.dirty) {
                 return absl::FailedPreconditionError(absl::StrFormat(
                     "migration version %d is not recorded dirty in %s", version, kTable));
               }
               RETURN_IF_ERROR(Fenced(conn, lease, [&] {
                 return conn.Execute(kRecordFinished, {int64_t{version}}).status();
               }));
               LOG(INFO) << "migration " << it->second.name
                         << " marked finished (cleared dirty) by the operator";
               return true;
             })
      .status();
}

}  // namespace giftwall::storage
