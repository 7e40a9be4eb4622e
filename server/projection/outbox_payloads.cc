#include "server/projection/outbox_payloads.h"

#include <map>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "server/common/status_macros.h"
#include "server/domain/envelope.h"
#include "server/domain/gift_payload.h"
#include "server/domain/ledger_policy.h"

namespace giftwall::projection {

absl::StatusOr<std::vector<domain::ProjectionResult>> OutboxPayloads::Project(
    ProjectionUnit unit, const std::function<std::string(size_t)>& field_of_event,
    const std::string& caller) const {
  ASSIGN_OR_RETURN(std::vector<std::optional<domain::ProjectionResult>> answered,
                   AnswerFromLedger(unit));
  ProjectionUnit rest{{}, unit.by, unit.trace_id};
  std::vector<size_t> rest_index;  // the slot in `unit` of each event of `rest`
  for (size_t j = 0; j < unit.events.size(); ++j) {
    if (answered[j].has_value()) continue;
    rest.events.push_back(std::move(unit.events[j]));
    rest_index.push_back(j);
  }
  RETURN_IF_ERROR(ReplaceWithOutboxRows(
      rest, [&](size_t k) { return field_of_event(rest_index[k]); }, caller));
  std::vector<domain::ProjectionResult> results(answered.size());
  if (!rest.events.empty()) {
    std::vector<UnitResult> projected = projector_.ProjectUnits({std::move(rest)});
    if (!projected.front().ok()) return projected.front().status();
    for (size_t k = 0; k < rest_index.size(); ++k) {
      results[rest_index[k]] = std::move((*projected.front())[k]);
    }
  }
  for (size_t j = 0; j < answered.size(); ++j) {
    if (answered[j].has_value()) results[j] = *std::move(answered[j]);
  }
  return results;
}

absl::StatusOr<std::vector<std::optional<domain::ProjectionResult>>>
OutboxPayloads::AnswerFromLedger(const ProjectionUnit& unit) const {
  std::map<absl::string_view, std::vector<size_t>> by_app;
  for (size_t j = 0; j < unit.events.size(); ++j) by_app[unit.events[j].app_code].push_back(j);
  std::vector<std::optional<domain::ProjectionResult>> answered(unit.events.size());
  for (const auto& [app_code, slots] : by_app) {
    std::vector<std::string> ids;
    for (size_t j : slots) ids.push_back(unit.events[j].event_id);
    ASSIGN_OR_RETURN(const storage::LedgerSnapshot ledger, ledger_.Rows(app_code, ids));
    for (size_t j : slots) {
      auto row = ledger.rows.find(unit.events[j].event_id);
      answered[j] = domain::AnsweredByLedger(domain::DecideClaim(
          row == ledger.rows.end() ? nullptr : &row->second, unit.by, ledger.now_ms));
    }
  }
  return answered;
}

absl::Status OutboxPayloads::ReplaceWithOutboxRows(
    ProjectionUnit& unit, const std::function<std::string(size_t)>& field_of_event,
    const std::string& caller) const {
  for (size_t j = 0; j < unit.events.size(); ++j) {
    domain::GiftEvent& event = unit.events[j];
    ASSIGN_OR_RETURN(std::optional<storage::OutboxRow> row,
                     outbox_codes_.FindRow(event.app_code, event.event_id));
    if (!row.has_value()) {
      return absl::UnavailableError(
          absl::StrCat(field_of_event(j), ": app_code ", event.app_code, " has no outbox row \"",
                       absl::CEscape(event.event_id),
                       "\" yet: redeliver later (the catch-up scan projects it once it is there)"));
    }
    const bool same_type = domain::IsGiftEvent(row->event_type);
    if (!same_type || !domain::SameGiftPayload(event.payload_json, row->event.payload_json)) {
      const std::string what = same_type ? "payload_json" : "event_type";
      LOG(WARNING) << "rejected a message whose " << what << " differs from its outbox row: caller="
                   << (caller.empty() ? "(anyone)" : caller) << " app_code=" << event.app_code
                   << " event_id=" << absl::CEscape(event.event_id);
      return absl::InvalidArgumentError(absl::StrCat(
          field_of_event(j), ".", what, " differs from the outbox row of this event: rejected"));
    }
    event = std::move(row->event);
  }
  return absl::OkStatus();
}

}  // namespace giftwall::projection
