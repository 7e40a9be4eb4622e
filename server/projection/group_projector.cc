#include "server/projection/group_projector.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "glog/logging.h"
#include "server/common/status_macros.h"
#include "server/domain/gift_payload.h"
#include "server/domain/ledger_policy.h"
#include "server/domain/wall_cap.h"
#include "server/domain/wall_fold.h"
#include "server/storage/contention.h"
#include "server/storage/projection_store.h"

namespace giftwall::projection {
namespace {

using domain::ClaimAction;
using domain::GiftEvent;
using domain::GiftPayload;
using domain::LedgerRow;
using domain::LedgerStatus;
using domain::ProjectedBy;
using domain::ProjectionOutcome;
using domain::ProjectionResult;
using storage::LedgerWrite;
using storage::ProjectionStore;
using storage::SqlConnection;

// How an attempt at a group ended.
enum class Ending {
  kCommitted,
  kContention,     // deadlock, or a lock wait past the bound while folding: retry the whole group
  kRaced,          // a ledger row changed since it was read: read again
  kClaimLockWait,  // a ledger row stayed locked by another caller past the lock-wait bound
  kPermanent,      // the wall cannot absorb the fold (an overflow): no retry can fix it
  kOverCap,        // gifts new to walls at the cap: those events are to die, the rest to retry
  kTransient,      // anything else: recorded as a failure of the claimed events (§2.7)
};

// Where in an attempt a statement failed: the same error means different things there.
enum class Phase { kRead, kClaim, kFold };

Ending Classify(const absl::Status& status, Phase phase) {
  switch (storage::ErrorKindOf(status)) {
    case storage::DbErrorKind::kConflict:
      return Ending::kContention;
    case storage::DbErrorKind::kLockWait:
      return phase == Phase::kClaim ? Ending::kClaimLockWait : Ending::kContention;
    case storage::DbErrorKind::kDuplicate:
      return phase == Phase::kClaim ? Ending::kRaced : Ending::kTransient;
    case storage::DbErrorKind::kPermanent:
      return phase == Phase::kFold ? Ending::kPermanent : Ending::kTransient;
    default:
      return Ending::kTransient;
  }
}

int64_t Ms(absl::Duration d) { return absl::ToInt64Milliseconds(d); }

// What the callers of a group that failed are told. What the database may get over is to be
// retried: UNAVAILABLE and ABORTED as they are, and a statement stopped at its time limit as
// UNAVAILABLE. Anything else (INTERNAL: a bug, a schema that does not match) keeps its code, so
// that it does not pass for something a retry fixes; storage has logged it with its statement.
absl::Status ForCaller(const absl::Status& cause) {
  switch (cause.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kAborted:
      return cause;
    case absl::StatusCode::kDeadlineExceeded: {
      absl::Status retry = absl::UnavailableError(
          absl::StrCat("the database did not answer within the statement time limit; retry later: ",
                       cause.message()));
      cause.ForEachPayload([&](absl::string_view type_url, const absl::Cord& payload) {
        retry.SetPayload(type_url, payload);
      });
      return retry;
    }
    default:
      return Annotate(cause, "projection failed");
  }
}

ProjectionResult Result(ProjectionOutcome outcome, std::string detail = "") {
  return ProjectionResult{outcome, std::move(detail)};
}

// An event of the group: the first copy of its (app_code, event_id).
struct Owner {
  const GiftEvent* event = nullptr;
  ProjectedBy by = ProjectedBy::kRelay;
  absl::StatusOr<GiftPayload> payload;
  // Why it dies without a fold, once it alone could not be absorbed by its wall.
  std::string must_die;
  std::optional<absl::StatusOr<ProjectionResult>> outcome;

  int64_t target_user_id() const { return payload.ok() ? payload->target_user_id : 0; }
};

// An owner that an attempt claimed.
struct Claim {
  size_t owner = 0;
  std::optional<LedgerRow> row;  // as read; none for an event new to the ledger
  bool folds = false;            // to be folded (not dead without a fold)
};

struct Attempt {
  Ending ending = Ending::kCommitted;
  absl::Status cause;
  std::vector<Claim> claims;
  std::vector<std::pair<size_t, ProjectionResult>> answered;  // by the ledger read alone
  std::vector<std::pair<size_t, ProjectionResult>> planned;   // for the claims, once committed

  size_t folding() const {
    return static_cast<size_t>(
        std::count_if(claims.begin(), claims.end(), [](const Claim& c) { return c.folds; }));
  }
};

// One ProjectGroup call.
class GroupRun {
 public:
  GroupRun(storage::ConnectionPool& pool, const domain::RetryPolicy& retry, int64_t max_wall_gifts,
           std::atomic<bool>& expect_existing, absl::Span<const ProjectionUnit> units)
      : pool_(pool),
        retry_(retry),
        max_wall_gifts_(max_wall_gifts),
        expect_existing_(expect_existing),
        units_(units) {}

  std::vector<UnitResult> Run();

 private:
  // Projects `owners` (sorted by key), splitting where it must, until each has an outcome.
  void Resolve(std::vector<size_t> owners);
  void Split(const std::vector<size_t>& owners);
  // `claim_blind`: claim every owner by inserting its ledger row, without reading first.
  Attempt Try(SqlConnection& conn, const std::vector<size_t>& owners, bool claim_blind);
  // Runs the claims' transaction; returns how it ended.
  Ending Write(SqlConnection& conn, Attempt& attempt, absl::Status* cause);
  // After the merge of `app`'s `deltas` added new rows: marks the events of the gifts that the
  // cap refuses (domain::RefusedNewGifts) to die; returns whether there were any.
  absl::StatusOr<bool> RefuseOverCap(ProjectionStore& store, absl::string_view app,
                                     const domain::WallDeltas& deltas, const Attempt& attempt);
  void RecordFailures(SqlConnection& conn, const Attempt& attempt);
  void Fail(const std::vector<size_t>& owners, const absl::Status& status);

  absl::string_view AppOf(size_t owner) const { return owners_[owner].event->app_code; }

  storage::ConnectionPool& pool_;
  const domain::RetryPolicy& retry_;
  const int64_t max_wall_gifts_;
  std::atomic<bool>& expect_existing_;
  absl::Span<const ProjectionUnit> units_;
  std::vector<Owner> owners_;
};

std::vector<UnitResult> GroupRun::Run() {
  // Every event of every unit points at its owner: the first copy of its id in the group, whose
  // event is projected and whose slot gets the outcome; the other copies answer what it did. An
  // operator's requeue is not to be answered DEAD because a relay copy of the event came first:
  // its copy becomes the owner's event and slot.
  absl::flat_hash_map<std::pair<absl::string_view, absl::string_view>, size_t> by_key;
  std::vector<std::vector<size_t>> slot_owner(units_.size());
  std::vector<std::pair<size_t, size_t>> owner_slot;  // (unit, index) of each owner's slot
  for (size_t u = 0; u < units_.size(); ++u) {
    for (size_t i = 0; i < units_[u].events.size(); ++i) {
      const GiftEvent& event = units_[u].events[i];
      auto [it, fresh] = by_key.try_emplace(
          std::make_pair(absl::string_view(event.app_code), absl::string_view(event.event_id)),
          owners_.size());
      if (fresh) {
        owners_.push_back(Owner{&event, units_[u].by, domain::ParseGiftEvent(event), "", {}});
        owner_slot.emplace_back(u, i);
      } else if (units_[u].by == ProjectedBy::kRequeue &&
                 owners_[it->second].by != ProjectedBy::kRequeue) {
        owners_[it->second] = Owner{&event, units_[u].by, domain::ParseGiftEvent(event), "", {}};
        owner_slot[it->second] = {u, i};
      }
      slot_owner[u].push_back(it->second);
    }
  }
  // Sorted by app code, wall row, event: each attempt takes its row locks in one order.
  std::vector<size_t> order(owners_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto key = [&](size_t i) {
    const Owner& o = owners_[i];
    return std::make_tuple(
        absl::string_view(o.event->app_code), o.target_user_id(),
        o.payload.ok() ? absl::string_view(o.payload->gift_id) : absl::string_view(),
        absl::string_view(o.event->event_id));
  };
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
  Resolve(std::move(order));

  std::vector<UnitResult> results;
  results.reserve(units_.size());
  for (size_t u = 0; u < units_.size(); ++u) {
    std::vector<ProjectionResult> answers;
    absl::Status failed;
    for (size_t i = 0; i < slot_owner[u].size() && failed.ok(); ++i) {
      const std::optional<absl::StatusOr<ProjectionResult>>& answer =
          owners_[slot_owner[u][i]].outcome;
      CHECK(answer.has_value()) << "an event of the group was left unanswered";
      const absl::StatusOr<ProjectionResult>& outcome = *answer;
      if (!outcome.ok()) {
        failed = outcome.status();
      } else if (owner_slot[slot_owner[u][i]] != std::make_pair(u, i) &&
                 outcome->outcome == ProjectionOutcome::kProjected) {
        answers.push_back(Result(ProjectionOutcome::kAlreadyProjected));
      } else {
        answers.push_back(*outcome);
      }
    }
    if (failed.ok()) {
      results.emplace_back(std::move(answers));
    } else {
      results.emplace_back(failed);
    }
  }
  return results;
}

void GroupRun::Resolve(std::vector<size_t> owners) {
  storage::ContentionRetries contention(retry_);
  // A race (a ledger row inserted or changed by another caller since it was read) is retried at
  // once and not counted as contention while each retry claims fewer events: the other caller
  // has committed, and the next read answers its events.
  size_t raced_claims = SIZE_MAX;
  // Most relay messages are new events: while the last groups met no ledger row, a relay group
  // is claimed by inserting its rows at once, one statement less. A row that exists fails the
  // insert (1062) and the group is read first, as every group of a scan or requeue is.
  bool claim_blind = !expect_existing_.load(std::memory_order_relaxed) &&
                     std::all_of(owners.begin(), owners.end(),
                                 [&](size_t o) { return owners_[o].by == ProjectedBy::kRelay; });
  while (!owners.empty()) {
    Attempt attempt;
    bool recorded = false;
    {
      absl::StatusOr<storage::PooledConnection> conn = pool_.Acquire();
      if (!conn.ok()) return Fail(owners, conn.status());
      attempt = Try(**conn, owners, claim_blind);
      if (attempt.ending == Ending::kTransient && !(*conn)->broken()) {
        RecordFailures(**conn, attempt);
        recorded = true;
      }
    }  // a broken session is discarded here, before another is taken to record the failure
    switch (attempt.ending) {
      case Ending::kCommitted:
        for (auto& [owner, result] : attempt.answered) owners_[owner].outcome = std::move(result);
        for (auto& [owner, result] : attempt.planned) owners_[owner].outcome = std::move(result);
        return;
      case Ending::kTransient: {
        if (!recorded) {
          absl::StatusOr<storage::PooledConnection> conn = pool_.Acquire();
          if (conn.ok()) {
            RecordFailures(**conn, attempt);
          } else {
            LOG(WARNING) << attempt.claims.size() << " event(s) failed (" << attempt.cause
                         << ") and the failure could not be recorded: " << conn.status();
          }
        }
        for (auto& [owner, result] : attempt.answered) owners_[owner].outcome = std::move(result);
        // The claims, and whatever the read did not get to (it may be what failed).
        return Fail(owners, ForCaller(attempt.cause));
      }
      case Ending::kPermanent:
        if (attempt.folding() == 1) {
          for (const Claim& c : attempt.claims) {
            if (!c.folds) continue;
            owners_[c.owner].must_die =
                absl::StrCat("the wall cannot absorb this event: ", attempt.cause.message());
          }
          continue;  // the next attempt writes it dead and projects the rest
        }
        return Split(owners);
      case Ending::kOverCap:
        continue;  // the next attempt writes the refused events dead and projects the rest
      case Ending::kClaimLockWait:
        if (attempt.claims.size() == 1) {
          const size_t held = attempt.claims.front().owner;
          owners_[held].outcome = Result(ProjectionOutcome::kLeased,
                                         "another caller is projecting this event right now");
          owners.erase(std::find(owners.begin(), owners.end(), held));
          continue;
        }
        // Which event is held is not known: each is claimed on its own, so that only the held
        // ones wait out the lock-wait bound again (halving would wait once per level).
        for (size_t owner : owners) Resolve({owner});
        return;
      case Ending::kRaced:
        if (claim_blind) {
          expect_existing_.store(true, std::memory_order_relaxed);
          claim_blind = false;
          continue;
        }
        if (attempt.claims.size() < raced_claims) {
          raced_claims = attempt.claims.size();
          continue;
        }
        [[fallthrough]];
      case Ending::kContention:
        if (absl::StatusOr<absl::Duration> pause = contention.Next(attempt.cause); pause.ok()) {
          absl::SleepFor(*pause);
          continue;
        } else {
          return Fail(owners, pause.status());
        }
    }
  }
}

void GroupRun::Split(const std::vector<size_t>& owners) {
  const auto middle = owners.begin() + static_cast<std::ptrdiff_t>(owners.size() / 2);
  Resolve(std::vector<size_t>(owners.begin(), middle));
  Resolve(std::vector<size_t>(middle, owners.end()));
}

void GroupRun::Fail(const std::vector<size_t>& owners, const absl::Status& status) {
  for (size_t owner : owners) {
    if (!owners_[owner].outcome.has_value()) owners_[owner].outcome = status;
  }
}

Attempt GroupRun::Try(SqlConnection& conn, const std::vector<size_t>& owners, bool claim_blind) {
  Attempt attempt;
  ProjectionStore store(conn);
  if (claim_blind) {
    for (size_t o : owners) attempt.claims.push_back(Claim{o, std::nullopt, false});
    attempt.ending = Write(conn, attempt, &attempt.cause);
    return attempt;
  }
  bool any_row = false;
  // The owners are sorted by app code: one read per app.
  for (size_t begin = 0; begin < owners.size();) {
    const absl::string_view app = AppOf(owners[begin]);
    size_t end = begin;
    std::vector<std::string> ids;
    while (end < owners.size() && AppOf(owners[end]) == app) {
      ids.push_back(owners_[owners[end]].event->event_id);
      ++end;
    }
    absl::StatusOr<storage::LedgerSnapshot> ledger = store.ReadLedger(app, ids);
    if (!ledger.ok()) {
      attempt.ending = Classify(ledger.status(), Phase::kRead);
      attempt.cause = ledger.status();
      return attempt;
    }
    for (size_t i = begin; i < end; ++i) {
      const size_t o = owners[i];
      auto row = ledger->rows.find(owners_[o].event->event_id);
      const LedgerRow* read = row == ledger->rows.end() ? nullptr : &row->second;
      any_row = any_row || read != nullptr;
      const domain::ClaimDecision decision =
          domain::DecideClaim(read, owners_[o].by, ledger->now_ms);
      switch (decision.action) {
        case ClaimAction::kAlreadyProjected:
          attempt.answered.emplace_back(o, Result(ProjectionOutcome::kAlreadyProjected));
          break;
        case ClaimAction::kDead:
          attempt.answered.emplace_back(o, Result(ProjectionOutcome::kDead, decision.detail));
          break;
        case ClaimAction::kLeased:
          attempt.answered.emplace_back(o, Result(ProjectionOutcome::kLeased, decision.detail));
          break;
        case ClaimAction::kInsert:
        case ClaimAction::kReclaim:
          attempt.claims.push_back(
              Claim{o, read == nullptr ? std::nullopt : std::optional<LedgerRow>(*read), false});
          break;
      }
    }
    begin = end;
  }
  expect_existing_.store(any_row, std::memory_order_relaxed);
  if (attempt.claims.empty()) return attempt;
  attempt.ending = Write(conn, attempt, &attempt.cause);
  return attempt;
}

Ending GroupRun::Write(SqlConnection& conn, Attempt& attempt, absl::Status* cause) {
  // What each claim writes, per app code: its ledger row (done, or dead without a fold) and its
  // share of the fold.
  struct AppWrites {
    std::vector<LedgerWrite> inserts;
    std::vector<LedgerWrite> updates;
    std::vector<domain::FoldEvent> folds;
    domain::WallDeltas deltas;
  };
  std::map<absl::string_view, AppWrites> apps;
  for (Claim& c : attempt.claims) {
    const Owner& owner = owners_[c.owner];
    LedgerWrite w;
    w.event_id = owner.event->event_id;
    w.projected_by = owner.by;
    w.target_user_id = owner.target_user_id();
    // A requeue starts the event's failures afresh; any other claim keeps their count.
    const bool requeue = c.row.has_value() && c.row->status == LedgerStatus::kDead;
    w.requeued = requeue;
    w.retry_count = c.row.has_value() && !requeue ? c.row->retry_count : 0;
    if (c.row.has_value()) w.expected = *c.row;
    AppWrites& app = apps[owner.event->app_code];
    if (!owner.payload.ok() || !owner.must_die.empty()) {
      // A bad payload is permanent: dead at once, so that one bad event never blocks the relay's
      // queue (the seed retried it ten times).
      w.status = LedgerStatus::kDead;
      w.last_error =
          domain::LastError(owner.payload.ok() ? owner.must_die : owner.payload.status().message());
      attempt.planned.emplace_back(c.owner, Result(ProjectionOutcome::kDead, w.last_error));
    } else {
      w.status = LedgerStatus::kDone;
      c.folds = true;
      app.folds.push_back(
          domain::FoldEvent{owner.event->event_id, owner.event->occurred_at_ms, *owner.payload});
      attempt.planned.emplace_back(c.owner, Result(ProjectionOutcome::kProjected));
    }
    (c.row.has_value() ? app.updates : app.inserts).push_back(std::move(w));
  }
  for (auto& [code, app] : apps) {
    absl::StatusOr<domain::WallDeltas> deltas = domain::FoldDeltas(app.folds);
    if (!deltas.ok()) {
      *cause = deltas.status();
      return Ending::kPermanent;
    }
    app.deltas = *std::move(deltas);
  }

  absl::StatusOr<storage::Transaction> tx = storage::Transaction::Begin(conn);
  if (!tx.ok()) {
    *cause = tx.status();
    return Classify(*cause, Phase::kRead);
  }
  ProjectionStore store(conn);
  // Claims first, for every app, then the folds: the ledger rows are locked before any wall row.
  for (auto& [code, app] : apps) {
    if (absl::Status s = store.InsertLedger(code, app.inserts); !s.ok()) {
      *cause = s;
      return Classify(s, Phase::kClaim);
    }
    absl::StatusOr<int64_t> updated = store.UpdateLedger(code, app.updates);
    if (!updated.ok()) {
      *cause = updated.status();
      return Classify(*cause, Phase::kClaim);
    }
    if (*updated != static_cast<int64_t>(app.updates.size())) {
      *cause =
          absl::AbortedError(absl::StrFormat("%d of %d ledger rows changed since they were read",
                                             app.updates.size() - *updated, app.updates.size()));
      return Ending::kRaced;
    }
  }
  for (auto& [code, app] : apps) {
    if (app.deltas.empty()) continue;
    absl::StatusOr<storage::MergedSenders> merged = store.MergeSenders(code, app.deltas);
    if (!merged.ok()) {
      *cause = merged.status();
      return Classify(*cause, Phase::kFold);
    }
    std::map<domain::WallKey, domain::SenderMerge> senders;
    for (const auto& [key, delta] : app.deltas) {
      if (delta.senders.empty()) continue;
      auto it = merged->find(key);
      CHECK(it != merged->end()) << "sender rows merged in this transaction are gone";
      senders.emplace(key, domain::DescribeSenderMerge(delta, it->second));
    }
    absl::StatusOr<int64_t> added = store.MergeWalls(code, app.deltas, senders);
    if (!added.ok()) {
      *cause = added.status();
      return Classify(*cause, Phase::kFold);
    }
    if (*added == 0) continue;
    absl::StatusOr<bool> refused = RefuseOverCap(store, code, app.deltas, attempt);
    if (!refused.ok()) {
      *cause = refused.status();
      return Classify(*cause, Phase::kFold);
    }
    if (*refused) {
      *cause = absl::ResourceExhaustedError("gifts new to walls at the cap");
      return Ending::kOverCap;  // rolled back as the transaction goes
    }
  }
  if (absl::Status s = tx->Commit(); !s.ok()) {
    *cause = s;
    return Classify(s, Phase::kRead);
  }
  return Ending::kCommitted;
}

absl::StatusOr<bool> GroupRun::RefuseOverCap(ProjectionStore& store, absl::string_view app,
                                             const domain::WallDeltas& deltas,
                                             const Attempt& attempt) {
  std::vector<int64_t> users;
  for (const auto& [key, delta] : deltas) {
    if (users.empty() || users.back() != key.user_id) users.push_back(key.user_id);
  }
  ASSIGN_OR_RETURN(const auto over, store.WallsOverCap(app, users, max_wall_gifts_));
  if (over.empty()) return false;
  // Rare: which of the merged rows of those walls are new. A row that existed had a gift_count
  // of its own, so only a new one holds exactly its delta's.
  std::vector<domain::WallKey> keys;
  for (const auto& [key, delta] : deltas) {
    if (over.count(key.user_id) > 0) keys.push_back(key);
  }
  ASSIGN_OR_RETURN(const auto counts, store.GiftCounts(app, keys));
  std::map<int64_t, std::vector<std::string>> new_gifts;
  for (const domain::WallKey& key : keys) {
    auto it = counts.find(key);
    if (it != counts.end() && it->second == deltas.at(key).gift_count) {
      new_gifts[key.user_id].push_back(key.gift_id);
    }
  }
  bool any = false;
  for (const auto& [user, gifts] : new_gifts) {
    const std::set<std::string> refused =
        domain::RefusedNewGifts(over.at(user), gifts, max_wall_gifts_);
    if (refused.empty()) continue;
    LOG(WARNING) << "app " << app << ": the wall of user " << user << " is at its cap of "
                 << max_wall_gifts_ << " gifts: " << refused.size() << " new gift(s) refused";
    for (const Claim& c : attempt.claims) {
      Owner& owner = owners_[c.owner];
      if (!c.folds || owner.event->app_code != app || owner.target_user_id() != user ||
          refused.count(owner.payload->gift_id) == 0) {
        continue;
      }
      owner.must_die = domain::WallCapReason(user, max_wall_gifts_);
      any = true;
    }
  }
  return any;
}

void GroupRun::RecordFailures(SqlConnection& conn, const Attempt& attempt) {
  // A requeue's failure leaves the event dead as it was: the operator sees the error.
  std::map<absl::string_view, std::pair<std::vector<LedgerWrite>, std::vector<LedgerWrite>>> apps;
  const std::string reason = domain::LastError(attempt.cause.message());
  for (const Claim& c : attempt.claims) {
    const Owner& owner = owners_[c.owner];
    if (!c.folds || owner.by == ProjectedBy::kRequeue) continue;
    const domain::FailureRecord record = domain::DecideFailure(
        c.row.has_value() ? c.row->retry_count : 0, retry_, storage::Jitter());
    LedgerWrite w;
    w.event_id = owner.event->event_id;
    w.status = record.status;
    w.retry_count = record.retry_count;
    w.last_error = reason;
    w.retry_after_ms = Ms(record.retry_after);
    w.projected_by = owner.by;
    w.target_user_id = owner.target_user_id();
    if (c.row.has_value()) w.expected = *c.row;
    auto& [inserts, updates] = apps[owner.event->app_code];
    (c.row.has_value() ? updates : inserts).push_back(std::move(w));
  }
  ProjectionStore store(conn);
  for (const auto& [code, writes] : apps) {
    absl::Status s = store.InsertLedgerIfAbsent(code, writes.first);
    if (s.ok()) s = store.UpdateLedger(code, writes.second).status();
    const size_t count = writes.first.size() + writes.second.size();
    if (!s.ok()) {
      LOG(WARNING) << count << " event(s) of app " << code << " failed (" << attempt.cause
                   << ") and the failure could not be recorded: " << s;
    } else {
      LOG(WARNING) << count << " event(s) of app " << code
                   << " failed and will be retried: " << attempt.cause;
    }
  }
}

}  // namespace

std::vector<UnitResult> GroupProjector::ProjectGroup(absl::Span<const ProjectionUnit> units) {
  return GroupRun(pool_, retry_, max_wall_gifts_, expect_existing_, units).Run();
}

}  // namespace giftwall::projection
