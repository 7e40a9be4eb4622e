// Projects a group of events in one transaction and a constant number of statements, whatever
// the group's size (DESIGN §2). The plans and the decisions are group_plan.h's; this runs them on
// a GroupStore: read the ledger rows that exist (skipped for relay groups while
// recent groups met none: their rows are inserted at once, and one that exists sends the group
// back to be read first), decide every claim
// (domain::DecideClaim), fold the claimed events into per-row deltas (domain::FoldDeltas), then
// insert the new ledger rows (written done or dead: the claim and the fold share the
// transaction), update the reclaimed ones, merge the senders, merge the wall rows, commit.
//
// A group is made of units: what one caller asked for (one ProjectMessage, a ProjectMessages
// batch, a scan candidate, a requeue). A unit is answered as a whole; an event twice in a group
// is projected once, its other copies answer ALREADY_PROJECTED.
#ifndef GIFTWALL_SERVER_PROJECTION_GROUP_PROJECTOR_H_
#define GIFTWALL_SERVER_PROJECTION_GROUP_PROJECTOR_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "server/domain/app_settings.h"
#include "server/domain/backoff.h"
#include "server/domain/envelope.h"
#include "server/domain/projection.h"
#include "server/domain/wall_cap.h"
#include "server/projection/group_store.h"
#include "server/projection/unit.h"
#include "server/storage/connection_pool.h"

namespace giftwall::projection {

class GroupProjector final : public UnitProjector {
 public:
  // `max_wall_gifts`: the cap on a wall's distinct gifts (DESIGN §2.14); `retention`: the past
  // periods kept of each kind (§2.15).
  GroupProjector(storage::ConnectionPool& pool, domain::RetryPolicy retry,
                 int64_t max_wall_gifts = domain::kDefaultMaxWallGifts,
                 domain::PeriodRetention retention = {})
      : owned_store_(std::make_unique<MysqlGroupStore>(pool)),
        store_(*owned_store_),
        retry_(retry),
        max_wall_gifts_(max_wall_gifts),
        retention_(std::move(retention)) {}
  // On any store: a fake one drives the state machine in unit tests.
  GroupProjector(GroupStore& store, domain::RetryPolicy retry,
                 int64_t max_wall_gifts = domain::kDefaultMaxWallGifts,
                 domain::PeriodRetention retention = {})
      : store_(store),
        retry_(retry),
        max_wall_gifts_(max_wall_gifts),
        retention_(std::move(retention)) {}

  // Projects `units` as one group; one result per unit, in order. Blocks on the database.
  //
  // The group is one transaction, except when it must be split: a group whose fold overflows a
  // wall's totals (a permanent error, §2.6) is split in halves until the event that cannot be
  // absorbed is alone, and it alone goes dead; a group with more than one claim that waits out
  // the lock-wait bound on a ledger row is projected event by event, and the held event alone
  // answers LEASED. The parts commit separately. A group that adds gifts to a wall past the
  // cap is tried again with the events of the gifts refused written dead (§2.14).
  std::vector<UnitResult> ProjectGroup(absl::Span<const ProjectionUnit> units);

  // The units as one group, at once.
  std::vector<UnitResult> ProjectUnits(std::vector<ProjectionUnit> units) override {
    return ProjectGroup(units);
  }

  const domain::RetryPolicy& retry() const { return retry_; }

 private:
  std::unique_ptr<GroupStore> owned_store_;
  GroupStore& store_;
  const domain::RetryPolicy retry_;
  const int64_t max_wall_gifts_;
  const domain::PeriodRetention retention_;
  // Whether recent groups met ledger rows that already existed (redeliveries): then groups are
  // read before they are claimed; otherwise relay groups are claimed by inserting at once.
  std::atomic<bool> expect_existing_{false};
};

}  // namespace giftwall::projection

#endif  // GIFTWALL_SERVER_PROJECTION_GROUP_PROJECTOR_H_
