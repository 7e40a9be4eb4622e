#include "server/storage/wall_audit_repository.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "server/common/status_macros.h"
#include "server/domain/envelope.h"
#include "server/domain/wall_cap.h"
#include "server/storage/contention.h"
#include "server/storage/db_clock.h"
#include "server/storage/json_rows.h"
#include "server/storage/outbox_repository.h"

namespace giftwall::storage {
namespace {

// Users are visited in chunks of this many, so that memory stays bounded on a large app.
constexpr int64_t kUsersPerChunk = 200;

constexpr absl::string_view kLedgerUsers = R"sql(
SELECT DISTINCT target_user_id FROM wallet_projection_events
  FORCE INDEX (idx_projection_events_user)
WHERE projection_name = 'user_gift_wall' AND app_code = ? AND target_user_id > ?
ORDER BY target_user_id
LIMIT ?)sql";

constexpr absl::string_view kWallUsers = R"sql(
SELECT DISTINCT user_id FROM user_gift_wall WHERE app_code = ? AND user_id > ?
ORDER BY user_id
LIMIT ?)sql";

// The done events of the users in (?, ?], with their outbox rows (the source of truth) under one
// of the codes the outbox holds the app's events under.
constexpr absl::string_view kDoneEvents = R"sql(
SELECT pe.target_user_id, pe.event_id, wo.event_id IS NOT NULL, COALESCE(wo.event_type, ''),
       COALESCE(wo.payload, ''), COALESCE(wo.created_at_ms, 0)
FROM wallet_projection_events pe FORCE INDEX (idx_projection_events_user)
LEFT JOIN wallet_outbox wo ON wo.app_code = ? AND wo.event_id = pe.event_id
WHERE pe.projection_name = 'user_gift_wall' AND pe.app_code = ?
  AND pe.target_user_id > ? AND pe.target_user_id <= ? AND pe.status = 'done')sql";

// The ids of one user's done events: index-only (idx_projection_events_user), cheap under locks.
constexpr absl::string_view kDoneEventIds = R"sql(
SELECT event_id FROM wallet_projection_events FORCE INDEX (idx_projection_events_user)
WHERE projection_name = 'user_gift_wall' AND app_code = ? AND target_user_id = ?
  AND status = 'done')sql";

constexpr absl::string_view kOneDoneEvent = R"sql(
SELECT pe.target_user_id, pe.event_id, wo.event_id IS NOT NULL, COALESCE(wo.event_type, ''),
       COALESCE(wo.payload, ''), COALESCE(wo.created_at_ms, 0)
FROM wallet_projection_events pe
LEFT JOIN wallet_outbox wo ON wo.app_code = ? AND wo.event_id = pe.event_id
WHERE pe.projection_name = 'user_gift_wall' AND pe.app_code = ? AND pe.event_id = ?
  AND pe.status = 'done')sql";

// Done events whose gifts a rebuild finds beyond the wall's cap (DESIGN §2.14) go dead:
// [[event_id_hex], ...].
constexpr absl::string_view kKillDoneEvents = R"sql(
UPDATE JSON_TABLE(?, '$[*]' COLUMNS (j_id VARCHAR(512) CHARACTER SET ascii PATH '$[0]')) AS jt
STRAIGHT_JOIN wallet_projection_events pe
  ON pe.projection_name = 'user_gift_wall' AND pe.app_code = ? AND pe.event_id = UNHEX(jt.j_id)
SET pe.status = 'dead', pe.last_error = ?, pe.locked_by = '', pe.locked_until_ms = 0,
    pe.next_attempt_at_ms = 0, pe.updated_at_ms = )sql" GIFTWALL_DB_NOW_MS R"sql(
WHERE pe.status = 'done')sql";

// Event ids per kKillDoneEvents statement.
constexpr size_t kKillBatch = 1000;

constexpr absl::string_view kDeleteGiftSenders =
    "DELETE FROM user_gift_wall_sender WHERE app_code = ? AND user_id = ? AND gift_id = ?";
constexpr absl::string_view kDeleteGift =
    "DELETE FROM user_gift_wall WHERE app_code = ? AND user_id = ? AND gift_id = ?";

constexpr absl::string_view kWallRows = R"sql(
SELECT user_id, gift_id, gift_count, total_coins, first_received_at_ms, last_received_at_ms,
       gift_name, gift_name_at_ms, gift_name_event_id, gift_icon, gift_icon_at_ms,
       gift_icon_event_id, sender_count, top_sender_user_id, top_sender_count, top_sender_coins,
       top_sender_first_sent_at_ms, top_sender_last_sent_at_ms, first_sender_user_id,
       first_sender_at_ms, first_sender_event_id
FROM user_gift_wall WHERE app_code = ? AND user_id > ? AND user_id <= ?)sql";

constexpr absl::string_view kSenderRows = R"sql(
SELECT user_id, gift_id, sender_user_id, sent_count, sent_coins, first_sent_at_ms,
       last_sent_at_ms
FROM user_gift_wall_sender WHERE app_code = ? AND user_id > ? AND user_id <= ?)sql";

constexpr absl::string_view kInsertWallRow = R"sql(
INSERT INTO user_gift_wall
  (app_code, user_id, gift_id, gift_count, total_coins, first_received_at_ms,
   last_received_at_ms, gift_name, gift_name_at_ms, gift_name_event_id, gift_icon,
   gift_icon_at_ms, gift_icon_event_id, sender_count, top_sender_user_id, top_sender_count,
   top_sender_coins, top_sender_first_sent_at_ms, top_sender_last_sent_at_ms,
   first_sender_user_id, first_sender_at_ms, first_sender_event_id, created_at_ms, updated_at_ms)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, )sql" GIFTWALL_DB_NOW_MS
                                             R"sql(, )sql" GIFTWALL_DB_NOW_MS R"sql())sql";

constexpr absl::string_view kInsertSenderRow = R"sql(
INSERT INTO user_gift_wall_sender
  (app_code, user_id, gift_id, sender_user_id, sent_count, sent_coins, first_sent_at_ms,
   last_sent_at_ms, created_at_ms, updated_at_ms)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, )sql" GIFTWALL_DB_NOW_MS R"sql(, )sql" GIFTWALL_DB_NOW_MS
                                               R"sql())sql";

// User-level lock names are limited to 64 characters on MySQL: hash the variable part.
constexpr absl::string_view kGetRebuildLock = R"sql(
SELECT COALESCE(GET_LOCK(CONCAT('giftwall.rebuild.', SHA1(CONCAT(DATABASE(), '/', ?))), 0), 0))sql";
constexpr absl::string_view kReleaseRebuildLock = R"sql(
SELECT RELEASE_LOCK(CONCAT('giftwall.rebuild.', SHA1(CONCAT(DATABASE(), '/', ?)))))sql";

const std::string& Locking(absl::string_view select) {
  static const auto* const wall = new std::string(absl::StrCat(kWallRows, " FOR UPDATE"));
  static const auto* const senders = new std::string(absl::StrCat(kSenderRows, " FOR UPDATE"));
  return select == kWallRows ? *wall : *senders;
}

// What the database holds for one user, and what its done events say it should hold.
struct UserState {
  std::map<std::string, domain::FoldEvent> events;  // by event id
  std::string unverifiable;  // why the user cannot be recomputed; empty if it can
  domain::UserWall actual;
};

// Reads the wall and sender rows of the users in (lo, hi], locked if `lock`.
absl::Status ReadWallRows(SqlConnection& conn, absl::string_view app_code, int64_t lo, int64_t hi,
                          bool lock, std::map<int64_t, UserState>* users) {
  absl::Status s = conn.Query(
      lock ? Locking(kSenderRows) : kSenderRows, {app_code, lo, hi}, [&](const SqlRow& row) {
        (*users)[row.Int(0)].actual[row.Str(1)].senders[row.Int(2)] =
            domain::SenderRow{row.Int(3), row.Int(4), row.Int(5), row.Int(6)};
      });
  if (!s.ok()) return s;
  return conn.Query(
      lock ? Locking(kWallRows) : kWallRows, {app_code, lo, hi}, [&](const SqlRow& row) {
        domain::WallRow& w = (*users)[row.Int(0)].actual[row.Str(1)];
        w.gift_count = row.Int(2);
        w.total_coins = row.Int(3);
        w.first_received_at_ms = row.Int(4);
        w.last_received_at_ms = row.Int(5);
        w.gift_name = row.Str(6);
        w.gift_name_at_ms = row.Int(7);
        w.gift_name_event_id = row.Str(8);
        w.gift_icon = row.Str(9);
        w.gift_icon_at_ms = row.Int(10);
        w.gift_icon_event_id = row.Str(11);
        w.sender_count = row.Int(12);
        w.top_sender_user_id = row.Int(13);
        w.top_sender = domain::SenderRow{row.Int(14), row.Int(15), row.Int(16), row.Int(17)};
        w.first_sender_user_id = row.Int(18);
        w.first_sender_at_ms = row.Int(19);
        w.first_sender_event_id = row.Str(20);
      });
}

// A row of kDoneEvents or kOneDoneEvent.
struct DoneEvent {
  int64_t user = 0;
  std::string event_id;
  bool in_outbox = false;
  std::string event_type;
  std::string payload;
  int64_t created_at_ms = 0;
};

// Reads `query` (kDoneEvents or kOneDoneEvent: the outbox code its first parameter, `params` the
// rest) under each of `outbox_codes`, and adds every done event to its user's state: with its
// outbox row under whichever code holds it, or as the reason the user cannot be verified.
absl::Status ReadDoneEvents(SqlConnection& conn, absl::string_view query,
                            const std::vector<std::string>& outbox_codes,
                            absl::Span<const SqlParam> params, absl::string_view app_code,
                            std::map<int64_t, UserState>* users) {
  std::map<std::string, DoneEvent> events;  // by event id
  for (const std::string& code : outbox_codes) {
    std::vector<SqlParam> all = {code};
    all.insert(all.end(), params.begin(), params.end());
    RETURN_IF_ERROR(conn.Query(query, all, [&](const SqlRow& row) {
      DoneEvent& e = events[row.Str(1)];
      if (e.in_outbox) return;  // found under an earlier code
      e = DoneEvent{row.Int(0), row.Str(1), row.Int(2) != 0, row.Str(3), row.Str(4), row.Int(5)};
    }));
  }
  for (auto& [id, e] : events) {
    UserState& state = (*users)[e.user];
    if (!state.unverifiable.empty()) continue;
    if (!e.in_outbox) {
      state.unverifiable = absl::StrCat("the outbox row of done event ", id, " is gone");
      continue;
    }
    // The same rules as every path that projects: envelope, then payload.
    absl::StatusOr<domain::GiftPayload> gift = domain::ParseGiftEvent(
        domain::GiftEvent{std::string(app_code), id, std::move(e.payload), e.created_at_ms});
    if (!domain::IsGiftEvent(e.event_type) || !gift.ok() || gift->target_user_id != e.user) {
      state.unverifiable =
          absl::StrCat("the outbox row of done event ", id, " no longer folds into it");
      continue;
    }
    state.events[id] = domain::FoldEvent{id, e.created_at_ms, *std::move(gift)};
  }
  return absl::OkStatus();
}

// The fold of a user's events, or why it cannot be computed. A user with wall rows but no done
// events at all has no evidence in the ledger (pruned, or from before it): left alone too.
absl::StatusOr<domain::UserWall> Expected(UserState& state) {
  if (state.unverifiable.empty() && state.events.empty() && !state.actual.empty()) {
    state.unverifiable = "wall rows but no done events in the ledger";
  }
  if (!state.unverifiable.empty()) return absl::FailedPreconditionError(state.unverifiable);
  std::vector<domain::FoldEvent> events;
  events.reserve(state.events.size());
  for (const auto& [id, e] : state.events) events.push_back(e);
  absl::StatusOr<domain::UserWall> wall = domain::FoldUserWall(events);
  if (!wall.ok()) state.unverifiable = std::string(wall.status().message());
  return wall;
}

// The next chunk of users after `after`: (after, hi], and whether there are any.
absl::StatusOr<int64_t> NextChunkEnd(SqlConnection& conn, absl::string_view app_code,
                                     int64_t after) {
  int64_t hi = std::numeric_limits<int64_t>::max();
  bool any = false;
  for (absl::string_view query : {kLedgerUsers, kWallUsers}) {
    int64_t count = 0, last = 0;
    absl::Status s = conn.Query(query, {app_code, after, kUsersPerChunk}, [&](const SqlRow& row) {
      ++count;
      last = row.Int(0);
    });
    if (!s.ok()) return s;
    any = any || count > 0;
    if (count == kUsersPerChunk) hi = std::min(hi, last);  // more may follow: stop there
  }
  return any ? hi : after;
}

}  // namespace

RebuildLock::~RebuildLock() {
  if (!conn_.has_value()) return;
  absl::Status s = (*conn_)->Query(kReleaseRebuildLock, {app_code_}, [](const SqlRow&) {});
  if (!s.ok()) {
    // A session that cannot release its lock must not be reused while holding it.
    (*conn_)->MarkBroken();
    LOG(WARNING) << "releasing the rebuild lock of " << app_code_ << ": " << s;
  }
}

absl::StatusOr<RebuildLock> WallAuditRepository::LockRebuild(absl::string_view app_code) {
  ASSIGN_OR_RETURN(PooledConnection conn, pool_.Acquire());
  int64_t locked = 0;
  absl::Status s =
      conn->Query(kGetRebuildLock, {app_code}, [&](const SqlRow& row) { locked = row.Int(0); });
  if (!s.ok()) return s;
  if (locked != 1) {
    return absl::FailedPreconditionError(
        absl::StrCat("a rebuild of app_code ", app_code, " is already running"));
  }
  return RebuildLock(std::move(conn), std::string(app_code));
}

absl::StatusOr<VerifyReport> WallAuditRepository::Verify(absl::string_view app_code,
                                                         int64_t user_id,
                                                         const std::function<bool()>& cancelled,
                                                         size_t max_samples) {
  ASSIGN_OR_RETURN(PooledConnection conn, pool_.Acquire());
  ASSIGN_OR_RETURN(const OutboxAppCodes codes, ReadOutboxAppCodes(*conn));
  const std::vector<std::string> outbox_codes = codes.Of(std::string(app_code));
  VerifyReport report;
  int64_t after = user_id > 0 ? user_id - 1 : 0;
  for (;;) {
    if (cancelled && cancelled()) return absl::CancelledError("the verify was cancelled");
    // A snapshot per chunk of users: each user is compared within one (a projection committing
    // meanwhile is not half seen), and no snapshot lasts a whole app, which on a large one would
    // hold InnoDB's purge back for as long.
    ASSIGN_OR_RETURN(const Transaction chunk,
                     Transaction::Begin(*conn, Transaction::Isolation::kConsistentSnapshot));
    int64_t hi = user_id;
    if (user_id <= 0) {
      absl::StatusOr<int64_t> end = NextChunkEnd(*conn, app_code, after);
      if (!end.ok()) return end.status();
      if (*end == after) break;
      hi = *end;
    }
    std::map<int64_t, UserState> users;
    if (absl::Status s = ReadWallRows(*conn, app_code, after, hi, /*lock=*/false, &users);
        !s.ok()) {
      return s;
    }
    RETURN_IF_ERROR(
        ReadDoneEvents(*conn, kDoneEvents, outbox_codes, {app_code, after, hi}, app_code, &users));
    for (auto& [user, state] : users) {
      if (user <= 0) continue;  // dead events whose payload named no user
      ++report.users_checked;
      absl::StatusOr<domain::UserWall> expected = Expected(state);
      if (!expected.ok()) {
        report.unverifiable_users.push_back(user);
        continue;
      }
      int64_t rows = 0;
      std::vector<domain::WallDifference> diffs =
          domain::DiffUserWalls(*expected, state.actual, &rows);
      report.rows_checked += rows;
      if (diffs.empty()) continue;
      report.drifted_users.push_back(user);
      std::map<std::pair<std::string, int64_t>, bool> drifted_rows;
      for (domain::WallDifference& d : diffs) {
        drifted_rows[{d.gift_id, d.sender_user_id}] = true;
        if (report.samples.size() < max_samples) report.samples.push_back({user, std::move(d)});
      }
      report.drifted += static_cast<int64_t>(drifted_rows.size());
    }
    if (user_id > 0 || hi == std::numeric_limits<int64_t>::max()) break;
    after = hi;
  }
  return report;
}

namespace {

// Replaces one gift's wall and sender rows with `expected` (or removes them if null).
absl::Status WriteGift(SqlConnection& conn, absl::string_view app_code, int64_t user_id,
                       const std::string& gift_id, const domain::WallRow* expected) {
  for (absl::string_view sql : {kDeleteGiftSenders, kDeleteGift}) {
    absl::StatusOr<int64_t> deleted = conn.Execute(sql, {app_code, user_id, gift_id});
    if (!deleted.ok()) return deleted.status();
  }
  if (expected == nullptr) return absl::OkStatus();
  const domain::WallRow& w = *expected;
  absl::StatusOr<int64_t> inserted = conn.Execute(kInsertWallRow, {app_code,
                                                                   user_id,
                                                                   gift_id,
                                                                   w.gift_count,
                                                                   w.total_coins,
                                                                   w.first_received_at_ms,
                                                                   w.last_received_at_ms,
                                                                   w.gift_name,
                                                                   w.gift_name_at_ms,
                                                                   w.gift_name_event_id,
                                                                   w.gift_icon,
                                                                   w.gift_icon_at_ms,
                                                                   w.gift_icon_event_id,
                                                                   w.sender_count,
                                                                   w.top_sender_user_id,
                                                                   w.top_sender.sent_count,
                                                                   w.top_sender.sent_coins,
                                                                   w.top_sender.first_sent_at_ms,
                                                                   w.top_sender.last_sent_at_ms,
                                                                   w.first_sender_user_id,
                                                                   w.first_sender_at_ms,
                                                                   w.first_sender_event_id});
  if (!inserted.ok()) return inserted.status();
  for (const auto& [sender, s] : w.senders) {
    inserted =
        conn.Execute(kInsertSenderRow, {app_code, user_id, gift_id, sender, s.sent_count,
                                        s.sent_coins, s.first_sent_at_ms, s.last_sent_at_ms});
    if (!inserted.ok()) return inserted.status();
  }
  return absl::OkStatus();
}

// Rebuild's share of the cap: the gifts of `expected` beyond it are taken off, and their done
// events written dead, as live projection would have refused them.
absl::Status KillBeyondCap(SqlConnection& conn, absl::string_view app_code, int64_t user_id,
                           int64_t max_wall_gifts, const UserState& state,
                           domain::UserWall* expected) {
  const std::set<std::string> beyond = domain::GiftsBeyondCap(*expected, max_wall_gifts);
  if (beyond.empty()) return absl::OkStatus();
  for (const std::string& gift_id : beyond) expected->erase(gift_id);
  std::vector<std::string> ids;
  for (const auto& [id, event] : state.events) {
    if (beyond.count(event.gift.gift_id) > 0) ids.push_back(id);
  }
  LOG(WARNING) << "rebuild of app " << app_code << " user " << user_id << ": " << beyond.size()
               << " gift(s) beyond the cap of " << max_wall_gifts << ", their " << ids.size()
               << " event(s) go dead";
  const std::string reason = domain::WallCapReason(user_id, max_wall_gifts);
  for (size_t begin = 0; begin < ids.size(); begin += kKillBatch) {
    JsonRows json;
    for (size_t i = begin; i < std::min(ids.size(), begin + kKillBatch); ++i) {
      json.Row().Bytes(ids[i]);
    }
    RETURN_IF_ERROR(conn.Execute(kKillDoneEvents, {json.Finish(), app_code, reason}).status());
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<bool> WallAuditRepository::RebuildUser(absl::string_view app_code, int64_t user_id) {
  // The bulk of the reading happens before any lock is taken, so that a user with a long
  // history does not hold up live projection while it is read: under the locks, only the events
  // done since are fetched.
  std::map<int64_t, UserState> before;
  std::vector<std::string> outbox_codes;
  {
    ASSIGN_OR_RETURN(PooledConnection conn, pool_.Acquire());
    ASSIGN_OR_RETURN(const OutboxAppCodes codes, ReadOutboxAppCodes(*conn));
    outbox_codes = codes.Of(std::string(app_code));
    RETURN_IF_ERROR(ReadDoneEvents(*conn, kDoneEvents, outbox_codes,
                                   {app_code, user_id - 1, user_id}, app_code, &before));
  }
  return RunWithContentionRetries<bool>(
      pool_, retry_, [&](SqlConnection& conn) -> absl::StatusOr<bool> {
        // REPEATABLE READ: the locking reads take next-key locks, so that a projection of a gift
        // new to this wall waits too, not only those of gifts already on it. Sender rows are
        // locked before wall rows: the order every projection takes them in.
        absl::StatusOr<Transaction> tx =
            Transaction::Begin(conn, Transaction::Isolation::kRepeatableRead);
        if (!tx.ok()) return tx.status();
        std::map<int64_t, UserState> users;
        users[user_id] = before[user_id];
        UserState& state = users[user_id];
        state.actual.clear();
        if (absl::Status s =
                ReadWallRows(conn, app_code, user_id - 1, user_id, /*lock=*/true, &users);
            !s.ok()) {
          return s;
        }
        // The first plain read: the snapshot is taken now, with every lock held.
        std::set<std::string> done;
        absl::Status s = conn.Query(kDoneEventIds, {app_code, user_id},
                                    [&](const SqlRow& row) { done.insert(row.Str(0)); });
        if (!s.ok()) return s;
        for (auto it = state.events.begin(); it != state.events.end();) {
          it = done.count(it->first) > 0 ? std::next(it) : state.events.erase(it);
        }
        for (const std::string& id : done) {
          if (state.events.count(id) > 0 || !state.unverifiable.empty()) continue;
          RETURN_IF_ERROR(
              ReadDoneEvents(conn, kOneDoneEvent, outbox_codes, {app_code, id}, app_code, &users));
        }
        absl::StatusOr<domain::UserWall> expected = Expected(state);
        if (!expected.ok()) return false;
        RETURN_IF_ERROR(KillBeyondCap(conn, app_code, user_id, max_wall_gifts_, state, &*expected));
        // Only the gifts that differ are rewritten.
        std::set<std::string> changed;
        for (const domain::WallDifference& d : domain::DiffUserWalls(*expected, state.actual)) {
          changed.insert(d.gift_id);
        }
        for (const std::string& gift_id : changed) {
          auto it = expected->find(gift_id);
          s = WriteGift(conn, app_code, user_id, gift_id,
                        it == expected->end() ? nullptr : &it->second);
          if (!s.ok()) return s;
        }
        if (s = tx->Commit(); !s.ok()) return s;
        return true;
      });
}

absl::StatusOr<std::vector<int64_t>> WallAuditRepository::ListUsers(absl::string_view app_code) {
  ASSIGN_OR_RETURN(PooledConnection conn, pool_.Acquire());
  std::vector<int64_t> users;
  for (absl::string_view query : {kLedgerUsers, kWallUsers}) {
    int64_t after = 0;
    for (;;) {
      int64_t count = 0;
      absl::Status s =
          conn->Query(query, {app_code, after, int64_t{10'000}}, [&](const SqlRow& row) {
            ++count;
            after = row.Int(0);
            users.push_back(after);
          });
      if (!s.ok()) return s;
      if (count < 10'000) break;
    }
  }
  std::sort(users.begin(), users.end());
  users.erase(std::unique(users.begin(), users.end()), users.end());
  return users;
}

}  // namespace giftwall::storage
