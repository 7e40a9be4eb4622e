#include "server/storage/projection_repository.h"

#include <algorithm>
#include <numeric>
#include <thread>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "glog/logging.h"
#include "server/storage/contention.h"
#include "server/storage/db_clock.h"

namespace giftwall::storage {

using domain::GiftEvent;
using domain::GiftPayload;
using domain::LedgerStatus;
using domain::ProjectedBy;
using domain::ProjectionOutcome;
using domain::ProjectionResult;

namespace {

constexpr absl::string_view kSelectDbNow = "SELECT " GIFTWALL_DB_NOW_MS;

// A new event is claimed by inserting its ledger row: of concurrent deliveries exactly one
// insert succeeds, the others wait for it (up to the lock-wait bound) and then see its outcome.
constexpr absl::string_view kClaimByInsert = R"sql(
INSERT INTO wallet_projection_events
  (projection_name, app_code, event_id, status, retry_count, locked_by, locked_until_ms,
   next_attempt_at_ms, projected_by, target_user_id, created_at_ms, updated_at_ms)
VALUES ('user_gift_wall', ?, ?, 'processing', 0, ?, )sql" GIFTWALL_DB_NOW_MS R"sql( + ?,
        )sql" GIFTWALL_DB_NOW_MS R"sql( + ?, ?, ?, )sql" GIFTWALL_DB_NOW_MS
                                             R"sql(, )sql" GIFTWALL_DB_NOW_MS R"sql())sql";

// A plain (non-locking) read: under READ COMMITTED it sees the committed row, and taking no
// lock is what keeps concurrent duplicate deliveries from deadlocking one another.
constexpr absl::string_view kReadLedgerRow = R"sql(
SELECT status, retry_count, locked_by, locked_until_ms, last_error, )sql" GIFTWALL_DB_NOW_MS R"sql(
FROM wallet_projection_events
WHERE projection_name = 'user_gift_wall' AND app_code = ? AND event_id = ?)sql";

// Only a failed row, or a processing row whose lease has expired, may be claimed again; done
// and dead rows are never re-projected.
constexpr absl::string_view kReclaim = R"sql(
UPDATE wallet_projection_events
SET status = 'processing', locked_by = ?, locked_until_ms = )sql" GIFTWALL_DB_NOW_MS R"sql( + ?,
    next_attempt_at_ms = )sql" GIFTWALL_DB_NOW_MS R"sql( + ?, projected_by = ?, target_user_id = ?,
    updated_at_ms = )sql" GIFTWALL_DB_NOW_MS R"sql(
WHERE projection_name = 'user_gift_wall' AND app_code = ? AND event_id = ?
  AND status IN ('failed', 'processing') AND locked_until_ms <= )sql" GIFTWALL_DB_NOW_MS;

constexpr absl::string_view kMarkDone = R"sql(
UPDATE wallet_projection_events
SET status = 'done', locked_by = '', locked_until_ms = 0, next_attempt_at_ms = 0,
    last_error = '', processed_at_ms = )sql" GIFTWALL_DB_NOW_MS
                                        R"sql(, updated_at_ms = )sql" GIFTWALL_DB_NOW_MS
                                        R"sql(
WHERE projection_name = 'user_gift_wall' AND app_code = ? AND event_id = ?)sql";

constexpr absl::string_view kMarkDead = R"sql(
UPDATE wallet_projection_events
SET status = 'dead', locked_by = '', locked_until_ms = 0, next_attempt_at_ms = 0,
    last_error = ?, updated_at_ms = )sql" GIFTWALL_DB_NOW_MS R"sql(
WHERE projection_name = 'user_gift_wall' AND app_code = ? AND event_id = ?)sql";

// After a rollback the row is back to what was committed: failed (a re-claim was undone), an
// expired processing row, absent (a new claim was undone), or another worker's by now. Only the
// first two are ours to update; an absent row is inserted by kInsertFailure. status is
// assigned first, so it still sees the old retry_count.
constexpr absl::string_view kRecordFailure = R"sql(
UPDATE wallet_projection_events
SET status = IF(retry_count + 1 >= ?, 'dead', 'failed'), retry_count = retry_count + 1,
    locked_by = '', locked_until_ms = 0, next_attempt_at_ms = )sql" GIFTWALL_DB_NOW_MS R"sql( + ?,
    last_error = ?, updated_at_ms = )sql" GIFTWALL_DB_NOW_MS R"sql(
WHERE projection_name = 'user_gift_wall' AND app_code = ? AND event_id = ?
  AND (status = 'failed' OR (status = 'processing' AND locked_until_ms <= )sql" GIFTWALL_DB_NOW_MS
                                             R"sql())
)sql";

// If a row appeared meanwhile, another worker claimed the event: its outcome stands.
constexpr absl::string_view kInsertFailure = R"sql(
INSERT INTO wallet_projection_events
  (projection_name, app_code, event_id, status, retry_count, next_attempt_at_ms, last_error,
   projected_by, target_user_id, created_at_ms, updated_at_ms)
VALUES ('user_gift_wall', ?, ?, IF(1 >= ?, 'dead', 'failed'), 1, )sql" GIFTWALL_DB_NOW_MS
                                             R"sql( + ?, ?, ?,
        ?, )sql" GIFTWALL_DB_NOW_MS R"sql(, )sql" GIFTWALL_DB_NOW_MS R"sql()
ON DUPLICATE KEY UPDATE updated_at_ms = updated_at_ms)sql";

// The sender's totals for this gift on this wall. Affected rows say whether the sender is new
// to the gift (1: inserted) or not (2: updated; counts always grow).
constexpr absl::string_view kUpsertSender = R"sql(
INSERT INTO user_gift_wall_sender
  (app_code, user_id, gift_id, sender_user_id, sent_count, sent_coins, first_sent_at_ms,
   last_sent_at_ms, created_at_ms, updated_at_ms)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, )sql" GIFTWALL_DB_NOW_MS R"sql(, )sql" GIFTWALL_DB_NOW_MS R"sql()
ON DUPLICATE KEY UPDATE
  sent_count = sent_count + VALUES(sent_count),
  sent_coins = sent_coins + VALUES(sent_coins),
  first_sent_at_ms = LEAST(first_sent_at_ms, VALUES(first_sent_at_ms)),
  last_sent_at_ms = GREATEST(last_sent_at_ms, VALUES(last_sent_at_ms)),
  updated_at_ms = VALUES(updated_at_ms))sql";

// Folds one event into its wall row in one statement, whatever order events arrive in (DESIGN
// §2.10): counts and coins add up; first/last received use LEAST/GREATEST; name and icon come
// from the latest event (occurred_at_ms, then event_id) that carries them; the first sender is
// the sender of the earliest such event; the top sender is the best of the current top and this
// event's sender, whose new totals the SELECT reads from the row kUpsertSender just wrote (none
// when the event has no sender). Strict mode makes an overflowing sum an error (1690).
//
// Assignments run left to right. Each "pick one event's values" group first moves its
// *_event_id (or the top sender's id) when this event wins, then copies the other columns only
// if that id now names this event: so every column of a group is decided on the old values.
constexpr absl::string_view kFoldIntoWall = R"sql(
INSERT INTO user_gift_wall
  (app_code, user_id, gift_id, gift_count, total_coins, first_received_at_ms,
   last_received_at_ms, gift_name, gift_name_at_ms, gift_name_event_id, gift_icon,
   gift_icon_at_ms, gift_icon_event_id, sender_count, top_sender_user_id, top_sender_count,
   top_sender_coins, top_sender_first_sent_at_ms, top_sender_last_sent_at_ms,
   first_sender_user_id, first_sender_at_ms, first_sender_event_id, created_at_ms, updated_at_ms)
SELECT ?, ?, ?, ?, ?, ?,
       ?, ?, ?, ?, ?,
       ?, ?, ?, COALESCE(s.sender_user_id, 0), COALESCE(s.sent_count, 0),
       COALESCE(s.sent_coins, 0), COALESCE(s.first_sent_at_ms, 0), COALESCE(s.last_sent_at_ms, 0),
       ?, ?, ?, )sql" GIFTWALL_DB_NOW_MS R"sql(, )sql" GIFTWALL_DB_NOW_MS R"sql(
FROM (SELECT 1) AS this_event
LEFT JOIN user_gift_wall_sender s
  ON s.app_code = ? AND s.user_id = ? AND s.gift_id = ? AND s.sender_user_id = ?
ON DUPLICATE KEY UPDATE
  gift_count = gift_count + VALUES(gift_count),
  total_coins = total_coins + VALUES(total_coins),
  first_received_at_ms = LEAST(first_received_at_ms, VALUES(first_received_at_ms)),
  last_received_at_ms = GREATEST(last_received_at_ms, VALUES(last_received_at_ms)),

  gift_name_event_id = IF(VALUES(gift_name_event_id) <> ''
      AND (VALUES(gift_name_at_ms) > gift_name_at_ms OR (VALUES(gift_name_at_ms) = gift_name_at_ms
           AND VALUES(gift_name_event_id) > gift_name_event_id)),
      VALUES(gift_name_event_id), gift_name_event_id),
  gift_name = IF(gift_name_event_id = VALUES(gift_name_event_id), VALUES(gift_name), gift_name),
  gift_name_at_ms = IF(gift_name_event_id = VALUES(gift_name_event_id), VALUES(gift_name_at_ms),
                       gift_name_at_ms),

  gift_icon_event_id = IF(VALUES(gift_icon_event_id) <> ''
      AND (VALUES(gift_icon_at_ms) > gift_icon_at_ms OR (VALUES(gift_icon_at_ms) = gift_icon_at_ms
           AND VALUES(gift_icon_event_id) > gift_icon_event_id)),
      VALUES(gift_icon_event_id), gift_icon_event_id),
  gift_icon = IF(gift_icon_event_id = VALUES(gift_icon_event_id), VALUES(gift_icon), gift_icon),
  gift_icon_at_ms = IF(gift_icon_event_id = VALUES(gift_icon_event_id), VALUES(gift_icon_at_ms),
                       gift_icon_at_ms),

  sender_count = sender_count + VALUES(sender_count),

  top_sender_user_id = IF(VALUES(top_sender_count) > top_sender_count
      OR (VALUES(top_sender_count) = top_sender_count
          AND (VALUES(top_sender_last_sent_at_ms) < top_sender_last_sent_at_ms
               OR (VALUES(top_sender_last_sent_at_ms) = top_sender_last_sent_at_ms
                   AND VALUES(top_sender_user_id) < top_sender_user_id))),
      VALUES(top_sender_user_id), top_sender_user_id),
  top_sender_count = IF(top_sender_user_id = VALUES(top_sender_user_id),
                        VALUES(top_sender_count), top_sender_count),
  top_sender_coins = IF(top_sender_user_id = VALUES(top_sender_user_id),
                        VALUES(top_sender_coins), top_sender_coins),
  top_sender_first_sent_at_ms = IF(top_sender_user_id = VALUES(top_sender_user_id),
                                   VALUES(top_sender_first_sent_at_ms), top_sender_first_sent_at_ms),
  top_sender_last_sent_at_ms = IF(top_sender_user_id = VALUES(top_sender_user_id),
                                  VALUES(top_sender_last_sent_at_ms), top_sender_last_sent_at_ms),

  first_sender_event_id = IF(VALUES(first_sender_user_id) > 0
      AND (first_sender_user_id = 0 OR VALUES(first_sender_at_ms) < first_sender_at_ms
           OR (VALUES(first_sender_at_ms) = first_sender_at_ms
               AND VALUES(first_sender_event_id) < first_sender_event_id)),
      VALUES(first_sender_event_id), first_sender_event_id),
  first_sender_user_id = IF(first_sender_event_id = VALUES(first_sender_event_id),
                            VALUES(first_sender_user_id), first_sender_user_id),
  first_sender_at_ms = IF(first_sender_event_id = VALUES(first_sender_event_id),
                          VALUES(first_sender_at_ms), first_sender_at_ms),
  updated_at_ms = VALUES(updated_at_ms))sql";

// Outbox events with no ledger row: an anti-join, never a created_at watermark (created_at is
// not commit order). A plain read: the wallet's rows are not locked.
constexpr absl::string_view kUnprojectedCandidates = R"sql(
SELECT wo.event_id, COALESCE(wo.payload, ''), wo.created_at_ms
FROM wallet_outbox wo FORCE INDEX (idx_wallet_outbox_event_created)
LEFT JOIN wallet_projection_events pe
  ON pe.projection_name = 'user_gift_wall' AND pe.app_code = wo.app_code
     AND pe.event_id = wo.event_id
WHERE wo.app_code = ? AND wo.event_type = 'WalletGiftDebited'
  AND wo.created_at_ms >= ? AND wo.created_at_ms <= ?
  AND pe.event_id IS NULL
ORDER BY wo.created_at_ms ASC, wo.event_id ASC
LIMIT ?)sql";

// Where a scan window of the outbox ends: the created_at_ms of the window's last row.
constexpr absl::string_view kScanWindowEnd = R"sql(
SELECT created_at_ms FROM wallet_outbox FORCE INDEX (idx_wallet_outbox_event_created)
WHERE app_code = ? AND event_type = 'WalletGiftDebited'
  AND created_at_ms >= ? AND created_at_ms <= ?
ORDER BY created_at_ms ASC, event_id ASC
LIMIT 1 OFFSET ?)sql";
constexpr int kMaxWindowsPerPass = 20;

// Failed events whose backoff has passed, and processing rows whose lease has expired (a claim
// sets next_attempt_at_ms to the end of its lease).
constexpr absl::string_view kDueRetryCandidates = R"sql(
SELECT wo.event_id, COALESCE(wo.payload, ''), wo.created_at_ms
FROM wallet_projection_events pe
JOIN wallet_outbox wo ON wo.app_code = pe.app_code AND wo.event_id = pe.event_id
WHERE pe.projection_name = 'user_gift_wall' AND pe.app_code = ?
  AND pe.status IN ('failed', 'processing') AND pe.next_attempt_at_ms <= ?
  AND wo.event_type = 'WalletGiftDebited'
ORDER BY wo.created_at_ms ASC, wo.event_id ASC
LIMIT ?)sql";

// The dead row, locked: a requeue and a concurrent one must not both fold the event.
constexpr absl::string_view kLockLedgerRow = R"sql(
SELECT status, last_error FROM wallet_projection_events
WHERE projection_name = 'user_gift_wall' AND app_code = ? AND event_id = ?
FOR UPDATE)sql";

constexpr absl::string_view kReadLedgerStatus = R"sql(
SELECT status, last_error FROM wallet_projection_events
WHERE projection_name = 'user_gift_wall' AND app_code = ? AND event_id = ?)sql";

// The outbox is the source of truth; a plain read, the wallet's row is not locked.
constexpr absl::string_view kReadOutboxRow = R"sql(
SELECT event_type, COALESCE(payload, ''), created_at_ms FROM wallet_outbox
WHERE app_code = ? AND event_id = ?)sql";

constexpr absl::string_view kClaimDead =
    R"sql(
UPDATE wallet_projection_events
SET status = 'processing', retry_count = 0, requeue_count = requeue_count + 1, locked_by = ?,
    locked_until_ms = )sql" GIFTWALL_DB_NOW_MS
    R"sql( + ?, next_attempt_at_ms = )sql" GIFTWALL_DB_NOW_MS R"sql( + ?,
    projected_by = 'requeue', target_user_id = ?, last_error = '',
    updated_at_ms = )sql" GIFTWALL_DB_NOW_MS R"sql(
WHERE projection_name = 'user_gift_wall' AND app_code = ? AND event_id = ? AND status = 'dead')sql";

enum class ClaimState { kClaimed, kDone, kDead, kLeased };

struct Claim {
  ClaimState state = ClaimState::kLeased;
  int prior_failures = 0;
  std::string detail;
};

int64_t Ms(absl::Duration d) { return absl::ToInt64Milliseconds(d); }

absl::string_view Id(const GiftEvent& e) { return e.event_id; }

absl::StatusOr<int64_t> DbNow(SqlConnection& conn) {
  int64_t now = 0;
  absl::Status s = conn.Query(kSelectDbNow, {}, [&](const SqlRow& row) { now = row.Int(0); });
  if (!s.ok()) return s;
  return now;
}

}  // namespace

struct ProjectionRepository::Candidate {
  GiftEvent event;
  bool unprojected = false;  // found by the anti-join (no ledger row), not as a due retry
};

struct ProjectionRepository::Candidates {
  std::vector<Candidate> list;
  int64_t read_through_ms = 0;  // every unprojected outbox event before this is in `list`
  bool reached_newest = false;
};

// The event whose fold failed after it was claimed: its failure is recorded after rollback.
struct ProjectionRepository::FailedFold {
  const GiftEvent* event = nullptr;
  int64_t target_user_id = 0;
  int prior_failures = 0;
};

ProjectionRepository::ProjectionRepository(ConnectionPool& pool, ProjectionOptions options)
    : pool_(pool), options_(std::move(options)) {}

namespace {

// Claims `event` inside the open transaction on `conn` (DESIGN §2.3).
absl::StatusOr<Claim> ClaimEvent(SqlConnection& conn, const GiftEvent& event,
                                 int64_t target_user_id, ProjectedBy by,
                                 const ProjectionOptions& options) {
  const int64_t lease_ms = Ms(options.lease_ttl);
  absl::StatusOr<int64_t> inserted =
      conn.Execute(kClaimByInsert, {event.app_code, Id(event), options.worker_id, lease_ms,
                                    lease_ms, domain::ProjectedByName(by), target_user_id});
  if (inserted.ok()) return Claim{ClaimState::kClaimed, 0, ""};
  const int code = MysqlErrno(inserted.status());
  if (code == mysql_errno::kLockWaitTimeout) {
    // Another transaction holds the event and is still at work after the lock-wait bound.
    return Claim{ClaimState::kLeased, 0, "another caller is projecting this event right now"};
  }
  if (code != mysql_errno::kDuplicateKey) return inserted.status();

  // The row exists: look before touching it. Two passes at most: a re-claim that loses a race
  // reads the row again to report what the winner did.
  for (int pass = 0; pass < 2; ++pass) {
    std::optional<LedgerStatus> status;
    int retry_count = 0;
    std::string locked_by, last_error;
    int64_t locked_until_ms = 0, now_ms = 0;
    absl::Status read =
        conn.Query(kReadLedgerRow, {event.app_code, Id(event)}, [&](const SqlRow& row) {
          status = domain::ParseLedgerStatus(row.Str(0));
          retry_count = static_cast<int>(row.Int(1));
          locked_by = row.Str(2);
          locked_until_ms = row.Int(3);
          last_error = row.Str(4);
          now_ms = row.Int(5);
        });
    if (!read.ok()) return read;
    if (!status.has_value()) {
      // The holder rolled back between our insert and our read: the event is free again, but
      // re-inserting here could deadlock with other waiters. Let the caller retry.
      return Claim{ClaimState::kLeased, 0, "the event changed hands while it was being claimed"};
    }
    switch (*status) {
      case LedgerStatus::kDone:
        return Claim{ClaimState::kDone, retry_count, ""};
      case LedgerStatus::kDead:
        return Claim{ClaimState::kDead, retry_count, last_error};
      case LedgerStatus::kProcessing:
        if (locked_until_ms > now_ms) {
          return Claim{
              ClaimState::kLeased, retry_count,
              absl::StrFormat("held by %s for another %d ms", locked_by, locked_until_ms - now_ms)};
        }
        break;
      case LedgerStatus::kFailed:
        break;
    }
    if (pass > 0) break;
    absl::StatusOr<int64_t> reclaimed =
        conn.Execute(kReclaim, {options.worker_id, lease_ms, lease_ms, domain::ProjectedByName(by),
                                target_user_id, event.app_code, Id(event)});
    if (!reclaimed.ok()) {
      if (MysqlErrno(reclaimed.status()) == mysql_errno::kLockWaitTimeout) {
        return Claim{ClaimState::kLeased, retry_count,
                     "another caller is projecting this event right now"};
      }
      return reclaimed.status();
    }
    if (*reclaimed == 1) return Claim{ClaimState::kClaimed, retry_count, ""};
  }
  return Claim{ClaimState::kLeased, 0, "another caller claimed this event first"};
}

// Folds one valid gift event into its wall: the sender's row (if it has a sender), then the
// wall row, in that order for every event, so that concurrent folds lock rows in one order.
absl::Status FoldIntoWall(SqlConnection& conn, const GiftEvent& event, const GiftPayload& gift) {
  int64_t new_sender = 0;
  if (gift.has_sender()) {
    absl::StatusOr<int64_t> upserted =
        conn.Execute(kUpsertSender, {event.app_code, gift.target_user_id, gift.gift_id,
                                     gift.sender_user_id, gift.gift_count, gift.coin_amount,
                                     event.occurred_at_ms, event.occurred_at_ms});
    if (!upserted.ok()) return upserted.status();
    new_sender = *upserted == 1 ? 1 : 0;
  }
  const bool named = !gift.gift_name.empty(), iconed = !gift.gift_icon.empty();
  const absl::string_view no_event;
  return conn
      .Execute(kFoldIntoWall, {event.app_code,
                               gift.target_user_id,
                               gift.gift_id,
                               gift.gift_count,
                               gift.coin_amount,
                               event.occurred_at_ms,
                               event.occurred_at_ms,
                               gift.gift_name,
                               named ? event.occurred_at_ms : 0,
                               named ? Id(event) : no_event,
                               gift.gift_icon,
                               iconed ? event.occurred_at_ms : 0,
                               iconed ? Id(event) : no_event,
                               new_sender,
                               gift.sender_user_id,
                               gift.has_sender() ? event.occurred_at_ms : 0,
                               gift.has_sender() ? Id(event) : no_event,
                               event.app_code,
                               gift.target_user_id,
                               gift.gift_id,
                               gift.sender_user_id})
      .status();
}

ProjectionResult Result(ProjectionOutcome outcome, std::string detail = "") {
  return ProjectionResult{outcome, std::move(detail)};
}

// Folds an event that `tx` has claimed. An invalid payload, or a wall that cannot absorb the event
// (an overflow: rolled back to a savepoint taken after the claim), makes it dead at once with
// the reason kept; otherwise it is folded and marked done. An error is transient or contention:
// the caller rolls the transaction back.
absl::StatusOr<ProjectionResult> FoldClaimed(Transaction& tx, const GiftEvent& event,
                                             const absl::StatusOr<GiftPayload>& gift) {
  SqlConnection& conn = tx.conn();
  auto mark_dead = [&](absl::string_view why) -> absl::StatusOr<ProjectionResult> {
    const std::string reason = domain::LastError(why);
    absl::StatusOr<int64_t> marked = conn.Execute(kMarkDead, {reason, event.app_code, Id(event)});
    if (!marked.ok()) return marked.status();
    return Result(ProjectionOutcome::kDead, reason);
  };
  // A bad payload is permanent: dead at once, so that one bad event never blocks the relay's
  // queue (the seed retried it ten times).
  if (!gift.ok()) return mark_dead(gift.status().message());
  if (absl::Status s = tx.SetSavepoint(); !s.ok()) return s;
  if (absl::Status folded = FoldIntoWall(conn, event, *gift); !folded.ok()) {
    if (!IsPermanentDataError(folded)) return folded;
    if (absl::Status s = tx.RollbackToSavepoint(); !s.ok()) return s;
    return mark_dead(absl::StrCat("the wall cannot absorb this event: ", folded.message()));
  }
  absl::StatusOr<int64_t> done = conn.Execute(kMarkDone, {event.app_code, Id(event)});
  if (!done.ok()) return done.status();
  return Result(ProjectionOutcome::kProjected);
}

}  // namespace

absl::StatusOr<std::vector<ProjectionResult>> ProjectionRepository::FoldInTransaction(
    SqlConnection& conn, absl::Span<const GiftEvent* const> events,
    absl::Span<const absl::StatusOr<GiftPayload>> payloads, ProjectedBy by,
    std::optional<FailedFold>* failed) {
  absl::StatusOr<Transaction> tx = Transaction::Begin(conn);
  if (!tx.ok()) return tx.status();

  // Claim in a fixed order (by wall row, then event) so that overlapping batches take their
  // locks in the same order: fewer deadlocks. Duplicates keep their relative order, so the
  // first copy of an event is the one that projects it.
  std::vector<size_t> order(events.size());
  std::iota(order.begin(), order.end(), 0);
  auto sort_key = [&](size_t i) {
    const GiftPayload* gift = payloads[i].ok() ? &*payloads[i] : nullptr;
    return std::make_tuple(
        absl::string_view(events[i]->app_code), gift != nullptr ? gift->target_user_id : 0,
        gift != nullptr ? absl::string_view(gift->gift_id) : absl::string_view(), Id(*events[i]));
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return sort_key(a) < sort_key(b); });

  std::vector<ProjectionResult> results(events.size());
  for (size_t i : order) {
    const GiftEvent& event = *events[i];
    const absl::StatusOr<GiftPayload>& gift = payloads[i];
    const int64_t target_user_id = gift.ok() ? gift->target_user_id : 0;
    absl::StatusOr<Claim> claim = ClaimEvent(conn, event, target_user_id, by, options_);
    if (!claim.ok()) return claim.status();
    switch (claim->state) {
      case ClaimState::kDone:
        results[i] = Result(ProjectionOutcome::kAlreadyProjected);
        continue;
      case ClaimState::kDead:
        results[i] = Result(ProjectionOutcome::kDead, claim->detail);
        continue;
      case ClaimState::kLeased:
        results[i] = Result(ProjectionOutcome::kLeased, claim->detail);
        continue;
      case ClaimState::kClaimed:
        break;
    }

    if (gift.ok()) *failed = FailedFold{&event, target_user_id, claim->prior_failures};
    absl::StatusOr<ProjectionResult> result = FoldClaimed(*tx, event, gift);
    if (!result.ok()) return result.status();
    results[i] = *std::move(result);
    // A failed COMMIT is charged to a single event, as in the seed; in a batch it is charged
    // to no one (the relay redelivers the batch, and the scanner finds events with no ledger
    // row).
    if (events.size() > 1 || results[i].outcome != ProjectionOutcome::kProjected) failed->reset();
  }
  if (absl::Status s = tx->Commit(); !s.ok()) return s;
  failed->reset();
  return results;
}

absl::StatusOr<std::vector<ProjectionResult>> ProjectionRepository::FoldWithRetries(
    absl::Span<const GiftEvent* const> events, ProjectedBy by) {
  std::vector<absl::StatusOr<GiftPayload>> payloads;
  payloads.reserve(events.size());
  for (const GiftEvent* event : events) {
    payloads.push_back(domain::ParseGiftPayload(event->payload_json));
  }
  // A failure seen on a session that is gone is recorded once that session is back in the pool,
  // so that recording it does not need a session more than the pool may have.
  std::optional<std::pair<FailedFold, absl::Status>> unrecorded;
  absl::StatusOr<std::vector<ProjectionResult>> results =
      RunWithContentionRetries<std::vector<ProjectionResult>>(
          pool_, options_.retry,
          [&](SqlConnection& conn) -> absl::StatusOr<std::vector<ProjectionResult>> {
            std::optional<FailedFold> failed;
            absl::StatusOr<std::vector<ProjectionResult>> folded =
                FoldInTransaction(conn, events, payloads, by, &failed);
            if (folded.ok() || IsContention(folded.status())) return folded;
            // The transaction is rolled back by now; the failure is recorded on its own.
            if (failed.has_value()) {
              if (conn.broken()) {
                unrecorded.emplace(*failed, folded.status());
              } else {
                RecordFailure(&conn, *failed, folded.status(), by);
              }
            }
            return folded;
          });
  if (unrecorded.has_value()) {
    RecordFailure(nullptr, unrecorded->first, unrecorded->second, by);
  }
  if (results.ok() || results.status().code() == absl::StatusCode::kUnavailable ||
      results.status().code() == absl::StatusCode::kAborted) {
    return results;
  }
  return absl::UnavailableError(
      absl::StrCat("projection failed, will be retried: ", results.status().message()));
}

void ProjectionRepository::RecordFailure(SqlConnection* conn, const FailedFold& failed,
                                         const absl::Status& cause, ProjectedBy by) {
  // Without a session (the failed one is gone, which is often why it failed), take one.
  std::optional<PooledConnection> fresh;
  if (conn == nullptr) {
    absl::StatusOr<PooledConnection> acquired = pool_.Acquire();
    if (!acquired.ok()) {
      LOG(WARNING) << "event " << failed.event->app_code << "/" << failed.event->event_id
                   << " failed (" << cause
                   << ") and the failure could not be recorded: " << acquired.status();
      return;
    }
    fresh.emplace(*std::move(acquired));
    conn = &**fresh;
  }
  const GiftEvent& event = *failed.event;
  const std::string reason = domain::LastError(cause.message());
  const int64_t max_retries = options_.retry.max_retries;
  const int64_t backoff_ms =
      Ms(domain::FailureBackoff(options_.retry, failed.prior_failures + 1, Jitter()));
  absl::StatusOr<int64_t> updated =
      conn->Execute(kRecordFailure, {max_retries, backoff_ms, reason, event.app_code, Id(event)});
  if (updated.ok() && *updated == 0) {
    updated =
        conn->Execute(kInsertFailure, {event.app_code, Id(event), max_retries, backoff_ms, reason,
                                       domain::ProjectedByName(by), failed.target_user_id});
  }
  if (!updated.ok()) {
    LOG(WARNING) << "event " << event.app_code << "/" << event.event_id << " failed (" << cause
                 << ") and the failure could not be recorded: " << updated.status();
    return;
  }
  LOG(WARNING) << "event " << event.app_code << "/" << event.event_id
               << " failed and will be retried: " << cause;
}

absl::StatusOr<ProjectionResult> ProjectionRepository::Project(const GiftEvent& event,
                                                               ProjectedBy by) {
  const GiftEvent* events[] = {&event};
  absl::StatusOr<std::vector<ProjectionResult>> results = FoldWithRetries(events, by);
  if (!results.ok()) return results.status();
  return std::move(results->front());
}

absl::StatusOr<std::vector<ProjectionResult>> ProjectionRepository::ProjectBatch(
    absl::Span<const GiftEvent> events, ProjectedBy by) {
  if (events.empty()) return std::vector<ProjectionResult>();
  std::vector<const GiftEvent*> pointers;
  pointers.reserve(events.size());
  for (const GiftEvent& event : events) pointers.push_back(&event);
  return FoldWithRetries(pointers, by);
}

absl::StatusOr<ProjectionRepository::Candidates> ProjectionRepository::FindCandidates(
    SqlConnection& conn, const CatchUpRequest& request, int limit, int64_t now_ms) {
  Candidates found;
  auto collect = [&](bool unprojected) {
    return [&, unprojected](const SqlRow& row) {
      Candidate c;
      c.event.app_code = request.app_code;
      c.event.event_id = row.Str(0);
      c.event.payload_json = row.Str(1);
      c.event.occurred_at_ms = row.Int(2);
      c.unprojected = unprojected;
      found.list.push_back(std::move(c));
    };
  };
  // The anti-join reads the outbox a window of request.window_rows rows at a time, so that no
  // statement reads all history at once (a full sweep over millions of projected events would
  // outlast the statement time limit): window after window until it has `limit` candidates, has
  // read up to `newest`, or has read kMaxWindowsPerPass windows.
  const int64_t newest = now_ms - Ms(request.min_age);
  int64_t start = request.horizon_ms;
  found.read_through_ms = start;
  for (int window = 0; window < kMaxWindowsPerPass && start <= newest; ++window) {
    std::optional<int64_t> end;
    absl::Status s =
        conn.Query(kScanWindowEnd,
                   {request.app_code, start, newest, std::max<int64_t>(request.window_rows, 1) - 1},
                   [&](const SqlRow& row) { end = row.Int(0); });
    if (!s.ok()) return s;
    // Fewer rows than a window left, or a window of rows that all share one millisecond (it
    // cannot be split by time): read up to `newest`.
    const bool last = !end.has_value() || *end == start;
    const int64_t until = last ? newest : *end;
    s = conn.Query(
        kUnprojectedCandidates,
        {request.app_code, start, until, int64_t{limit} - static_cast<int64_t>(found.list.size())},
        collect(true));
    if (!s.ok()) return s;
    if (found.list.size() >= static_cast<size_t>(limit)) {
      // The window was not read to its end: the next pass starts at the last candidate.
      found.read_through_ms = found.list.back().event.occurred_at_ms;
      break;
    }
    found.read_through_ms = until;
    found.reached_newest = last;
    if (last) break;
    start = until + 1;  // every row at `until` was in this window
  }
  absl::Status s =
      conn.Query(kDueRetryCandidates, {request.app_code, now_ms, int64_t{limit}}, collect(false));
  if (!s.ok()) return s;
  std::stable_sort(found.list.begin(), found.list.end(),
                   [](const Candidate& a, const Candidate& b) {
                     return std::tie(a.event.occurred_at_ms, a.event.event_id) <
                            std::tie(b.event.occurred_at_ms, b.event.event_id);
                   });
  return found;
}

absl::StatusOr<CatchUpPass> ProjectionRepository::ProjectPendingGiftWallEvents(
    const CatchUpRequest& request) {
  const int limit = std::clamp(request.limit <= 0 ? 20 : request.limit, 1, 100);
  Candidates found;
  {
    absl::StatusOr<PooledConnection> conn = pool_.Acquire();
    if (!conn.ok()) return conn.status();
    absl::StatusOr<int64_t> now = DbNow(**conn);
    if (!now.ok()) return now.status();
    absl::StatusOr<Candidates> read = FindCandidates(**conn, request, limit, *now);
    if (!read.ok()) return read.status();
    found = *std::move(read);
  }

  CatchUpPass pass;
  // Where the next pass may start: what the anti-join read through, unless some of what it
  // found is left for later (a pass projects at most `limit` events, due retries included).
  pass.resume_from_ms = found.read_through_ms;
  pass.reached_newest = found.reached_newest;
  std::vector<Candidate>& candidates = found.list;
  if (candidates.size() > static_cast<size_t>(limit)) {
    for (size_t i = static_cast<size_t>(limit); i < candidates.size(); ++i) {
      if (candidates[i].unprojected) {
        pass.resume_from_ms = std::min(pass.resume_from_ms, candidates[i].event.occurred_at_ms);
        pass.reached_newest = false;
        break;
      }
    }
    candidates.resize(static_cast<size_t>(limit));
  }

  for (const Candidate& c : candidates) {
    ++pass.found;
    absl::StatusOr<ProjectionResult> result = Project(c.event, ProjectedBy::kScan);
    if (!result.ok()) {
      return absl::Status(result.status().code(),
                          absl::StrCat("catch-up for app ", request.app_code, " stopped at event ",
                                       c.event.event_id, ": ", result.status().message()));
    }
    switch (result->outcome) {
      case ProjectionOutcome::kProjected:
        ++pass.projected;
        ++pass.processed;
        break;
      case ProjectionOutcome::kDead:
        ++pass.dead;
        ++pass.processed;
        break;
      case ProjectionOutcome::kLeased:
        // Its holder may still roll back: keep the event inside the next pass's window.
        if (c.unprojected && c.event.occurred_at_ms < pass.resume_from_ms) {
          pass.resume_from_ms = c.event.occurred_at_ms;
          pass.reached_newest = false;
        }
        break;
      case ProjectionOutcome::kAlreadyProjected:
      case ProjectionOutcome::kIgnored:
        break;
    }
  }
  return pass;
}

absl::StatusOr<RequeueResult> ProjectionRepository::RequeueDeadEvent(
    absl::string_view app_code, absl::string_view event_id, absl::string_view error_contains,
    bool dry_run) {
  return RunWithContentionRetries<RequeueResult>(
      pool_, options_.retry, [&](SqlConnection& conn) -> absl::StatusOr<RequeueResult> {
        std::optional<Transaction> tx;
        if (!dry_run) {
          absl::StatusOr<Transaction> begun = Transaction::Begin(conn);
          if (!begun.ok()) return begun.status();
          tx.emplace(*std::move(begun));
        }
        RequeueResult result;
        std::optional<std::string> status;
        std::string last_error;
        absl::Status s = conn.Query(dry_run ? kReadLedgerStatus : kLockLedgerRow,
                                    {app_code, event_id}, [&](const SqlRow& row) {
                                      status = row.Str(0);
                                      last_error = row.Str(1);
                                    });
        if (!s.ok()) return s;
        if (!status.has_value()) {
          result.reason = "no ledger row";
          return result;
        }
        if (*status != domain::LedgerStatusName(LedgerStatus::kDead)) {
          result.reason = absl::StrCat("not dead (status ", *status, ")");
          return result;
        }
        if (!absl::StrContains(last_error, error_contains)) {
          result.reason = absl::StrCat("last_error does not contain \"", error_contains, "\"");
          return result;
        }
        result.matched = true;

        std::optional<GiftEvent> event;
        std::string event_type;
        s = conn.Query(kReadOutboxRow, {app_code, event_id}, [&](const SqlRow& row) {
          event_type = row.Str(0);
          event = GiftEvent{std::string(app_code), std::string(event_id), row.Str(1), row.Int(2)};
        });
        if (!s.ok()) return s;
        if (!event.has_value()) {
          result.reason = "outbox row is gone";
          return result;
        }
        if (!domain::IsGiftEvent(event_type)) {
          result.reason = absl::StrCat("outbox row is a ", event_type, " event");
          return result;
        }
        const absl::StatusOr<GiftPayload> gift = domain::ParseGiftPayload(event->payload_json);
        if (dry_run) {
          // Whether the wall can absorb the event is known only by trying; the payload is checked.
          result.requeued = gift.ok();
          if (!gift.ok()) {
            result.reason = absl::StrCat("would stay dead: ", gift.status().message());
          }
          return result;
        }
        const int64_t lease_ms = Ms(options_.lease_ttl);
        absl::StatusOr<int64_t> claimed =
            conn.Execute(kClaimDead, {options_.worker_id, lease_ms, lease_ms,
                                      gift.ok() ? gift->target_user_id : 0, app_code, event_id});
        if (!claimed.ok()) return claimed.status();
        absl::StatusOr<ProjectionResult> folded = FoldClaimed(*tx, *event, gift);
        if (!folded.ok()) return folded.status();
        if (absl::Status committed = tx->Commit(); !committed.ok()) return committed;
        result.requeued = folded->outcome == ProjectionOutcome::kProjected;
        if (!result.requeued) result.reason = absl::StrCat("still dead: ", folded->detail);
        return result;
      });
}

}  // namespace giftwall::storage
