#include "server/storage/outbox_repository.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "server/common/status_macros.h"
#include "server/domain/app_code.h"
#include "server/storage/columns.h"
#include "server/storage/db_clock.h"

namespace giftwall::storage {
namespace {

constexpr absl::string_view kSelectDbNow = "SELECT " GIFTWALL_DB_NOW_MS;

// An outbox event the scan may project.
enum CandidateColumn { kCandidateId, kCandidatePayload, kCandidateCreatedAt };
constexpr ResultColumn kCandidateColumns[] = {
    {kCandidateId, "wo.event_id"},
    {kCandidatePayload, "COALESCE(wo.payload, '')"},
    {kCandidateCreatedAt, "wo.created_at_ms"},
};
static_assert(InPositionOrder(kCandidateColumns));

// Outbox events (under the outbox's code) with no ledger row (under the normalized code), in one
// window of created_at_ms.
const std::string& UnprojectedCandidatesSql() {
  static const auto* const sql =
      new std::string(absl::StrCat("SELECT ", SelectList(kCandidateColumns), R"sql(
FROM wallet_outbox wo FORCE INDEX (idx_wallet_outbox_event_created)
LEFT JOIN wallet_projection_events pe
  ON pe.projection_name = )sql",
                                   GIFTWALL_SQL_PROJECTION, R"sql( AND pe.app_code = ?
     AND pe.event_id = wo.event_id
WHERE wo.app_code = ? AND wo.event_type = 'WalletGiftDebited'
  AND wo.created_at_ms >= ? AND wo.created_at_ms <= ?
  AND pe.event_id IS NULL
ORDER BY wo.created_at_ms ASC, wo.event_id ASC
LIMIT ?)sql"));
  return *sql;
}

// Where a scan window of the outbox ends: the created_at_ms of the window's last row.
constexpr absl::string_view kScanWindowEnd = R"sql(
SELECT created_at_ms FROM wallet_outbox FORCE INDEX (idx_wallet_outbox_event_created)
WHERE app_code = ? AND event_type = 'WalletGiftDebited'
  AND created_at_ms >= ? AND created_at_ms <= ?
ORDER BY created_at_ms ASC, event_id ASC
LIMIT 1 OFFSET ?)sql";

// Failed events whose backoff has passed, and processing rows whose lease has expired
// (next_attempt_at_ms is the end of a lease while processing).
const std::string& DueRetryCandidatesSql() {
  static const auto* const sql =
      new std::string(absl::StrCat("SELECT ", SelectList(kCandidateColumns), R"sql(
FROM wallet_projection_events pe
JOIN wallet_outbox wo ON wo.app_code = ? AND wo.event_id = pe.event_id
WHERE pe.projection_name = )sql",
                                   GIFTWALL_SQL_PROJECTION, R"sql( AND pe.app_code = ?
  AND pe.status IN ('failed', 'processing') AND pe.next_attempt_at_ms <= ?
  AND wo.event_type = 'WalletGiftDebited'
ORDER BY wo.created_at_ms ASC, wo.event_id ASC
LIMIT ?)sql"));
  return *sql;
}

// The wallet owns this table and its collation: under a case-insensitive or PAD SPACE one, the
// index lookup also returns rows whose ids differ in case or trailing spaces ("e1 " for "E1").
// The ids are returned too, and only a byte-identical row is taken (a BINARY comparison would
// lose the index).
enum OutboxColumn { kAppCode, kEventId, kEventType, kPayload, kCreatedAt };
constexpr ResultColumn kOutboxColumns[] = {
    {kAppCode, "app_code"},        {kEventId, "event_id"},
    {kEventType, "event_type"},    {kPayload, "COALESCE(payload, '')"},
    {kCreatedAt, "created_at_ms"},
};
static_assert(InPositionOrder(kOutboxColumns));

const std::string& OutboxRowSql() {
  static const auto* const sql =
      new std::string(absl::StrCat("SELECT ", SelectList(kOutboxColumns),
                                   " FROM wallet_outbox\nWHERE app_code = ? AND event_id = ?"));
  return *sql;
}

// A loose index scan of idx_wallet_outbox_event_created.
constexpr absl::string_view kOutboxAppCodes = R"sql(
SELECT DISTINCT app_code FROM wallet_outbox WHERE event_type = 'WalletGiftDebited')sql";

constexpr absl::string_view kCountGiftEvents = R"sql(
SELECT COUNT(*) FROM wallet_outbox WHERE app_code = ? AND event_type = 'WalletGiftDebited')sql";

int64_t Ms(absl::Duration d) { return absl::ToInt64Milliseconds(d); }

// A scan candidate from a row of UnprojectedCandidatesSql or DueRetryCandidatesSql.
ScanCandidate CandidateOf(const SqlRow& row, const std::string& app_code, bool unprojected) {
  ScanCandidate c;
  c.event.app_code = app_code;
  c.event.event_id = row.Str(kCandidateId);
  c.event.payload_json = row.Str(kCandidatePayload);
  c.event.occurred_at_ms = row.Int(kCandidateCreatedAt);
  c.unprojected = unprojected;
  return c;
}

// Oldest first; ties by event id.
void SortByTime(std::vector<ScanCandidate>& list) {
  std::stable_sort(list.begin(), list.end(), [](const ScanCandidate& a, const ScanCandidate& b) {
    return std::tie(a.event.occurred_at_ms, a.event.event_id) <
           std::tie(b.event.occurred_at_ms, b.event.event_id);
  });
}

}  // namespace

absl::StatusOr<ScanCandidates> OutboxRepository::FindScanCandidates(const ScanRequest& request) {
  ASSIGN_OR_RETURN(PooledConnection conn, pool_.Acquire());
  int64_t now_ms = 0;
  absl::Status s = conn->Query(kSelectDbNow, {}, [&](const SqlRow& row) { now_ms = row.Int(0); });
  if (!s.ok()) return s;

  const std::string& outbox_code =
      request.outbox_app_code.empty() ? request.app_code : request.outbox_app_code;
  ScanCandidates found;
  const int64_t limit = std::max(request.limit, 1);
  auto collect = [&](bool unprojected) {
    return [&, unprojected](const SqlRow& row) {
      found.list.push_back(CandidateOf(row, request.app_code, unprojected));
    };
  };
  // Window after window until `limit` candidates, the newest events it looks at, or
  // kMaxScanWindows windows (a full sweep over millions of projected events would otherwise
  // outlast the statement time limit).
  const int64_t newest = now_ms - Ms(request.min_age);
  found.newest_ms = newest;
  int64_t start = request.horizon_ms;
  found.read_through_ms = start;
  for (int window = 0; window < kMaxScanWindows && start <= newest; ++window) {
    std::optional<int64_t> end;
    s = conn->Query(kScanWindowEnd,
                    {outbox_code, start, newest, std::max<int64_t>(request.window_rows, 1) - 1},
                    [&](const SqlRow& row) { end = row.Int(0); });
    if (!s.ok()) return s;
    // Fewer rows than a window left, or a window of rows that all share one millisecond (it
    // cannot be split by time): read up to `newest`.
    const bool last = !end.has_value() || *end == start;
    const int64_t until = last ? newest : *end;
    s = conn->Query(UnprojectedCandidatesSql(),
                    {request.app_code, outbox_code, start, until,
                     limit - static_cast<int64_t>(found.list.size())},
                    collect(true));
    if (!s.ok()) return s;
    if (found.list.size() >= static_cast<size_t>(limit)) {
      // The window was not read to its end: the next scan starts at the last candidate.
      found.read_through_ms = found.list.back().event.occurred_at_ms;
      break;
    }
    found.read_through_ms = until;
    found.reached_newest = last;
    if (last) break;
    start = until + 1;  // every row at `until` was in this window
  }
  s = conn->Query(DueRetryCandidatesSql(), {outbox_code, request.app_code, now_ms, limit},
                  collect(false));
  if (!s.ok()) return s;
  SortByTime(found.list);
  return found;
}

absl::StatusOr<std::optional<OutboxRow>> OutboxRepository::Find(absl::string_view outbox_code,
                                                                absl::string_view app_code,
                                                                absl::string_view event_id) {
  ASSIGN_OR_RETURN(PooledConnection conn, pool_.Acquire());
  std::optional<OutboxRow> found;
  RETURN_IF_ERROR(conn->Query(OutboxRowSql(), {outbox_code, event_id}, [&](const SqlRow& row) {
    if (row.Str(kAppCode) != outbox_code || row.Str(kEventId) != event_id) return;
    found = OutboxRow{row.Str(kEventType),
                      domain::GiftEvent{std::string(app_code), std::string(event_id),
                                        row.Str(kPayload), row.Int(kCreatedAt)}};
  }));
  return found;
}

absl::StatusOr<std::vector<std::string>> OutboxRepository::AppCodes() {
  ASSIGN_OR_RETURN(PooledConnection conn, pool_.Acquire());
  return ReadOutboxAppCodes(*conn);
}

absl::StatusOr<std::vector<std::string>> ReadOutboxAppCodes(SqlConnection& conn) {
  std::vector<std::string> codes;
  RETURN_IF_ERROR(
      conn.Query(kOutboxAppCodes, {}, [&](const SqlRow& row) { codes.push_back(row.Str(0)); }));
  return codes;
}

absl::StatusOr<int64_t> OutboxRepository::CountGiftEvents(
    const std::vector<std::string>& outbox_app_codes) {
  ASSIGN_OR_RETURN(PooledConnection conn, pool_.Acquire());
  int64_t count = 0;
  for (const std::string& code : outbox_app_codes) {
    absl::Status s =
        conn->Query(kCountGiftEvents, {code}, [&](const SqlRow& row) { count += row.Int(0); });
    if (!s.ok()) return s;
  }
  return count;
}

}  // namespace giftwall::storage
