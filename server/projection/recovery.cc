#include "server/projection/recovery.h"

#include <algorithm>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/common/status_macros.h"
#include "server/domain/gift_payload.h"

namespace giftwall::projection {

using domain::ProjectedBy;
using domain::ProjectionOutcome;

namespace {

// The pass over what the scan found, before projecting: where the next pass may start is what
// the anti-join read through, unless some of what it found is left for later (a pass projects at
// most `limit` events, due retries included). Cuts `found` to the limit.
CatchUpPass PassOver(storage::ScanCandidates& found, size_t limit) {
  CatchUpPass pass;
  pass.resume_from_ms = found.read_through_ms;
  pass.reached_newest = found.reached_newest;
  pass.newest_ms = found.newest_ms;
  std::vector<storage::ScanCandidate>& candidates = found.list;
  if (candidates.size() <= limit) return pass;
  for (size_t i = limit; i < candidates.size(); ++i) {
    if (candidates[i].unprojected) {
      pass.resume_from_ms = std::min(pass.resume_from_ms, candidates[i].event.occurred_at_ms);
      pass.reached_newest = false;
      break;
    }
  }
  candidates.resize(limit);
  return pass;
}

// What a requeue that projected the event made of it.
RequeueResult Requeued(const domain::ProjectionResult& projected) {
  RequeueResult result;
  result.matched = true;
  switch (projected.outcome) {
    case ProjectionOutcome::kProjected:
      result.requeued = true;
      break;
    case ProjectionOutcome::kDead:
      result.reason = absl::StrCat("still dead: ", projected.detail);
      break;
    case ProjectionOutcome::kAlreadyProjected:
      // Another requeue got there first.
      result.matched = false;
      result.reason = "not dead (status done)";
      break;
    case ProjectionOutcome::kLeased:
    case ProjectionOutcome::kIgnored:
      result.reason = projected.detail;
      break;
  }
  return result;
}

}  // namespace

absl::StatusOr<CatchUpPass> Recovery::ProjectPendingGiftWallEvents(const CatchUpRequest& request) {
  const int limit = std::clamp(request.limit <= 0 ? 20 : request.limit, 1, 100);
  absl::StatusOr<storage::ScanCandidates> found = outbox_.FindScanCandidates(
      storage::ScanRequest{request.app_code, limit, request.horizon_ms, request.min_age,
                           request.window_rows, request.outbox_app_code});
  if (!found.ok()) return found.status();

  CatchUpPass pass = PassOver(*found, static_cast<size_t>(limit));
  std::vector<storage::ScanCandidate>& candidates = found->list;

  std::vector<ProjectionUnit> units;
  units.reserve(candidates.size());
  for (const storage::ScanCandidate& c : candidates) {
    units.push_back(ProjectionUnit{{c.event}, ProjectedBy::kScan});
  }
  std::vector<UnitResult> results = projector_.ProjectUnits(std::move(units));
  absl::Status first_error;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const storage::ScanCandidate& c = candidates[i];
    ++pass.found;
    if (!results[i].ok()) {
      if (first_error.ok()) {
        first_error =
            Annotate(results[i].status(),
                     absl::StrCat("catch-up for app ", request.app_code, " stopped at event ",
                                  absl::CHexEscape(c.event.event_id)));
      }
      continue;
    }
    switch (results[i]->front().outcome) {
      case ProjectionOutcome::kProjected:
        ++pass.projected;
        ++pass.processed;
        break;
      case ProjectionOutcome::kDead:
        ++pass.dead;
        ++pass.processed;
        break;
      case ProjectionOutcome::kLeased:
        // Its holder may still roll back: keep the event inside the next pass's window.
        if (c.unprojected && c.event.occurred_at_ms < pass.resume_from_ms) {
          pass.resume_from_ms = c.event.occurred_at_ms;
          pass.reached_newest = false;
        }
        break;
      case ProjectionOutcome::kAlreadyProjected:
      case ProjectionOutcome::kIgnored:
        break;
    }
  }
  if (!first_error.ok()) return first_error;
  return pass;
}

absl::StatusOr<RequeueResult> Recovery::RequeueDeadEvent(absl::string_view app_code,
                                                         absl::string_view event_id,
                                                         absl::string_view error_contains,
                                                         bool dry_run) {
  RequeueResult result;
  absl::StatusOr<std::optional<storage::EventStatus>> ledger = ledger_.Event(app_code, event_id);
  if (!ledger.ok()) return ledger.status();
  if (!ledger->has_value()) {
    result.reason = "no ledger row";
    return result;
  }
  const storage::EventStatus& row = **ledger;
  if (row.status != domain::LedgerStatus::kDead) {
    result.reason = absl::StrCat("not dead (status ", domain::LedgerStatusName(row.status), ")");
    return result;
  }
  if (!absl::StrContains(row.last_error, error_contains)) {
    result.reason = absl::StrCat("last_error does not contain \"", error_contains, "\"");
    return result;
  }
  result.matched = true;

  absl::StatusOr<std::optional<storage::OutboxRow>> outbox =
      outbox_codes_.FindRow(app_code, event_id);
  if (!outbox.ok()) return outbox.status();
  if (!outbox->has_value()) {
    result.reason = "outbox row is gone";
    return result;
  }
  if (!domain::IsGiftEvent((*outbox)->event_type)) {
    result.reason = absl::StrCat("outbox row is a ", (*outbox)->event_type, " event");
    return result;
  }
  if (dry_run) {
    // Whether the wall can absorb the event is known only by trying; the event is checked.
    const absl::StatusOr<domain::GiftPayload> gift = domain::ParseGiftEvent((*outbox)->event);
    result.requeued = gift.ok();
    if (!gift.ok()) result.reason = absl::StrCat("would stay dead: ", gift.status().message());
    return result;
  }
  absl::StatusOr<domain::ProjectionResult> projected =
      projector_.Project(std::move((*outbox)->event), ProjectedBy::kRequeue);
  if (!projected.ok()) return projected.status();
  return Requeued(*projected);
}

absl::StatusOr<storage::ProjectionStatus> Recovery::Status(const std::string& app_code) {
  ASSIGN_OR_RETURN(const std::vector<std::string> outbox_codes, outbox_codes_.Of(app_code));
  return ledger_.Status(app_code, outbox_codes);
}

absl::StatusOr<CatchUpTotals> Recovery::CatchUpNow(const std::string& app_code, int limit) {
  ASSIGN_OR_RETURN(const std::vector<std::string> outbox_codes, outbox_codes_.Of(app_code));
  CatchUpTotals totals;
  for (const std::string& outbox_code : outbox_codes) {
    CatchUpRequest request{app_code, limit};
    request.min_age = absl::ZeroDuration();
    request.outbox_app_code = outbox_code;
    ASSIGN_OR_RETURN(const CatchUpPass pass, ProjectPendingGiftWallEvents(request));
    totals.found += pass.found;
    totals.processed += pass.processed;
    totals.projected += pass.projected;
    totals.dead += pass.dead;
  }
  return totals;
}

absl::StatusOr<RequeueReport> Recovery::RequeueDeadEvents(const RequeueRequest& request,
                                                          const std::function<bool()>& cancelled) {
  std::vector<std::string> found;
  if (request.event_ids.empty()) {
    ASSIGN_OR_RETURN(found, ledger_.DeadEventIds(request.app_code, request.error_contains,
                                                 static_cast<int>(request.max_events)));
  }
  const std::vector<std::string>& ids = request.event_ids.empty() ? found : request.event_ids;
  RequeueReport report;
  for (const std::string& id : ids) {
    if (cancelled && cancelled()) return absl::CancelledError("cancelled");
    ASSIGN_OR_RETURN(
        const RequeueResult result,
        RequeueDeadEvent(request.app_code, id, request.error_contains, request.dry_run));
    report.matched += result.matched ? 1 : 0;
    report.requeued += result.requeued ? 1 : 0;
    if (result.reason.empty()) continue;
    if (report.skipped.size() < request.max_listed) {
      report.skipped.emplace_back(id, result.reason);
    } else {
      ++report.skipped_not_listed;
    }
  }
  return report;
}

}  // namespace giftwall::projection
