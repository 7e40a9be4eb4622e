// Folds WalletGiftDebited events into user_gift_wall exactly once, with the per-event ledger
// wallet_projection_events (DESIGN §2). Push (the relay) and pull (the catch-up scan) both come
// through here and end in the same state.
#ifndef GIFTWALL_SERVER_STORAGE_PROJECTION_REPOSITORY_H_
#define GIFTWALL_SERVER_STORAGE_PROJECTION_REPOSITORY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "server/domain/backoff.h"
#include "server/domain/envelope.h"
#include "server/domain/gift_payload.h"
#include "server/domain/projection.h"
#include "server/storage/connection_pool.h"

namespace giftwall::storage {

struct ProjectionOptions {
  // Recorded in locked_by while this process holds an event.
  std::string worker_id;
  // How long a claim holds an event before another worker may take it over.
  absl::Duration lease_ttl = absl::Seconds(30);
  domain::RetryPolicy retry;
};

// One pass of the catch-up scan for one app code.
struct CatchUpRequest {
  std::string app_code;
  int limit = 20;  // clamped to 1..100, as in the seed
  // Only outbox events created at or after this are looked for (0: all of history). Failed
  // events that are due, and expired leases, are retried whatever their age.
  int64_t horizon_ms = 0;
  // Events younger than this are left to the relay.
  absl::Duration min_age = absl::Seconds(10);
  // The outbox is read this many rows at a time (at most 20 windows a pass).
  int64_t window_rows = 10'000;
};

struct CatchUpPass {
  int found = 0;      // candidates examined
  int processed = 0;  // moved to done or dead by this pass
  int projected = 0;
  int dead = 0;
  // The next pass may start here: the pass has looked at every outbox event created before.
  int64_t resume_from_ms = 0;
  // Whether the pass read the outbox up to the newest events it looks at (now - min_age). Only
  // then does the next pass's start trail resume_from_ms by a safety margin.
  bool reached_newest = false;
};

// What a requeue did with one event.
struct RequeueResult {
  bool matched = false;   // the event was dead
  bool requeued = false;  // and is now projected (on a dry run: would be)
  std::string reason;     // why not, when it was not (or would not be) requeued
};

class ProjectionRepository {
 public:
  ProjectionRepository(ConnectionPool& pool, ProjectionOptions options);

  // Folds one gift event in its own transaction (the seed's ProjectGiftWallMessage).
  // OK with an outcome, or: UNAVAILABLE (database unreachable or the fold failed; the event is
  // recorded failed and retried later), ABORTED (contention persisted through every attempt).
  absl::StatusOr<domain::ProjectionResult> Project(const domain::GiftEvent& event,
                                                   domain::ProjectedBy by);

  // Folds a batch in one transaction; results are in the order of `events`. A transient failure
  // fails the whole batch and leaves nothing written but the failed event's ledger record.
  absl::StatusOr<std::vector<domain::ProjectionResult>> ProjectBatch(
      absl::Span<const domain::GiftEvent> events, domain::ProjectedBy by);

  // The seed's ProjectPendingGiftWallEvents: finds outbox events with no ledger row, failed
  // events whose backoff has passed and processing rows whose lease expired, oldest first, and
  // projects each (projected_by = scan). Reads the outbox without locking the wallet's rows.
  absl::StatusOr<CatchUpPass> ProjectPendingGiftWallEvents(const CatchUpRequest& request);

  // Re-projects one dead event at once from its outbox row, which the operator has corrected:
  // retry_count back to 0, requeue_count + 1, projected_by = requeue, all in one transaction.
  // An event that is not dead, or whose outbox row is gone, is left alone with the reason; one
  // whose payload is still bad (or that the wall still cannot absorb) stays dead with the new
  // reason. A dry run only looks.
  // With `error_contains`, only an event whose last_error contains that text.
  absl::StatusOr<RequeueResult> RequeueDeadEvent(absl::string_view app_code,
                                                 absl::string_view event_id,
                                                 absl::string_view error_contains, bool dry_run);

 private:
  struct Candidate;
  struct Candidates;
  struct FailedFold;

  absl::StatusOr<std::vector<domain::ProjectionResult>> FoldWithRetries(
      absl::Span<const domain::GiftEvent* const> events, domain::ProjectedBy by);
  absl::StatusOr<std::vector<domain::ProjectionResult>> FoldInTransaction(
      SqlConnection& conn, absl::Span<const domain::GiftEvent* const> events,
      absl::Span<const absl::StatusOr<domain::GiftPayload>> payloads, domain::ProjectedBy by,
      std::optional<FailedFold>* failed);
  // Records a fold's failure (failed with backoff, or dead after max_retries) on `conn`, or on
  // a session of its own if `conn` is null.
  void RecordFailure(SqlConnection* conn, const FailedFold& failed, const absl::Status& cause,
                     domain::ProjectedBy by);
  // Both kinds of candidate, oldest first (up to `limit` of each), and how far the outbox was
  // read.
  absl::StatusOr<Candidates> FindCandidates(SqlConnection& conn, const CatchUpRequest& request,
                                            int limit, int64_t now_ms);

  ConnectionPool& pool_;
  const ProjectionOptions options_;
};

}  // namespace giftwall::storage

#endif  // GIFTWALL_SERVER_STORAGE_PROJECTION_REPOSITORY_H_
