// What callers hand to the projection: units, each answered as a whole.
#ifndef GIFTWALL_SERVER_PROJECTION_UNIT_H_
#define GIFTWALL_SERVER_PROJECTION_UNIT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/domain/envelope.h"
#include "server/domain/projection.h"

namespace giftwall::projection {

// What one caller asks to project, answered together: one ProjectMessage, a ProjectMessages
// batch (committed together), a scan candidate, a requeued event.
struct ProjectionUnit {
  std::vector<domain::GiftEvent> events;
  domain::ProjectedBy by = domain::ProjectedBy::kRelay;
  std::string trace_id = {};  // the call's that brought it, if any: named in its group's log lines
};

// One result per event of the unit, in its order; or why none of it could be projected now:
// UNAVAILABLE (the database, or a transient failure: the events were recorded failed, §2.7),
// ABORTED (contention outlasted every attempt, §2.8).
using UnitResult = absl::StatusOr<std::vector<domain::ProjectionResult>>;

// Projects units: at once (GroupProjector) or gathered with other callers' (ProjectionEngine).
class UnitProjector {
 public:
  virtual ~UnitProjector() = default;

  // One result per unit, in order. Blocks until every unit is answered.
  virtual std::vector<UnitResult> ProjectUnits(std::vector<ProjectionUnit> units) = 0;

  // One event as a unit of its own.
  absl::StatusOr<domain::ProjectionResult> Project(domain::GiftEvent event, domain::ProjectedBy by);
  // A batch as one unit.
  UnitResult ProjectBatch(std::vector<domain::GiftEvent> events, domain::ProjectedBy by);
};

}  // namespace giftwall::projection

#endif  // GIFTWALL_SERVER_PROJECTION_UNIT_H_
