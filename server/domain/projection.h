// The projection's vocabulary: what became of an event, who projected it, the ledger's states.
#ifndef GIFTWALL_SERVER_DOMAIN_PROJECTION_H_
#define GIFTWALL_SERVER_DOMAIN_PROJECTION_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace giftwall::domain {

// The ledger's projection_name for the gift wall (the seed's giftWallProjectionName). A macro
// too, so that storage can splice it into SQL string constants (GIFTWALL_SQL_PROJECTION).
#define GIFTWALL_GIFT_WALL_PROJECTION "user_gift_wall"
inline constexpr absl::string_view kGiftWallProjection = GIFTWALL_GIFT_WALL_PROJECTION;
// last_error is cut to this many bytes, on a UTF-8 boundary.
inline constexpr size_t kMaxLastErrorBytes = 1024;

enum class ProjectionOutcome {
  kProjected,         // this call folded the event into the wall
  kAlreadyProjected,  // the ledger says done: never aggregated again
  kIgnored,           // not a WalletGiftDebited event: no ledger row
  kDead,              // can never be projected; the reason is in the ledger
  kLeased,            // another caller holds the event right now
};

// Which intake path claimed the event last (the ledger's projected_by).
enum class ProjectedBy { kRelay, kScan, kRequeue, kRebuild };

// The ledger's status column.
enum class LedgerStatus { kProcessing, kFailed, kDone, kDead };

struct ProjectionResult {
  ProjectionOutcome outcome = ProjectionOutcome::kIgnored;
  std::string detail;
};

absl::string_view ProjectedByName(ProjectedBy by);
// "projected", "already_projected", "ignored", "dead", "leased".
absl::string_view ProjectionOutcomeName(ProjectionOutcome outcome);
absl::string_view LedgerStatusName(LedgerStatus status);
std::optional<LedgerStatus> ParseLedgerStatus(absl::string_view name);

// A failure reason as stored in last_error: trimmed, valid UTF-8 (a stray byte becomes U+FFFD)
// and cut to kMaxLastErrorBytes.
std::string LastError(absl::string_view reason);

}  // namespace giftwall::domain

#endif  // GIFTWALL_SERVER_DOMAIN_PROJECTION_H_
