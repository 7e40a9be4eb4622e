// What operators ask of the ledger: counts and lag, one event's row, the dead events.
#ifndef GIFTWALL_SERVER_STORAGE_LEDGER_REPOSITORY_H_
#define GIFTWALL_SERVER_STORAGE_LEDGER_REPOSITORY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "server/storage/connection_pool.h"
#include "server/storage/projection_store.h"

namespace giftwall::storage {

struct ProjectionStatus {
  int64_t done = 0;
  int64_t failed = 0;
  int64_t dead = 0;
  int64_t processing = 0;
  int64_t unprojected = 0;  // outbox gift events without a ledger row, or failed, or processing
  int64_t oldest_unprojected_age_ms = 0;
  int64_t oldest_dead_age_ms = 0;
  int64_t recovered_by_scan = 0;  // done with projected_by = scan
};

struct EventStatus {
  domain::LedgerStatus status = domain::LedgerStatus::kProcessing;
  int64_t retry_count = 0;
  int64_t requeue_count = 0;
  std::string projected_by;
  std::string locked_by;
  int64_t locked_until_ms = 0;
  int64_t next_attempt_at_ms = 0;
  std::string last_error;
  int64_t processed_at_ms = 0;
  int64_t target_user_id = 0;
  int64_t created_at_ms = 0;
  int64_t updated_at_ms = 0;
};

struct DeadEvent {
  std::string event_id;
  std::string last_error;
  int64_t retry_count = 0;
  int64_t requeue_count = 0;
  int64_t target_user_id = 0;
  int64_t updated_at_ms = 0;
};

struct DeadErrorGroup {
  std::string last_error;
  int64_t count = 0;
};

struct DeadEventPage {
  std::vector<DeadEvent> events;
  std::vector<DeadErrorGroup> groups;
  bool has_more = false;
};

class LedgerRepository {
 public:
  explicit LedgerRepository(ConnectionPool& pool) : pool_(pool) {}

  // The app's counts and lag. Its unprojected events are those the outbox holds under
  // `outbox_app_codes` (the codes that normalize to app_code; empty: app_code alone); an event id
  // written under two of them counts twice until it is projected.
  absl::StatusOr<ProjectionStatus> Status(absl::string_view app_code,
                                          const std::vector<std::string>& outbox_app_codes = {});

  // The ledger rows of `event_ids` that exist, as committed (a plain read, no lock).
  absl::StatusOr<LedgerSnapshot> Rows(absl::string_view app_code,
                                      absl::Span<const std::string> event_ids);

  // nullopt if the event has no ledger row.
  absl::StatusOr<std::optional<EventStatus>> Event(absl::string_view app_code,
                                                   absl::string_view event_id);

  // Dead events by event_id after `after_event_id`, whose last_error contains `error_contains`
  // (all if empty), and the distinct errors among them (at most 100, most frequent first).
  absl::StatusOr<DeadEventPage> ListDead(absl::string_view app_code,
                                         absl::string_view error_contains,
                                         absl::string_view after_event_id, int limit);

  // Ids of dead events whose last_error contains `error_contains`, at most `limit`.
  absl::StatusOr<std::vector<std::string>> DeadEventIds(absl::string_view app_code,
                                                        absl::string_view error_contains,
                                                        int limit);

 private:
  ConnectionPool& pool_;
};

}  // namespace giftwall::storage

#endif  // GIFTWALL_SERVER_STORAGE_LEDGER_REPOSITORY_H_
