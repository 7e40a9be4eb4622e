#include "server/storage/migrator.h"

#include <algorithm>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "glog/logging.h"
#include "server/common/status_macros.h"
#include "server/storage/sql_script.h"

namespace giftwall::storage {
namespace {

constexpr absl::string_view kCreateMigrationsTable = R"sql(
CREATE TABLE IF NOT EXISTS schema_migrations (
  version INT NOT NULL,
  name VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  checksum VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  applied_at_ms BIGINT NOT NULL,
  PRIMARY KEY (version)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin)sql";

constexpr absl::string_view kSelectApplied =
    "SELECT version, name, checksum FROM schema_migrations";

constexpr absl::string_view kRecordApplied = R"sql(
INSERT INTO schema_migrations (version, name, checksum, applied_at_ms)
VALUES (?, ?, ?, CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)))sql";

// The lock is server-wide: name it after the database so that databases migrate independently.
constexpr absl::string_view kGetLock =
    "SELECT COALESCE(GET_LOCK(CONCAT('giftwall.migrate.', SHA1(DATABASE())), ?), 0)";
constexpr absl::string_view kReleaseLock =
    "SELECT RELEASE_LOCK(CONCAT('giftwall.migrate.', SHA1(DATABASE())))";
constexpr int64_t kLockWaitSeconds = 120;

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
};

absl::StatusOr<std::map<int, Applied>> ReadApplied(SqlConnection& conn) {
  std::map<int, Applied> applied;
  absl::Status s = conn.Query(kSelectApplied, {}, [&](const SqlRow& row) {
    applied[static_cast<int>(row.Int(0))] = Applied{row.Str(1), row.Str(2)};
  });
  if (!s.ok()) return s;
  return applied;
}

absl::Status Apply(SqlConnection& conn, const Migration& m, int version) {
  for (const std::string& stmt : SplitSqlStatements(m.sql)) {
    absl::Status s = conn.ExecuteDirect(stmt);
    if (!s.ok() && AlreadyApplied(MysqlErrno(s))) {
      LOG(WARNING) << "migration " << m.name << ": statement already in effect (" << s.message()
                   << "); an earlier run stopped part way";
      continue;
    }
    if (!s.ok()) return Annotate(s, absl::StrCat("migration ", m.name));
  }
  absl::StatusOr<int64_t> recorded =
      conn.Execute(kRecordApplied, {int64_t{version}, m.name, Checksum(m.sql)});
  return recorded.status();
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

absl::StatusOr<int> SchemaVersion(SqlConnection& conn) {
  absl::StatusOr<std::map<int, Applied>> applied = ReadApplied(conn);
  if (!applied.ok()) {
    if (MysqlErrno(applied.status()) == 1146 /* no such table */) return 0;
    return applied.status();
  }
  return applied->empty() ? 0 : applied->rbegin()->first;
}

absl::StatusOr<MigrationReport> Migrate(SqlConnection& conn,
                                        const std::vector<Migration>& migrations) {
  int64_t locked = 0;
  absl::Status s =
      conn.Query(kGetLock, {kLockWaitSeconds}, [&](const SqlRow& row) { locked = row.Int(0); });
  if (!s.ok()) return s;
  if (locked != 1) {
    return absl::UnavailableError(absl::StrFormat(
        "another migration held the schema lock for over %d seconds", kLockWaitSeconds));
  }
  struct Unlock {
    SqlConnection& conn;
    ~Unlock() {
      absl::Status released = conn.Query(kReleaseLock, {}, [](const SqlRow&) {});
      LOG_IF(WARNING, !released.ok()) << "releasing the migration lock: " << released;
    }
  } unlock{conn};

  if (s = conn.ExecuteDirect(kCreateMigrationsTable); !s.ok()) return s;
  absl::StatusOr<std::map<int, Applied>> applied = ReadApplied(conn);
  if (!applied.ok()) return applied.status();

  std::map<int, const Migration*> ordered;
  for (const Migration& m : migrations) {
    absl::StatusOr<int> version = VersionOf(m);
    if (!version.ok()) return version.status();
    if (!ordered.emplace(*version, &m).second) {
      return absl::InvalidArgumentError(
          absl::StrFormat("two migrations have version %d", *version));
    }
  }

  MigrationReport report;
  for (const auto& [version, m] : ordered) {
    if (auto it = applied->find(version); it != applied->end()) {
      if (it->second.checksum != Checksum(m->sql)) {
        return absl::FailedPreconditionError(absl::StrFormat(
            "migration %s was changed after it was applied (recorded as %s); add a new "
            "migration instead of editing an applied one",
            m->name, it->second.name));
      }
      continue;
    }
    LOG(INFO) << "applying migration " << m->name;
    if (s = Apply(conn, *m, version); !s.ok()) return s;
    report.applied.push_back(m->name);
    (*applied)[version] = Applied{m->name, Checksum(m->sql)};
  }
  report.schema_version = applied->empty() ? 0 : applied->rbegin()->first;
  return report;
}

}  // namespace giftwall::storage
