#include "server/projection/unit.h"

#include <utility>

namespace giftwall::projection {

absl::StatusOr<domain::ProjectionResult> UnitProjector::Project(domain::GiftEvent event,
                                                                domain::ProjectedBy by) {
  std::vector<ProjectionUnit> units(1);
  units.front().events.push_back(std::move(event));
  units.front().by = by;
  UnitResult result = std::move(ProjectUnits(std::move(units)).front());
  if (!result.ok()) return result.status();
  return std::move(result->front());
}

UnitResult UnitProjector::ProjectBatch(std::vector<domain::GiftEvent> events,
                                       domain::ProjectedBy by) {
  if (events.empty()) return std::vector<domain::ProjectionResult>();
  std::vector<ProjectionUnit> units(1);
  units.front().events = std::move(events);
  units.front().by = by;
  return std::move(ProjectUnits(std::move(units)).front());
}

}  // namespace giftwall::projection
