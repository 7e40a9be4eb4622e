// Apps' settings (DESIGN §2.15): giftwall_app_settings and giftwall_app_time_zones, read and
// written on a session the caller holds (a projection group reads them in its own transaction),
// and SettingsRepository for the admin calls on a pool. Rows only: what a change means is
// domain::DecideSettingsChange's.
#ifndef GIFTWALL_SERVER_STORAGE_APP_SETTINGS_STORE_H_
#define GIFTWALL_SERVER_STORAGE_APP_SETTINGS_STORE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "server/domain/app_settings.h"
#include "server/storage/connection_pool.h"
#include "server/storage/sql_connection.h"

namespace giftwall::storage {

// The settings of some apps (those that have any), and the database's clock when they were read.
struct AppSettingsSnapshot {
  std::map<std::string, domain::AppSettings> apps;
  int64_t now_ms = 0;
};

// Reads the settings of `app_codes`. With `shared_lock` (inside a transaction), the rows stay
// share-locked until it ends: a change of settings waits for the groups that read the old ones.
absl::StatusOr<AppSettingsSnapshot> ReadAppSettings(SqlConnection& conn,
                                                    absl::Span<const std::string> app_codes,
                                                    bool shared_lock);

class SettingsRepository {
 public:
  explicit SettingsRepository(ConnectionPool& pool) : pool_(pool) {}

  // One app's settings; none if it keeps the all-time wall only.
  absl::StatusOr<std::optional<domain::AppSettings>> Get(const std::string& app_code);

  // In one transaction: locks the app's settings, asks `decide` what they become (given what
  // they are and the database's now), and stores that. `decide`'s error is returned as it is.
  using Decide = absl::FunctionRef<absl::StatusOr<domain::AppSettings>(
      const std::optional<domain::AppSettings>& current, int64_t now_ms)>;
  absl::StatusOr<domain::AppSettings> Update(const std::string& app_code, Decide decide);

  // One app's settings (if any) and the database's clock.
  absl::StatusOr<AppSettingsSnapshot> Snapshot(const std::string& app_code);

  // Deletes up to `limit` period wall rows, and as many sender rows and sent-wall rows (§2.19),
  // of one kind of an app whose keys sort before `key` (keys of a kind sort as their periods do),
  // each its own statement through the prune indexes. Returns the rows deleted.
  absl::StatusOr<int64_t> DeletePeriodRowsBefore(const std::string& app_code,
                                                 absl::string_view kind, absl::string_view key,
                                                 int64_t limit);

 private:
  ConnectionPool& pool_;
};

}  // namespace giftwall::storage

#endif  // GIFTWALL_SERVER_STORAGE_APP_SETTINGS_STORE_H_
