// --payload_source=outbox (DESIGN §3, ProjectMessage): the relay's message says which event, the
// wallet's outbox row says what it is. The ledger answers the events it has done, dead or leased
// to another caller (no outbox row needed: the wallet may have pruned it); every other event is
// replaced with the outbox row of its (app_code, event_id), byte for byte, and projected. A
// message that says another gift than its row is refused, and so is its whole unit.
#ifndef GIFTWALL_SERVER_PROJECTION_OUTBOX_PAYLOADS_H_
#define GIFTWALL_SERVER_PROJECTION_OUTBOX_PAYLOADS_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/domain/projection.h"
#include "server/projection/outbox_codes.h"
#include "server/projection/unit.h"
#include "server/storage/ledger_repository.h"
#include "server/storage/outbox_repository.h"

namespace giftwall::projection {

class OutboxPayloads {
 public:
  OutboxPayloads(UnitProjector& projector, storage::OutboxRepository& outbox,
                 storage::LedgerRepository& ledger)
      : projector_(projector), outbox_codes_(outbox), ledger_(ledger) {}

  // One result per event of `unit`; nothing is projected unless every event passes.
  // UNAVAILABLE while an event's outbox row is not there (redeliver; the catch-up scan projects
  // it once it is); INVALID_ARGUMENT, logged with `caller`, when a message says another gift
  // than its row. `field_of_event(j)` names event j in an error ("messages[3]").
  absl::StatusOr<std::vector<domain::ProjectionResult>> Project(
      ProjectionUnit unit, const std::function<std::string(size_t)>& field_of_event,
      const std::string& caller) const;

 private:
  // What the ledger answers for each event of `unit` without projecting it: done, dead, leased.
  absl::StatusOr<std::vector<std::optional<domain::ProjectionResult>>> AnswerFromLedger(
      const ProjectionUnit& unit) const;
  // Replaces each event of `unit` with its outbox row.
  absl::Status ReplaceWithOutboxRows(ProjectionUnit& unit,
                                     const std::function<std::string(size_t)>& field_of_event,
                                     const std::string& caller) const;

  UnitProjector& projector_;
  mutable OutboxCodes outbox_codes_;  // its listing of codes is a cache
  storage::LedgerRepository& ledger_;
};

}  // namespace giftwall::projection

#endif  // GIFTWALL_SERVER_PROJECTION_OUTBOX_PAYLOADS_H_
