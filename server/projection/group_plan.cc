#include "server/projection/group_plan.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "server/common/status_macros.h"
#include "server/domain/wall_cap.h"
#include "server/storage/db_error.h"

namespace giftwall::projection::group {
namespace {

using domain::LedgerStatus;
using domain::ProjectedBy;
using domain::ProjectionOutcome;
using domain::ProjectionResult;
using storage::LedgerWrite;

// Ledger rows are written in their primary key's order (event_id, within an app), whatever
// order the group's walls are locked in: the ledger's locks are all taken before any wall's, so
// every group takes its row locks in one order (DESIGN §2.13), even two groups that disagree
// about an event's payload (and so about its wall).
void InLedgerKeyOrder(std::vector<LedgerWrite>& writes) {
  std::sort(writes.begin(), writes.end(),
            [](const LedgerWrite& a, const LedgerWrite& b) { return a.event_id < b.event_id; });
}

// A claim that folds: its event is not to die.
bool Folds(const Owner& owner) { return owner.payload.ok() && owner.must_die.empty(); }

ProjectionResult Result(ProjectionOutcome outcome, std::string detail = "") {
  return ProjectionResult{outcome, std::move(detail)};
}

Owner OwnerOf(const ProjectionUnit& unit, size_t i) {
  return Owner{&unit.events[i], unit.by, domain::ParseGiftEvent(unit.events[i]), "", {}};
}

void Settle(const std::vector<std::pair<size_t, ProjectionResult>>& results,
            std::vector<Owner>& owners) {
  for (const auto& [owner, result] : results) owners[owner].outcome = result;
}

// Fails the owners of `part` that have no outcome yet.
Step Failed(absl::Span<const size_t> part, const absl::Status& status, std::vector<Owner>& owners) {
  for (size_t owner : part) {
    if (!owners[owner].outcome.has_value()) owners[owner].outcome = status;
  }
  return Step{Step::kFail, absl::ZeroDuration(), status, false};
}

}  // namespace

GroupIndex IndexUnits(absl::Span<const ProjectionUnit> units) {
  GroupIndex index;
  absl::flat_hash_map<std::pair<absl::string_view, absl::string_view>, size_t> by_key;
  index.slot_owner.resize(units.size());
  for (size_t u = 0; u < units.size(); ++u) {
    for (size_t i = 0; i < units[u].events.size(); ++i) {
      const domain::GiftEvent& event = units[u].events[i];
      auto [it, fresh] = by_key.try_emplace(
          std::make_pair(absl::string_view(event.app_code), absl::string_view(event.event_id)),
          index.owners.size());
      if (fresh) {
        index.owners.push_back(OwnerOf(units[u], i));
        index.owner_slot.emplace_back(u, i);
      } else if (units[u].by == ProjectedBy::kRequeue &&
                 index.owners[it->second].by != ProjectedBy::kRequeue) {
        index.owners[it->second] = OwnerOf(units[u], i);
        index.owner_slot[it->second] = {u, i};
      }
      index.slot_owner[u].push_back(it->second);
    }
  }
  return index;
}

std::vector<size_t> LockOrder(const std::vector<Owner>& owners) {
  std::vector<size_t> order(owners.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto key = [&](size_t i) {
    const Owner& o = owners[i];
    return std::make_tuple(
        o.app_code(), o.target_user_id(),
        o.payload.ok() ? absl::string_view(o.payload->gift_id) : absl::string_view(),
        absl::string_view(o.event->event_id));
  };
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
  return order;
}

std::vector<UnitResult> Answers(const GroupIndex& index) {
  std::vector<UnitResult> results;
  results.reserve(index.slot_owner.size());
  for (size_t u = 0; u < index.slot_owner.size(); ++u) {
    std::vector<ProjectionResult> answers;
    absl::Status failed;
    for (size_t i = 0; i < index.slot_owner[u].size() && failed.ok(); ++i) {
      const size_t owner = index.slot_owner[u][i];
      const std::optional<absl::StatusOr<ProjectionResult>>& answer = index.owners[owner].outcome;
      CHECK(answer.has_value()) << "an event of the group was left unanswered";
      if (!answer->ok()) {
        failed = answer->status();
      } else if (index.owner_slot[owner] != std::make_pair(u, i) &&
                 (*answer)->outcome == ProjectionOutcome::kProjected) {
        answers.push_back(Result(ProjectionOutcome::kAlreadyProjected));
      } else {
        answers.push_back(**answer);
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

size_t Attempt::folding() const {
  return static_cast<size_t>(
      std::count_if(claims.begin(), claims.end(), [](const Claim& c) { return c.folds; }));
}

void ClaimAll(absl::Span<const size_t> part, Attempt& attempt) {
  for (size_t o : part) attempt.claims.push_back(Claim{o, std::nullopt, false});
}

bool PlanClaims(const std::vector<Owner>& owners, absl::Span<const size_t> part,
                const storage::LedgerSnapshot& ledger, Attempt& attempt) {
  bool any_row = false;
  for (size_t o : part) {
    auto row = ledger.rows.find(owners[o].event->event_id);
    const domain::LedgerRow* read = row == ledger.rows.end() ? nullptr : &row->second;
    any_row = any_row || read != nullptr;
    std::optional<ProjectionResult> answer =
        domain::AnsweredByLedger(domain::DecideClaim(read, owners[o].by, ledger.now_ms));
    if (answer.has_value()) {
      attempt.answered.emplace_back(o, *std::move(answer));
    } else {
      attempt.claims.push_back(Claim{
          o, read == nullptr ? std::nullopt : std::optional<domain::LedgerRow>(*read), false});
    }
  }
  return any_row;
}

void DropLostClaims(const std::vector<Owner>& owners, absl::string_view app,
                    absl::Span<const std::string> existing, Attempt& attempt) {
  if (existing.empty()) return;
  const std::set<absl::string_view> lost(existing.begin(), existing.end());
  auto kept = std::remove_if(attempt.claims.begin(), attempt.claims.end(), [&](const Claim& c) {
    const Owner& owner = owners[c.owner];
    if (owner.app_code() != app || lost.count(owner.event->event_id) == 0) return false;
    attempt.lost.push_back(c.owner);
    return true;
  });
  attempt.claims.erase(kept, attempt.claims.end());
}

std::vector<std::string> AppsToFold(const std::vector<Owner>& owners, const Attempt& attempt) {
  std::set<std::string> apps;
  for (const Claim& c : attempt.claims) {
    if (Folds(owners[c.owner])) apps.emplace(owners[c.owner].app_code());
  }
  return std::vector<std::string>(apps.begin(), apps.end());
}

absl::StatusOr<WritePlan> PlanWrites(const std::vector<Owner>& owners, Attempt& attempt,
                                     const FoldSettings& settings) {
  WritePlan apps;
  attempt.planned.clear();
  for (Claim& c : attempt.claims) {
    const Owner& owner = owners[c.owner];
    LedgerWrite w;
    w.event_id = owner.event->event_id;
    w.projected_by = owner.by;
    w.target_user_id = owner.target_user_id();
    // A requeue starts the event's failures afresh; any other claim keeps their count.
    const bool requeue = c.row.has_value() && c.row->status == LedgerStatus::kDead;
    w.requeued = requeue;
    w.retry_count = c.row.has_value() && !requeue ? c.row->retry_count : 0;
    if (c.row.has_value()) w.expected = *c.row;
    AppWrites& app = apps[owner.app_code()];
    if (!Folds(owner)) {
      // A bad payload is permanent: dead at once, so that one bad event never blocks the relay's
      // queue (the seed retried it ten times).
      w.status = LedgerStatus::kDead;
      w.last_error =
          domain::LastError(owner.payload.ok() ? owner.must_die : owner.payload.status().message());
      attempt.planned.emplace_back(c.owner, Result(ProjectionOutcome::kDead, w.last_error));
    } else {
      w.status = LedgerStatus::kDone;
      c.folds = true;
      domain::FoldEvent fold{owner.event->event_id, owner.event->occurred_at_ms, *owner.payload};
      if (auto it = settings.periods.find(owner.app_code()); it != settings.periods.end()) {
        for (const domain::Period& period : it->second.Of(owner.event->occurred_at_ms)) {
          fold.periods.push_back(period.Name());
        }
      }
      app.folds.push_back(std::move(fold));
      attempt.planned.emplace_back(c.owner, Result(ProjectionOutcome::kProjected));
    }
    (c.row.has_value() ? app.updates : app.inserts).push_back(std::move(w));
  }
  for (auto& [code, app] : apps) {
    InLedgerKeyOrder(app.inserts);
    InLedgerKeyOrder(app.updates);
    ASSIGN_OR_RETURN(app.deltas, domain::FoldDeltas(app.folds));
    app.keep_sent_wall = settings.sent_walls.count(code) > 0;
  }
  return apps;
}

std::map<absl::string_view, FailureWrites> PlanFailures(const std::vector<Owner>& owners,
                                                        const Attempt& attempt,
                                                        const domain::RetryPolicy& retry,
                                                        absl::FunctionRef<double()> jitter) {
  std::map<absl::string_view, FailureWrites> apps;
  const std::string reason = domain::LastError(attempt.cause.message());
  for (const Claim& c : attempt.claims) {
    const Owner& owner = owners[c.owner];
    if (!Folds(owner) || owner.by == ProjectedBy::kRequeue) continue;
    const domain::FailureRecord record =
        domain::DecideFailure(c.row.has_value() ? c.row->retry_count : 0, retry, jitter());
    LedgerWrite w;
    w.event_id = owner.event->event_id;
    w.status = record.status;
    w.retry_count = record.retry_count;
    w.last_error = reason;
    w.retry_after_ms = absl::ToInt64Milliseconds(record.retry_after);
    w.projected_by = owner.by;
    w.target_user_id = owner.target_user_id();
    if (c.row.has_value()) w.expected = *c.row;
    FailureWrites& writes = apps[owner.app_code()];
    (c.row.has_value() ? writes.updates : writes.inserts).push_back(std::move(w));
  }
  for (auto& [code, writes] : apps) {
    InLedgerKeyOrder(writes.inserts);
    InLedgerKeyOrder(writes.updates);
  }
  return apps;
}

std::vector<int64_t> UsersOf(const domain::WallDeltas& deltas) {
  std::vector<int64_t> users;
  for (const auto& [key, delta] : deltas) {
    if (key.period.empty() && (users.empty() || users.back() != key.user_id)) {
      users.push_back(key.user_id);
    }
  }
  return users;
}

std::vector<domain::WallKey> KeysOf(const domain::WallDeltas& deltas,
                                    const std::map<int64_t, int64_t>& over) {
  std::vector<domain::WallKey> keys;
  for (const auto& [key, delta] : deltas) {
    if (key.period.empty() && over.count(key.user_id) > 0) keys.push_back(key);
  }
  return keys;
}

std::vector<CapRefusal> RefuseOverCap(const std::vector<Owner>& owners, const Attempt& attempt,
                                      absl::string_view app, const domain::WallDeltas& deltas,
                                      const std::map<int64_t, int64_t>& over,
                                      const std::map<domain::WallKey, int64_t>& counts,
                                      int64_t cap) {
  std::map<int64_t, std::vector<std::string>> new_gifts;
  for (const domain::WallKey& key : KeysOf(deltas, over)) {
    auto it = counts.find(key);
    if (it != counts.end() && it->second == deltas.at(key).gift_count) {
      new_gifts[key.user_id].push_back(key.gift_id);
    }
  }
  std::vector<CapRefusal> refusals;
  for (const auto& [user, gifts] : new_gifts) {
    const std::set<std::string> refused = domain::RefusedNewGifts(over.at(user), gifts, cap);
    if (refused.empty()) continue;
    CapRefusal refusal{user, refused.size(), {}};
    for (const Claim& c : attempt.claims) {
      const Owner& owner = owners[c.owner];
      if (c.folds && owner.app_code() == app && owner.target_user_id() == user &&
          refused.count(owner.payload->gift_id) > 0) {
        refusal.owners.push_back(c.owner);
      }
    }
    if (!refusal.owners.empty()) refusals.push_back(std::move(refusal));
  }
  return refusals;
}

Step Decide(const Attempt& attempt, Retrying& state, std::vector<Owner>& owners,
            std::vector<size_t>& part) {
  switch (attempt.ending) {
    case Ending::kCommitted: {
      Settle(attempt.answered, owners);
      Settle(attempt.planned, owners);
      if (attempt.lost.empty()) return Step::Of(Step::kDone);
      // Another caller committed these since the read: the next read answers them (or claims
      // a failed row again). No pause: that caller is done with them.
      part = attempt.lost;
      state.claim_blind = false;
      Step step = Step::Of(Step::kAgain);
      step.met_existing_rows = true;
      return step;
    }
    case Ending::kNoSession:
      return Failed(part, attempt.cause, owners);
    case Ending::kTransient:
      // The claims failed (and were recorded so); whatever the read did not get to may be what
      // failed.
      Settle(attempt.answered, owners);
      return Failed(part, ForCaller(attempt.cause), owners);
    case Ending::kPermanent:
      if (attempt.folding() != 1) return Step::Of(Step::kSplit);
      for (const Claim& c : attempt.claims) {
        if (!c.folds) continue;
        owners[c.owner].must_die =
            absl::StrCat("the wall cannot absorb this event: ", attempt.cause.message());
      }
      return Step::Of(Step::kAgain);  // writes it dead and projects the rest
    case Ending::kOverCap:
      return Step::Of(Step::kAgain);  // writes the refused events dead and projects the rest
    case Ending::kClaimLockWait: {
      // Which event is held is not known: each is claimed on its own, so that only the held ones
      // wait out the lock-wait bound again (halving would wait once per level).
      if (attempt.claims.size() != 1) return Step::Of(Step::kEachAlone);
      const size_t held = attempt.claims.front().owner;
      owners[held].outcome =
          Result(ProjectionOutcome::kLeased, "another caller is projecting this event right now");
      part.erase(std::find(part.begin(), part.end(), held));
      return Step::Of(part.empty() ? Step::kDone : Step::kAgain);
    }
    case Ending::kRaced:
      if (state.claim_blind) {
        state.claim_blind = false;
        Step step = Step::Of(Step::kAgain);
        step.met_existing_rows = true;
        return step;
      }
      if (attempt.claims.size() < state.raced_claims) {
        state.raced_claims = attempt.claims.size();
        return Step::Of(Step::kAgain);
      }
      [[fallthrough]];
    case Ending::kContention: {
      absl::StatusOr<absl::Duration> pause = state.contention.Next(attempt.cause);
      if (!pause.ok()) return Failed(part, pause.status(), owners);
      return Step::Of(Step::kAgain, *pause);
    }
  }
  return Failed(part, absl::InternalError("an attempt ended in no known way"), owners);
}

}  // namespace giftwall::projection::group
