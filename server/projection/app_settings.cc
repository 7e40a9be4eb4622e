#include "server/projection/app_settings.h"

#include "glog/logging.h"

namespace giftwall::projection {

absl::StatusOr<domain::SettingsChange> AppSettingsEditor::Set(
    const std::string& app_code, const domain::SettingsRequest& request) {
  domain::SettingsChange decided;
  absl::StatusOr<domain::AppSettings> stored =
      settings_.Update(app_code,
                       [&](const std::optional<domain::AppSettings>& current,
                           int64_t now_ms) -> absl::StatusOr<domain::AppSettings> {
                         absl::StatusOr<domain::SettingsChange> change =
                             domain::DecideSettingsChange(current, request, now_ms);
                         if (!change.ok()) return change.status();
                         decided = *std::move(change);
                         return decided.settings;
                       });
  if (!stored.ok()) return stored.status();
  if (decided.changed) {
    LOG(INFO) << "settings: app " << app_code << " keeps "
              << (decided.settings.kinds.empty() ? "no period"
                                                 : domain::PeriodKindsList(decided.settings.kinds))
              << " in " << decided.settings.zone() << " (by " << request.caller
              << "): " << decided.note;
  }
  return decided;
}

absl::StatusOr<std::optional<domain::AppSettings>> AppSettingsEditor::Get(
    const std::string& app_code) {
  return settings_.Get(app_code);
}

}  // namespace giftwall::projection
