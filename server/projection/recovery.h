// What finds and re-projects events outside the relay's path: the catch-up pass (the seed's
// ProjectPendingGiftWallEvents, DESIGN §2.11) and an operator's requeue of a dead event (§3).
// Both project through the same units as the relay.
#ifndef GIFTWALL_SERVER_PROJECTION_RECOVERY_H_
#define GIFTWALL_SERVER_PROJECTION_RECOVERY_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "server/projection/outbox_codes.h"
#include "server/projection/unit.h"
#include "server/storage/ledger_repository.h"
#include "server/storage/outbox_repository.h"

namespace giftwall::projection {

// One pass of the catch-up scan for one app code.
struct CatchUpRequest {
  std::string app_code;  // normalized
  int limit = 20;        // clamped to 1..100, as in the seed
  // Only outbox events created at or after this are looked for (by default, all of history).
  // Failed events that are due, and expired leases, are retried whatever their age.
  int64_t horizon_ms = domain::kBeginningOfHistory;
  // Events younger than this are left to the relay.
  absl::Duration min_age = absl::Seconds(10);
  // The outbox is read this many rows at a time (at most 20 windows a pass).
  int64_t window_rows = 10'000;
  // The code the outbox rows are under, if the wallet did not write app_code itself ("APP3X");
  // their events are projected under app_code, as the relay would.
  std::string outbox_app_code = {};
};

struct CatchUpPass {
  int found = 0;      // candidates examined
  int processed = 0;  // moved to done or dead by this pass
  int projected = 0;
  int dead = 0;
  // The next pass may start here: the pass has looked at every outbox event created before.
  int64_t resume_from_ms = 0;
  // Whether the pass read the outbox up to the newest events it looks at, newest_ms (the
  // database's now less min_age). The next pass's start never passes newest_ms less the scan's
  // safety margin (domain::ScanHorizon).
  bool reached_newest = false;
  int64_t newest_ms = 0;
};

// What an on-demand catch-up did, across the codes the outbox holds an app's events under.
struct CatchUpTotals {
  int64_t found = 0;
  int64_t processed = 0;
  int64_t projected = 0;
  int64_t dead = 0;
};

// What a requeue did with one event.
struct RequeueResult {
  bool matched = false;   // the event was dead
  bool requeued = false;  // and is now projected (on a dry run: would be)
  std::string reason;     // why not, when it was not (or would not be) requeued
};

// What a requeue of several dead events did.
struct RequeueReport {
  int64_t matched = 0;
  int64_t requeued = 0;
  std::vector<std::pair<std::string, std::string>> skipped;  // (event id, reason), the first few
  int64_t skipped_not_listed = 0;                            // the rest of them
};

struct RequeueRequest {
  std::string app_code;  // normalized
  // The events to requeue; none: the dead events whose last_error contains error_contains.
  std::vector<std::string> event_ids;
  std::string error_contains;
  bool dry_run = false;
  size_t max_events = 10'000;  // found by error_contains, at most
  size_t max_listed = 100;     // skipped events listed, at most
};

class Recovery {
 public:
  Recovery(UnitProjector& projector, storage::OutboxRepository& outbox,
           storage::LedgerRepository& ledger)
      : projector_(projector), outbox_(outbox), outbox_codes_(outbox), ledger_(ledger) {}

  // Finds outbox events with no ledger row, failed events whose backoff has passed and
  // processing rows whose lease expired, oldest first, and projects them (projected_by = scan),
  // each as a unit of its own. An error names the app and the first event it stopped at.
  absl::StatusOr<CatchUpPass> ProjectPendingGiftWallEvents(const CatchUpRequest& request);

  // Re-projects one dead event at once from its outbox row, which the operator has corrected:
  // retry_count back to 0, requeue_count + 1, projected_by = requeue, all in one transaction.
  // An event that is not dead, or whose outbox row is gone, is left alone with the reason; one
  // whose payload is still bad (or that the wall still cannot absorb) stays dead with the new
  // reason. With `error_contains`, only an event whose last_error contains that text. A dry run
  // only looks.
  absl::StatusOr<RequeueResult> RequeueDeadEvent(absl::string_view app_code,
                                                 absl::string_view event_id,
                                                 absl::string_view error_contains, bool dry_run);

  // RunCatchUp: one pass under each code the outbox holds `app_code`'s events under (itself,
  // and any that normalizes to it), over the whole outbox and with no minimum age.
  absl::StatusOr<CatchUpTotals> CatchUpNow(const std::string& app_code, int limit);

  // RequeueDeadEvents: RequeueDeadEvent for each event of the request, each in its own
  // transaction; `cancelled`, if given, is asked between two (true: CANCELLED).
  absl::StatusOr<RequeueReport> RequeueDeadEvents(const RequeueRequest& request,
                                                  const std::function<bool()>& cancelled = nullptr);

  // The ledger's counts for `app_code`, and what the outbox holds of it under each of its codes
  // that is not projected yet.
  absl::StatusOr<storage::ProjectionStatus> Status(const std::string& app_code);

 private:
  UnitProjector& projector_;
  storage::OutboxRepository& outbox_;
  OutboxCodes outbox_codes_;
  storage::LedgerRepository& ledger_;
};

}  // namespace giftwall::projection

#endif  // GIFTWALL_SERVER_PROJECTION_RECOVERY_H_
