#include "server/projection/period_pruner.h"

#include "server/common/status_macros.h"

namespace giftwall::projection {

absl::StatusOr<int64_t> PeriodPruner::Prune(const std::string& app_code,
                                            const std::function<bool()>& stop) {
  ASSIGN_OR_RETURN(const storage::AppSettingsSnapshot snapshot, settings_.Snapshot(app_code));
  auto settings = snapshot.apps.find(app_code);
  if (settings == snapshot.apps.end()) return 0;
  ASSIGN_OR_RETURN(const domain::AppCalendar calendar,
                   domain::AppCalendar::Make(settings->second.zones));
  int64_t deleted = 0;
  for (domain::PeriodKind kind : domain::kPeriodKinds) {
    const domain::Period oldest =
        domain::OldestRetained(calendar, retention_, kind, snapshot.now_ms);
    for (;;) {
      if (stop && stop()) return deleted;
      ASSIGN_OR_RETURN(const int64_t rows,
                       settings_.DeletePeriodRowsBefore(app_code, domain::PeriodKindName(kind),
                                                        oldest.key, rows_per_statement_));
      deleted += rows;
      // Fewer than one statement's limit in all: no statement left a row behind.
      if (rows < rows_per_statement_) break;
    }
  }
  return deleted;
}

}  // namespace giftwall::projection
