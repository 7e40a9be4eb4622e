#include "server/storage/ledger_repository.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "server/common/status_macros.h"
#include "server/storage/columns.h"
#include "server/storage/db_clock.h"
#include "server/storage/paging.h"

namespace giftwall::storage {
namespace {

// Index-only (idx_projection_events_status).
constexpr absl::string_view kCountsByStatus = R"sql(
SELECT status, projected_by, COUNT(*) FROM wallet_projection_events
WHERE projection_name = )sql" GIFTWALL_SQL_PROJECTION R"sql( AND app_code = ?
GROUP BY status, projected_by)sql";

constexpr absl::string_view kOldestDead =
    R"sql(
SELECT COALESCE()sql" GIFTWALL_DB_NOW_MS
    R"sql( - MIN(updated_at_ms), 0) FROM wallet_projection_events
WHERE projection_name = )sql" GIFTWALL_SQL_PROJECTION
    R"sql( AND app_code = ? AND status = 'dead')sql";

// Lag: every gift event of the app that is not done or dead yet. Reads the app's whole outbox
// index: an operator's question, not a hot path (bounded by the statement time limit).
constexpr absl::string_view kUnprojected = R"sql(
SELECT COUNT(*), COALESCE()sql" GIFTWALL_DB_NOW_MS R"sql( - MIN(wo.created_at_ms), 0)
FROM wallet_outbox wo FORCE INDEX (idx_wallet_outbox_event_created)
LEFT JOIN wallet_projection_events pe
  ON pe.projection_name = )sql" GIFTWALL_SQL_PROJECTION R"sql( AND pe.app_code = ?
     AND pe.event_id = wo.event_id
WHERE wo.app_code = ? AND wo.event_type = 'WalletGiftDebited'
  AND (pe.event_id IS NULL OR pe.status IN ('failed', 'processing')))sql";

// One event's ledger row, whole.
enum EventColumn {
  kStatus,
  kRetryCount,
  kRequeueCount,
  kProjectedBy,
  kLockedBy,
  kLockedUntil,
  kNextAttempt,
  kLastError,
  kProcessedAt,
  kTargetUser,
  kCreatedAt,
  kUpdatedAt,
};
constexpr ResultColumn kEventColumns[] = {
    {kStatus, "status"},
    {kRetryCount, "retry_count"},
    {kRequeueCount, "requeue_count"},
    {kProjectedBy, "projected_by"},
    {kLockedBy, "locked_by"},
    {kLockedUntil, "locked_until_ms"},
    {kNextAttempt, "next_attempt_at_ms"},
    {kLastError, "last_error"},
    {kProcessedAt, "processed_at_ms"},
    {kTargetUser, "target_user_id"},
    {kCreatedAt, "created_at_ms"},
    {kUpdatedAt, "updated_at_ms"},
};
static_assert(InPositionOrder(kEventColumns));

const std::string& EventRowSql() {
  static const auto* const sql = new std::string(absl::StrCat(
      "SELECT ", SelectList(kEventColumns),
      "\nFROM wallet_projection_events\nWHERE projection_name = ", GIFTWALL_SQL_PROJECTION,
      " AND app_code = ? AND event_id = ?"));
  return *sql;
}

// A dead event, as the operator's list shows it.
enum DeadColumn { kDeadId, kDeadError, kDeadRetries, kDeadRequeues, kDeadUser, kDeadSince };
constexpr ResultColumn kDeadColumns[] = {
    {kDeadId, "event_id"},         {kDeadError, "last_error"},
    {kDeadRetries, "retry_count"}, {kDeadRequeues, "requeue_count"},
    {kDeadUser, "target_user_id"}, {kDeadSince, "updated_at_ms"},
};
static_assert(InPositionOrder(kDeadColumns));

// INSTR, not LIKE: the operator's text is matched literally, % and _ included.
const std::string& DeadPageSql() {
  static const auto* const sql = new std::string(absl::StrCat(
      "SELECT ", SelectList(kDeadColumns),
      "\nFROM wallet_projection_events\nWHERE projection_name = ", GIFTWALL_SQL_PROJECTION,
      R"sql( AND app_code = ? AND status = 'dead'
  AND INSTR(last_error, ?) > 0 AND event_id > ?
ORDER BY event_id
LIMIT ?)sql"));
  return *sql;
}

constexpr absl::string_view kDeadGroups = R"sql(
SELECT last_error, COUNT(*) AS n FROM wallet_projection_events
WHERE projection_name = )sql" GIFTWALL_SQL_PROJECTION R"sql( AND app_code = ? AND status = 'dead'
  AND INSTR(last_error, ?) > 0
GROUP BY last_error
ORDER BY n DESC, last_error
LIMIT 100)sql";

constexpr absl::string_view kDeadIds = R"sql(
SELECT event_id FROM wallet_projection_events
WHERE projection_name = )sql" GIFTWALL_SQL_PROJECTION R"sql( AND app_code = ? AND status = 'dead'
  AND INSTR(last_error, ?) > 0
ORDER BY event_id
LIMIT ?)sql";

}  // namespace

absl::StatusOr<ProjectionStatus> LedgerRepository::Status(
    absl::string_view app_code, const std::vector<std::string>& outbox_app_codes) {
  ASSIGN_OR_RETURN(PooledConnection conn, pool_.Acquire());
  ProjectionStatus status;
  absl::Status s = conn->Query(kCountsByStatus, {app_code}, [&](const SqlRow& row) {
    const std::string state = row.Str(0);
    const int64_t n = row.Int(2);
    if (state == "done") {
      status.done += n;
      if (row.Str(1) == "scan") status.recovered_by_scan += n;
    } else if (state == "failed") {
      status.failed += n;
    } else if (state == "dead") {
      status.dead += n;
    } else if (state == "processing") {
      status.processing += n;
    }
  });
  if (!s.ok()) return s;
  s = conn->Query(kOldestDead, {app_code},
                  [&](const SqlRow& row) { status.oldest_dead_age_ms = row.Int(0); });
  if (!s.ok()) return s;
  auto count_unprojected = [&](absl::string_view outbox_code) {
    return conn->Query(kUnprojected, {app_code, outbox_code}, [&](const SqlRow& row) {
      status.unprojected += row.Int(0);
      status.oldest_unprojected_age_ms = std::max(status.oldest_unprojected_age_ms, row.Int(1));
    });
  };
  if (outbox_app_codes.empty()) {
    s = count_unprojected(app_code);
    if (!s.ok()) return s;
  }
  for (const std::string& code : outbox_app_codes) {
    s = count_unprojected(code);
    if (!s.ok()) return s;
  }
  return status;
}

absl::StatusOr<LedgerSnapshot> LedgerRepository::Rows(absl::string_view app_code,
                                                      absl::Span<const std::string> event_ids) {
  ASSIGN_OR_RETURN(PooledConnection conn, pool_.Acquire());
  return ProjectionStore(*conn).ReadLedger(app_code, event_ids);
}

absl::StatusOr<std::optional<EventStatus>> LedgerRepository::Event(absl::string_view app_code,
                                                                   absl::string_view event_id) {
  ASSIGN_OR_RETURN(PooledConnection conn, pool_.Acquire());
  std::optional<EventStatus> event;
  std::string status;
  absl::Status s = conn->Query(EventRowSql(), {app_code, event_id}, [&](const SqlRow& row) {
    status = row.Str(kStatus);
    event = EventStatus{domain::LedgerStatus::kProcessing,
                        row.Int(kRetryCount),
                        row.Int(kRequeueCount),
                        row.Str(kProjectedBy),
                        row.Str(kLockedBy),
                        row.Int(kLockedUntil),
                        row.Int(kNextAttempt),
                        row.Str(kLastError),
                        row.Int(kProcessedAt),
                        row.Int(kTargetUser),
                        row.Int(kCreatedAt),
                        row.Int(kUpdatedAt)};
  });
  if (!s.ok()) return s;
  if (!event.has_value()) return event;
  std::optional<domain::LedgerStatus> parsed = domain::ParseLedgerStatus(status);
  if (!parsed.has_value()) {
    return absl::InternalError(absl::StrCat("ledger status \"", status, "\" outside its CHECK"));
  }
  event->status = *parsed;
  return event;
}

absl::StatusOr<DeadEventPage> LedgerRepository::ListDead(absl::string_view app_code,
                                                         absl::string_view error_contains,
                                                         absl::string_view after_event_id,
                                                         int limit) {
  ASSIGN_OR_RETURN(PooledConnection conn, pool_.Acquire());
  DeadEventPage page;
  absl::Status s =
      conn->Query(DeadPageSql(), {app_code, error_contains, after_event_id, RowsToFetch(limit)},
                  [&](const SqlRow& row) {
                    page.events.push_back(DeadEvent{row.Str(kDeadId), row.Str(kDeadError),
                                                    row.Int(kDeadRetries), row.Int(kDeadRequeues),
                                                    row.Int(kDeadUser), row.Int(kDeadSince)});
                  });
  if (!s.ok()) return s;
  page.has_more = TrimToPage(&page.events, limit);
  s = conn->Query(kDeadGroups, {app_code, error_contains}, [&](const SqlRow& row) {
    page.groups.push_back(DeadErrorGroup{row.Str(0), row.Int(1)});
  });
  if (!s.ok()) return s;
  return page;
}

absl::StatusOr<std::vector<std::string>> LedgerRepository::DeadEventIds(
    absl::string_view app_code, absl::string_view error_contains, int limit) {
  ASSIGN_OR_RETURN(PooledConnection conn, pool_.Acquire());
  std::vector<std::string> ids;
  absl::Status s = conn->Query(kDeadIds, {app_code, error_contains, int64_t{limit}},
                               [&](const SqlRow& row) { ids.push_back(row.Str(0)); });
  if (!s.ok()) return s;
  return ids;
}

}  // namespace giftwall::storage
