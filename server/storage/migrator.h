// Versioned schema migrations: migrations/NNNN_name.sql, applied in order, recorded in
// schema_migrations. Safe to run twice, and from several processes at once.
#ifndef GIFTWALL_SERVER_STORAGE_MIGRATOR_H_
#define GIFTWALL_SERVER_STORAGE_MIGRATOR_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/storage/sql_connection.h"

namespace giftwall::storage {

struct Migration {
  std::string name;  // file name; its leading digits are the version
  std::string sql;
};

// The files of migrations/, compiled into the binary.
const std::vector<Migration>& EmbeddedMigrations();

struct MigrationReport {
  std::vector<std::string> applied;  // names applied by this run, in order
  int schema_version = 0;            // the highest version recorded afterwards
};

// Applies every migration not yet recorded, under a database-wide named lock so that concurrent
// runs take turns. A recorded migration whose text has changed since is FAILED_PRECONDITION: the
// schema would no longer be what the files say.
absl::StatusOr<MigrationReport> Migrate(SqlConnection& conn,
                                        const std::vector<Migration>& migrations);

// The highest recorded version (0 on an empty database).
absl::StatusOr<int> SchemaVersion(SqlConnection& conn);

// The version the binary's embedded migrations bring the schema to.
int LatestEmbeddedVersion();

}  // namespace giftwall::storage

#endif  // GIFTWALL_SERVER_STORAGE_MIGRATOR_H_
