// Versioned schema migrations: migrations/NNNN_name.sql, applied in order, recorded in
// giftwall_schema_migrations. Safe to run twice, and from several processes at once (on one
// server or on several nodes of a cluster).
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

// Applies every migration not yet recorded in giftwall_schema_migrations, under the database's
// `migrate` lease (giftwall_leases, whose migration runs first) so that concurrent runs take
// turns, on any node of a cluster; a run waits up to two minutes for another. The rows of an
// earlier release's own `schema_migrations` are copied over first (that table stays; another tool's
// table of that name is left alone). A recorded migration whose text has changed since is
// FAILED_PRECONDITION: the schema would no longer be what the files say. So is one recorded dirty:
// it was started and never finished, and only an operator can tell how far it got (ClearDirty).
absl::StatusOr<MigrationReport> Migrate(SqlConnection& conn,
                                        const std::vector<Migration>& migrations);

// The SQL Migrate would apply, with the INSERT that records each migration as applied; applies
// nothing (migrate --print, for DBAs who run DDL with their own tools).
absl::StatusOr<std::string> PendingSql(SqlConnection& conn,
                                       const std::vector<Migration>& migrations);

// Records the dirty migration `version` as finished, once an operator has completed it by hand.
absl::Status ClearDirty(SqlConnection& conn, int version);

struct SchemaState {
  int version = 0;    // the highest recorded
  std::string dirty;  // why not ready, if a migration is recorded dirty; else empty
};

// What giftwall_schema_migrations records; FAILED_PRECONDITION, naming both bookkeeping tables,
// if it is not there.
absl::StatusOr<SchemaState> ReadSchemaState(SqlConnection& conn);

// The version the binary's embedded migrations bring the schema to.
int LatestEmbeddedVersion();

}  // namespace giftwall::storage

#endif  // GIFTWALL_SERVER_STORAGE_MIGRATOR_H_
