#include "server/domain/ledger_policy.h"

#include "absl/strings/str_format.h"

namespace giftwall::domain {

ClaimDecision DecideClaim(const LedgerRow* row, ProjectedBy by, int64_t now_ms) {
  if (row == nullptr) return {ClaimAction::kInsert, ""};
  switch (row->status) {
    case LedgerStatus::kDone:
      return {ClaimAction::kAlreadyProjected, ""};
    case LedgerStatus::kDead:
      if (by == ProjectedBy::kRequeue) return {ClaimAction::kReclaim, ""};
      return {ClaimAction::kDead, row->last_error};
    case LedgerStatus::kProcessing:
      if (row->locked_until_ms > now_ms) {
        return {ClaimAction::kLeased,
                absl::StrFormat("held by %s for another %d ms", row->locked_by,
                                row->locked_until_ms - now_ms)};
      }
      return {ClaimAction::kReclaim, ""};
    case LedgerStatus::kFailed:
      return {ClaimAction::kReclaim, ""};
  }
  return {ClaimAction::kLeased, "unknown ledger status"};
}

std::optional<ProjectionResult> AnsweredByLedger(const ClaimDecision& decision) {
  switch (decision.action) {
    case ClaimAction::kAlreadyProjected:
      return ProjectionResult{ProjectionOutcome::kAlreadyProjected, ""};
    case ClaimAction::kDead:
      return ProjectionResult{ProjectionOutcome::kDead, decision.detail};
    case ClaimAction::kLeased:
      return ProjectionResult{ProjectionOutcome::kLeased, decision.detail};
    case ClaimAction::kInsert:
    case ClaimAction::kReclaim:
      return std::nullopt;
  }
  return std::nullopt;
}

FailureRecord DecideFailure(int prior_failures, const RetryPolicy& policy, double jitter) {
  FailureRecord record;
  record.retry_count = prior_failures + 1;
  if (record.retry_count >= policy.max_retries) {
    record.status = LedgerStatus::kDead;
    return record;
  }
  record.status = LedgerStatus::kFailed;
  record.retry_after = FailureBackoff(policy, record.retry_count, jitter);
  return record;
}

}  // namespace giftwall::domain
