// Retention of the period walls (DESIGN §2.15): the rows of periods older than
// --period_retention keeps are deleted, a chunk per statement, on the background pool. The
// ledger and the all-time walls are never pruned.
#ifndef GIFTWALL_SERVER_PROJECTION_PERIOD_PRUNER_H_
#define GIFTWALL_SERVER_PROJECTION_PERIOD_PRUNER_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "server/domain/app_settings.h"
#include "server/storage/app_settings_store.h"

namespace giftwall::projection {

class PeriodPruner {
 public:
  PeriodPruner(storage::SettingsRepository& settings, domain::PeriodRetention retention,
               int64_t rows_per_statement = 1000)
      : settings_(settings),
        retention_(std::move(retention)),
        rows_per_statement_(rows_per_statement) {}

  // Deletes the app's period rows older than the oldest period retained now (by the database's
  // clock), of every kind (a kind no longer kept ages out too). Returns the rows deleted; an app
  // without settings has none. `stop`, if given, is asked between statements. UNAVAILABLE if the
  // app's zone cannot be loaded.
  absl::StatusOr<int64_t> Prune(const std::string& app_code,
                                const std::function<bool()>& stop = nullptr);

 private:
  storage::SettingsRepository& settings_;
  const domain::PeriodRetention retention_;
  const int64_t rows_per_statement_;
};

}  // namespace giftwall::projection

#endif  // GIFTWALL_SERVER_PROJECTION_PERIOD_PRUNER_H_
