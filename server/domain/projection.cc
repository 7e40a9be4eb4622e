#include "server/domain/projection.h"

#include "server/domain/text.h"

namespace giftwall::domain {

absl::string_view ProjectedByName(ProjectedBy by) {
  switch (by) {
    case ProjectedBy::kRelay:
      return "relay";
    case ProjectedBy::kScan:
      return "scan";
    case ProjectedBy::kRequeue:
      return "requeue";
    case ProjectedBy::kRebuild:
      return "rebuild";
  }
  return "";
}

absl::string_view ProjectionOutcomeName(ProjectionOutcome outcome) {
  switch (outcome) {
    case ProjectionOutcome::kProjected:
      return "projected";
    case ProjectionOutcome::kAlreadyProjected:
      return "already_projected";
    case ProjectionOutcome::kIgnored:
      return "ignored";
    case ProjectionOutcome::kDead:
      return "dead";
    case ProjectionOutcome::kLeased:
      return "leased";
  }
  return "";
}

absl::string_view LedgerStatusName(LedgerStatus status) {
  switch (status) {
    case LedgerStatus::kProcessing:
      return "processing";
    case LedgerStatus::kFailed:
      return "failed";
    case LedgerStatus::kDone:
      return "done";
    case LedgerStatus::kDead:
      return "dead";
  }
  return "";
}

std::optional<LedgerStatus> ParseLedgerStatus(absl::string_view name) {
  for (LedgerStatus s : {LedgerStatus::kProcessing, LedgerStatus::kFailed, LedgerStatus::kDone,
                         LedgerStatus::kDead}) {
    if (LedgerStatusName(s) == name) return s;
  }
  return std::nullopt;
}

std::string LastError(absl::string_view reason) {
  const std::string text = ToValidUtf8(TrimSpace(reason));
  return std::string(TruncateUtf8(text, kMaxLastErrorBytes));
}

}  // namespace giftwall::domain
