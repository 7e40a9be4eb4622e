// The ledger's decisions (DESIGN §2.2, 2.3, 2.6, 2.7): given what the ledger says of an event,
// whether a caller may claim it and what it answers otherwise, and what a failure makes of it.
// Pure: the storage layer reads and writes the rows these decisions are about.
#ifndef GIFTWALL_SERVER_DOMAIN_LEDGER_POLICY_H_
#define GIFTWALL_SERVER_DOMAIN_LEDGER_POLICY_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/time/time.h"
#include "server/domain/backoff.h"
#include "server/domain/projection.h"

namespace giftwall::domain {

// What the ledger holds for one event.
struct LedgerRow {
  LedgerStatus status = LedgerStatus::kProcessing;
  int retry_count = 0;
  std::string locked_by;
  int64_t locked_until_ms = 0;
  std::string last_error;
};

enum class ClaimAction {
  kInsert,            // no ledger row: claim it by inserting one
  kReclaim,           // a failed row, an expired lease, or a dead row being requeued: update it
  kAlreadyProjected,  // done: never aggregated again
  kDead,              // dead: never aggregated again, unless an operator requeues it
  kLeased,            // another caller holds a live lease on it
};

struct ClaimDecision {
  ClaimAction action = ClaimAction::kInsert;
  std::string detail;  // for kDead the stored reason, for kLeased who holds it
};

// Whether `by` may claim the event whose ledger row is `row` (null: none) at `now_ms`, the
// database's clock. Done and dead rows are answered without touching them, so concurrent
// duplicate deliveries never contend for an update; only a requeue reclaims a dead row.
ClaimDecision DecideClaim(const LedgerRow* row, ProjectedBy by, int64_t now_ms);

// What the ledger alone answers for a decision (done: ALREADY_PROJECTED, dead: DEAD with its
// reason, leased: LEASED with its holder), or none when the event is to be claimed.
std::optional<ProjectionResult> AnsweredByLedger(const ClaimDecision& decision);

// The ledger row a transient failure leaves behind (the seed's markProjectionFailed): one more
// failure, dead once max_retries is reached, otherwise failed until a backoff passes.
struct FailureRecord {
  LedgerStatus status = LedgerStatus::kFailed;
  int retry_count = 0;
  absl::Duration retry_after;  // zero once dead
};

// `prior_failures` is the retry_count the event was claimed with (0 for a new one); `jitter` is
// uniform in [0, 1].
FailureRecord DecideFailure(int prior_failures, const RetryPolicy& policy, double jitter);

}  // namespace giftwall::domain

#endif  // GIFTWALL_SERVER_DOMAIN_LEDGER_POLICY_H_
