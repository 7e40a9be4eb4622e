// Reads of the wallet's outbox, the source of truth (DESIGN §2): the catch-up scan's candidates
// and single rows. Plain reads: the wallet's rows are never locked.
#ifndef GIFTWALL_SERVER_STORAGE_OUTBOX_REPOSITORY_H_
#define GIFTWALL_SERVER_STORAGE_OUTBOX_REPOSITORY_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/domain/envelope.h"
#include "server/domain/scan_horizon.h"
#include "server/storage/connection_pool.h"

namespace giftwall::storage {

struct ScanRequest {
  std::string app_code;  // normalized: the app code of the ledger rows and the walls
  int limit = 100;       // candidates of each kind
  // Only outbox events created at or after this are looked for. Failed events that are due, and
  // expired leases, are found whatever their age.
  int64_t horizon_ms = domain::kBeginningOfHistory;
  // Events younger than this are left to the relay.
  absl::Duration min_age = absl::Seconds(10);
  // The outbox is read this many rows at a time, at most kMaxScanWindows windows a scan.
  int64_t window_rows = 10'000;
  // The code the outbox rows are under, as the wallet wrote it ("APP3X" for app3x); empty: the
  // same as app_code.
  std::string outbox_app_code = {};
};

inline constexpr int kMaxScanWindows = 20;

struct ScanCandidate {
  domain::GiftEvent event;
  bool unprojected = false;  // found by the anti-join (no ledger row), not as a due retry
};

struct ScanCandidates {
  // Both kinds, oldest first (occurred_at_ms, then event_id): up to `limit` of each.
  std::vector<ScanCandidate> list;
  int64_t read_through_ms = 0;  // every unprojected outbox event before this is in `list`
  bool reached_newest = false;  // the anti-join read up to newest_ms
  int64_t newest_ms = 0;        // the newest created_at_ms looked at: the database's now - min_age
};

// An outbox row as the wallet wrote it.
struct OutboxRow {
  std::string event_type;
  domain::GiftEvent event;
};

// The codes the outbox holds gift events under, by the app code they normalize to (what the relay
// would project them under), and those that do not normalize: no path can project those.
// Every code the outbox holds gift events under (a loose index scan), as written, read on
// `conn`. domain::GroupOutboxAppCodes says which app each belongs to.
absl::StatusOr<std::vector<std::string>> ReadOutboxAppCodes(SqlConnection& conn);

class OutboxRepository {
 public:
  explicit OutboxRepository(ConnectionPool& pool) : pool_(pool) {}

  // Outbox gift events with no ledger row (an anti-join, never a created_at watermark: created_at
  // is not commit order), failed events whose backoff has passed, and processing rows whose
  // lease expired (DESIGN §2.11). No statement reads all history: the outbox index is read a
  // window of `window_rows` rows at a time.
  absl::StatusOr<ScanCandidates> FindScanCandidates(const ScanRequest& request);

  // The outbox row of one event under `outbox_code`, if it is still there, as an event of
  // `app_code`. Only a row whose code and event id are byte for byte the ones looked up,
  // whatever the collation the wallet gave its columns.
  absl::StatusOr<std::optional<OutboxRow>> Find(absl::string_view outbox_code,
                                                absl::string_view app_code,
                                                absl::string_view event_id);

  // Every code the outbox holds gift events under, as written (ReadOutboxAppCodes).
  absl::StatusOr<std::vector<std::string>> AppCodes();

  // How many gift events the outbox holds under these codes.
  absl::StatusOr<int64_t> CountGiftEvents(const std::vector<std::string>& outbox_app_codes);

 private:
  ConnectionPool& pool_;
};

}  // namespace giftwall::storage

#endif  // GIFTWALL_SERVER_STORAGE_OUTBOX_REPOSITORY_H_
