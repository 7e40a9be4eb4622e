#include "server/projection/group_projector.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "glog/logging.h"
#include "server/common/status_macros.h"
#include "server/domain/wall_cap.h"
#include "server/domain/wall_fold.h"
#include "server/projection/group_plan.h"
#include "server/storage/contention.h"

namespace giftwall::projection {
namespace {

using group::Attempt;
using group::Ending;
using group::Phase;

// Rolls a session's transaction back unless it was committed.
class RollbackUnlessCommitted {
 public:
  explicit RollbackUnlessCommitted(GroupSession& session) : session_(session) {}
  ~RollbackUnlessCommitted() {
    if (!committed_) session_.Rollback();
  }
  absl::Status Commit() {
    committed_ = true;
    return session_.Commit();
  }

 private:
  GroupSession& session_;
  bool committed_ = false;
};

// One ProjectGroup call: runs the group's plans on the store until every owner has an outcome.
class GroupRun {
 public:
  GroupRun(GroupStore& store, const domain::RetryPolicy& retry, int64_t max_wall_gifts,
           const domain::PeriodRetention& retention, std::atomic<bool>& expect_existing,
           absl::Span<const ProjectionUnit> units)
      : store_(store),
        retry_(retry),
        max_wall_gifts_(max_wall_gifts),
        retention_(retention),
        expect_existing_(expect_existing),
        index_(group::IndexUnits(units)) {}

  std::vector<UnitResult> Run() {
    Resolve(group::LockOrder(owners()));
    return group::Answers(index_);
  }

 private:
  std::vector<group::Owner>& owners() { return index_.owners; }

  // Projects `part` (owners in lock order), splitting where it must, until each has an outcome.
  void Resolve(std::vector<size_t> part);
  // One attempt on a session of its own; a transient failure is recorded before it returns.
  Attempt AttemptOnce(const std::vector<size_t>& part, bool claim_blind);
  // `claim_blind`: claim every owner by inserting its ledger row, without reading first.
  Attempt Try(GroupSession& session, const std::vector<size_t>& part, bool claim_blind);
  // Runs the claims' transaction; returns how it ended.
  Ending Write(GroupSession& session, Attempt& attempt);
  // What the claims' apps fold besides their all-time walls, by the settings read in this
  // transaction.
  absl::StatusOr<group::FoldSettings> ReadFoldSettings(GroupSession& session,
                                                       const Attempt& attempt);
  Ending WriteClaims(GroupSession& session, const group::WritePlan& plan, Attempt& attempt);
  Ending WriteFolds(GroupSession& session, const group::WritePlan& plan, Attempt& attempt);
  // After the merge of `app`'s `deltas` added new rows: marks the events of the gifts that the
  // cap refuses to die; returns whether there were any.
  absl::StatusOr<bool> RefuseOverCap(GroupSession& session, absl::string_view app,
                                     const domain::WallDeltas& deltas, const Attempt& attempt);
  void RecordFailures(GroupSession& session, const Attempt& attempt);

  GroupStore& store_;
  const domain::RetryPolicy& retry_;
  const int64_t max_wall_gifts_;
  const domain::PeriodRetention& retention_;
  std::atomic<bool>& expect_existing_;
  group::GroupIndex index_;
};

void GroupRun::Resolve(std::vector<size_t> part) {
  // Most relay messages are new events: while the last groups met no ledger row, a relay group
  // is claimed by inserting its rows at once, one statement less. A row that exists fails the
  // insert (1062) and the group is read first, as every group of a scan or requeue is.
  const bool blind = !expect_existing_.load(std::memory_order_relaxed) &&
                     std::all_of(part.begin(), part.end(), [&](size_t o) {
                       return owners()[o].by == domain::ProjectedBy::kRelay;
                     });
  group::Retrying state(retry_, blind);
  for (;;) {
    const Attempt attempt = AttemptOnce(part, state.claim_blind);
    const group::Step step = group::Decide(attempt, state, owners(), part);
    if (step.met_existing_rows) expect_existing_.store(true, std::memory_order_relaxed);
    switch (step.next) {
      case group::Step::kDone:
      case group::Step::kFail:
        return;
      case group::Step::kAgain:
        absl::SleepFor(step.pause);
        continue;
      case group::Step::kSplit: {
        const auto middle = part.begin() + static_cast<std::ptrdiff_t>(part.size() / 2);
        Resolve(std::vector<size_t>(part.begin(), middle));
        Resolve(std::vector<size_t>(middle, part.end()));
        return;
      }
      case group::Step::kEachAlone:
        for (size_t owner : part) Resolve({owner});
        return;
    }
  }
}

Attempt GroupRun::AttemptOnce(const std::vector<size_t>& part, bool claim_blind) {
  Attempt attempt;
  {
    absl::StatusOr<std::unique_ptr<GroupSession>> session = store_.Open();
    if (!session.ok()) {
      attempt.ending = Ending::kNoSession;
      attempt.cause = session.status();
      return attempt;
    }
    attempt = Try(**session, part, claim_blind);
    if (attempt.ending != Ending::kTransient) return attempt;
    if (!(*session)->broken()) {
      RecordFailures(**session, attempt);
      return attempt;
    }
  }  // a broken session is discarded here, before another is taken to record the failure
  absl::StatusOr<std::unique_ptr<GroupSession>> session = store_.Open();
  if (session.ok()) {
    RecordFailures(**session, attempt);
  } else {
    LOG(WARNING) << attempt.claims.size() << " event(s) failed (" << attempt.cause
                 << ") and the failure could not be recorded: " << session.status();
  }
  return attempt;
}

Attempt GroupRun::Try(GroupSession& session, const std::vector<size_t>& part, bool claim_blind) {
  Attempt attempt;
  if (claim_blind) {
    group::ClaimAll(part, attempt);
    attempt.ending = Write(session, attempt);
    return attempt;
  }
  bool any_row = false;
  // The owners are sorted by app code: one read per app.
  for (size_t begin = 0; begin < part.size();) {
    const absl::string_view app = owners()[part[begin]].app_code();
    size_t end = begin;
    std::vector<std::string> ids;
    for (; end < part.size() && owners()[part[end]].app_code() == app; ++end) {
      ids.push_back(owners()[part[end]].event->event_id);
    }
    absl::StatusOr<storage::LedgerSnapshot> ledger = session.ReadLedger(app, ids);
    if (!ledger.ok()) {
      attempt.ending = attempt.Fail(ledger.status(), Phase::kRead);
      return attempt;
    }
    const absl::Span<const size_t> of_app(&part[begin], end - begin);
    any_row = group::PlanClaims(owners(), of_app, *ledger, attempt) || any_row;
    begin = end;
  }
  expect_existing_.store(any_row, std::memory_order_relaxed);
  if (!attempt.claims.empty()) attempt.ending = Write(session, attempt);
  return attempt;
}

Ending GroupRun::Write(GroupSession& session, Attempt& attempt) {
  if (absl::Status s = session.Begin(); !s.ok()) return attempt.Fail(s, Phase::kRead);
  RollbackUnlessCommitted tx(session);
  absl::StatusOr<group::FoldSettings> settings = ReadFoldSettings(session, attempt);
  if (!settings.ok()) return attempt.Fail(settings.status(), Phase::kRead);
  absl::StatusOr<group::WritePlan> plan = group::PlanWrites(owners(), attempt, *settings);
  if (!plan.ok()) {
    attempt.cause = plan.status();
    return Ending::kPermanent;
  }
  // Claims first, for every app, then the folds: the ledger rows are locked before any wall row.
  if (Ending e = WriteClaims(session, *plan, attempt); e != Ending::kCommitted) return e;
  if (!attempt.lost.empty()) {
    // Another caller claimed some of the events since they were read: only the claims that
    // stand are folded, and the others are read again after this transaction.
    plan = group::PlanWrites(owners(), attempt, *settings);
    if (!plan.ok()) {
      attempt.cause = plan.status();
      return Ending::kPermanent;
    }
  }
  if (Ending e = WriteFolds(session, *plan, attempt); e != Ending::kCommitted) return e;
  if (absl::Status s = tx.Commit(); !s.ok()) return attempt.Fail(s, Phase::kRead);
  return Ending::kCommitted;
}

absl::StatusOr<group::FoldSettings> GroupRun::ReadFoldSettings(GroupSession& session,
                                                               const Attempt& attempt) {
  group::FoldSettings fold;
  const std::vector<std::string> apps = group::AppsToFold(owners(), attempt);
  if (apps.empty()) return fold;
  ASSIGN_OR_RETURN(storage::AppSettingsSnapshot settings, session.ReadSettings(apps));
  for (const auto& [app, app_settings] : settings.apps) {
    if (app_settings.keep_sent_wall) fold.sent_walls.insert(app);
    if (app_settings.kinds.empty()) continue;
    // A zone the server cannot load fails the events (retried), never folds them as UTC.
    absl::StatusOr<domain::PeriodsToWrite> of_app =
        domain::PeriodsToWrite::Make(app_settings, retention_, settings.now_ms);
    if (!of_app.ok()) return Annotate(of_app.status(), absl::StrCat("app ", app));
    fold.periods.emplace(app, *std::move(of_app));
  }
  return fold;
}

Ending GroupRun::WriteClaims(GroupSession& session, const group::WritePlan& plan,
                             Attempt& attempt) {
  for (const auto& [code, app] : plan) {
    absl::StatusOr<std::vector<std::string>> existing = session.InsertLedger(code, app.inserts);
    if (!existing.ok()) return attempt.Fail(existing.status(), Phase::kClaim);
    group::DropLostClaims(owners(), code, *existing, attempt);
    absl::StatusOr<int64_t> updated = session.UpdateLedger(code, app.updates);
    if (!updated.ok()) return attempt.Fail(updated.status(), Phase::kClaim);
    if (*updated != static_cast<int64_t>(app.updates.size())) {
      attempt.cause =
          absl::AbortedError(absl::StrFormat("%d of %d ledger rows changed since they were read",
                                             app.updates.size() - *updated, app.updates.size()));
      return Ending::kRaced;
    }
  }
  return Ending::kCommitted;
}

Ending GroupRun::WriteFolds(GroupSession& session, const group::WritePlan& plan, Attempt& attempt) {
  for (const auto& [code, app] : plan) {
    if (app.deltas.empty()) continue;
    absl::StatusOr<storage::MergedSenders> merged = session.MergeSenders(code, app.deltas);
    if (!merged.ok()) return attempt.Fail(merged.status(), Phase::kFold);
    std::map<domain::WallKey, domain::SenderMerge> senders;
    for (const auto& [key, delta] : app.deltas) {
      if (delta.senders.empty()) continue;
      auto it = merged->find(key);
      CHECK(it != merged->end()) << "sender rows merged in this transaction are gone";
      senders.emplace(key, domain::DescribeSenderMerge(delta, it->second));
    }
    absl::StatusOr<int64_t> added = session.MergeWalls(code, app.deltas, senders);
    if (!added.ok()) return attempt.Fail(added.status(), Phase::kFold);
    if (*added > 0) {
      absl::StatusOr<bool> refused = RefuseOverCap(session, code, app.deltas, attempt);
      if (!refused.ok()) return attempt.Fail(refused.status(), Phase::kFold);
      if (*refused) {
        attempt.cause = absl::ResourceExhaustedError("gifts new to walls at the cap");
        return Ending::kOverCap;  // rolled back as the transaction goes
      }
    }
    if (!app.keep_sent_wall) continue;
    // The sent rows last: every group locks its rows table by table in one order (§2.13).
    absl::StatusOr<domain::SentDeltas> sent = domain::SentDeltasOf(app.deltas, *merged);
    if (!sent.ok()) {
      attempt.cause = sent.status();
      return Ending::kPermanent;
    }
    if (absl::Status s = session.MergeSent(code, *sent); !s.ok()) {
      return attempt.Fail(s, Phase::kFold);
    }
  }
  return Ending::kCommitted;
}

absl::StatusOr<bool> GroupRun::RefuseOverCap(GroupSession& session, absl::string_view app,
                                             const domain::WallDeltas& deltas,
                                             const Attempt& attempt) {
  ASSIGN_OR_RETURN(const auto over,
                   session.WallsOverCap(app, group::UsersOf(deltas), max_wall_gifts_));
  if (over.empty()) return false;
  // Rare: which of the merged rows of those walls are new.
  ASSIGN_OR_RETURN(const auto counts, session.GiftCounts(app, group::KeysOf(deltas, over)));
  const std::vector<group::CapRefusal> refusals =
      group::RefuseOverCap(owners(), attempt, app, deltas, over, counts, max_wall_gifts_);
  for (const group::CapRefusal& refusal : refusals) {
    LOG(WARNING) << "app " << app << ": the wall of user " << refusal.user_id
                 << " is at its cap of " << max_wall_gifts_ << " gifts: " << refusal.gifts
                 << " new gift(s) refused";
    for (size_t owner : refusal.owners) {
      owners()[owner].must_die = domain::WallCapReason(refusal.user_id, max_wall_gifts_);
    }
  }
  return !refusals.empty();
}

void GroupRun::RecordFailures(GroupSession& session, const Attempt& attempt) {
  for (const auto& [code, writes] :
       group::PlanFailures(owners(), attempt, retry_, storage::Jitter)) {
    absl::Status s = session.InsertLedgerIfAbsent(code, writes.inserts);
    if (s.ok()) s = session.UpdateLedger(code, writes.updates).status();
    const size_t count = writes.inserts.size() + writes.updates.size();
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
  return GroupRun(store_, retry_, max_wall_gifts_, retention_, expect_existing_, units).Run();
}

}  // namespace giftwall::projection
