// SetAppSettings and GetAppSettings (DESIGN §2.15): what an app keeps besides its all-time wall.
// The change is decided by domain::DecideSettingsChange on the stored settings and the database's
// clock, in the transaction that stores it.
#ifndef GIFTWALL_SERVER_PROJECTION_APP_SETTINGS_H_
#define GIFTWALL_SERVER_PROJECTION_APP_SETTINGS_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "server/domain/app_settings.h"
#include "server/storage/app_settings_store.h"

namespace giftwall::projection {

class AppSettingsEditor {
 public:
  explicit AppSettingsEditor(storage::SettingsRepository& settings) : settings_(settings) {}

  // Replaces the app's settings (DecideSettingsChange says what may change and how).
  absl::StatusOr<domain::SettingsChange> Set(const std::string& app_code,
                                             const domain::SettingsRequest& request);
  // None: the app keeps its all-time wall only.
  absl::StatusOr<std::optional<domain::AppSettings>> Get(const std::string& app_code);

 private:
  storage::SettingsRepository& settings_;
};

}  // namespace giftwall::projection

#endif  // GIFTWALL_SERVER_PROJECTION_APP_SETTINGS_H_
