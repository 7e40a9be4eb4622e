// The group state machine of GroupProjector, without the database: who owns each event of a
// group, what an attempt claims (domain::DecideClaim) and writes (domain::FoldDeltas), which
// events the wall cap refuses, what a failure records, and what follows each way an attempt can
// end. GroupProjector runs the statements these plans name on a GroupStore and feeds back how
// they ended; every function here is pure and unit-tested on its own (group_plan_test).
#ifndef GIFTWALL_SERVER_PROJECTION_GROUP_PLAN_H_
#define GIFTWALL_SERVER_PROJECTION_GROUP_PLAN_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "server/domain/app_settings.h"
#include "server/domain/backoff.h"
#include "server/domain/envelope.h"
#include "server/domain/gift_payload.h"
#include "server/domain/ledger_policy.h"
#include "server/domain/projection.h"
#include "server/domain/wall_fold.h"
#include "server/projection/unit.h"
#include "server/storage/contention.h"
#include "server/storage/projection_store.h"

namespace giftwall::projection::group {

// An event of the group: the first copy of its (app_code, event_id).
struct Owner {
  const domain::GiftEvent* event = nullptr;
  domain::ProjectedBy by = domain::ProjectedBy::kRelay;
  absl::StatusOr<domain::GiftPayload> payload;
  // Why it dies without a fold, once it alone could not be absorbed by its wall.
  std::string must_die;
  std::optional<absl::StatusOr<domain::ProjectionResult>> outcome;

  int64_t target_user_id() const { return payload.ok() ? payload->target_user_id : 0; }
  absl::string_view app_code() const { return event->app_code; }
};

// The owners of a group's units, and which owner answers each event of each unit.
struct GroupIndex {
  std::vector<Owner> owners;
  std::vector<std::vector<size_t>> slot_owner;        // per unit, per event: its owner
  std::vector<std::pair<size_t, size_t>> owner_slot;  // (unit, index) of each owner's own slot
};

// Every event of every unit points at its owner: the first copy of its id in the group, whose
// event is projected and whose slot gets the outcome; the other copies answer what it did. An
// operator's requeue is not to be answered DEAD because a relay copy came first: its copy
// becomes the owner's event and slot. The index points into `units`.
GroupIndex IndexUnits(absl::Span<const ProjectionUnit> units);

// The owners sorted by app code, wall row, event: each attempt takes its row locks in one order.
std::vector<size_t> LockOrder(const std::vector<Owner>& owners);

// Each unit's answer once every owner has an outcome: its owners' outcomes, a copy that was not
// the owner answering ALREADY_PROJECTED for a projected event; or the first failure.
std::vector<UnitResult> Answers(const GroupIndex& index);

// How an attempt at a group ended.
enum class Ending {
  kCommitted,
  kNoSession,      // no database session could be had: every owner fails with the cause
  kContention,     // deadlock, or a lock wait past the bound while folding: retry the whole group
  kRaced,          // a ledger row changed since it was read: read again
  kClaimLockWait,  // a ledger row stayed locked by another caller past the lock-wait bound
  kPermanent,      // the wall cannot absorb the fold (an overflow): no retry can fix it
  kOverCap,        // gifts new to walls at the cap: those events are to die, the rest to retry
  kTransient,      // anything else: recorded as a failure of the claimed events (§2.7)
};

// Where in an attempt a statement failed: the same kind of error means different things there.
enum class Phase { kRead, kClaim, kFold };

// How an attempt that failed with `status` in `phase` ended (by storage::ErrorKindOf).
Ending Classify(const absl::Status& status, Phase phase);

// What the callers of a group that failed with `cause` are told. What the database may get over
// is to be retried: UNAVAILABLE and ABORTED as they are, and a statement stopped at its time limit
// as UNAVAILABLE. Anything else (INTERNAL: a bug, a schema that does not match) keeps its code,
// so that it does not pass for something a retry fixes.
absl::Status ForCaller(const absl::Status& cause);

// An owner that an attempt claimed.
struct Claim {
  size_t owner = 0;
  std::optional<domain::LedgerRow> row;  // as read; none for an event new to the ledger
  bool folds = false;                    // to be folded (not dead without a fold)
};

// One attempt at (part of) the group, as planned and as it ended.
struct Attempt {
  Ending ending = Ending::kCommitted;
  absl::Status cause;
  std::vector<Claim> claims;
  std::vector<std::pair<size_t, domain::ProjectionResult>> answered;  // by the ledger read alone
  std::vector<std::pair<size_t, domain::ProjectionResult>> planned;   // for the claims, on commit
  // Owners whose insert found a row that another caller committed since the read: their claims
  // are dropped from this attempt, and they are read again after it.
  std::vector<size_t> lost;

  size_t folding() const;
  // Records `status` as the cause; returns how it ended.
  Ending Fail(const absl::Status& status, Phase phase) {
    cause = status;
    return Classify(status, phase);
  }
};

// Claims every owner of `part` as new to the ledger: a blind insert, without a read.
void ClaimAll(absl::Span<const size_t> part, Attempt& attempt);

// Decides, from `ledger` (the rows that exist of `part`, owners all of one app), which owners are
// answered by the ledger alone and which are claimed. Returns whether any row existed.
bool PlanClaims(const std::vector<Owner>& owners, absl::Span<const size_t> part,
                const storage::LedgerSnapshot& ledger, Attempt& attempt);

// Drops the claims of `app`'s events in `existing` (whose ledger rows the insert found), moving
// their owners to attempt.lost.
void DropLostClaims(const std::vector<Owner>& owners, absl::string_view app,
                    absl::Span<const std::string> existing, Attempt& attempt);

// What the claims of one app write: their ledger rows (done, or dead without a fold) and the
// fold of the events that fold.
struct AppWrites {
  std::vector<storage::LedgerWrite> inserts;
  std::vector<storage::LedgerWrite> updates;
  std::vector<domain::FoldEvent> folds;
  domain::WallDeltas deltas;
  bool keep_sent_wall = false;  // the folds also go into the senders' sent walls (§2.19)
};
using WritePlan = std::map<absl::string_view, AppWrites>;

// What each app folds besides its all-time wall, by its settings as the group's transaction read
// them: the periods its events are written into (DESIGN §2.15; an app not in `periods` writes
// none), and whether it keeps the sent wall (§2.19).
struct FoldSettings {
  std::map<std::string, domain::PeriodsToWrite, std::less<>> periods;
  std::set<std::string, std::less<>> sent_walls;
};

// The apps whose settings the attempt's claims need: those of the claims that fold.
std::vector<std::string> AppsToFold(const std::vector<Owner>& owners, const Attempt& attempt);

// Plans the writes of the attempt's claims, marking which fold and filling attempt.planned
// afresh; each folding event into its all-time wall and its app's periods, and (the app's
// settings saying so) its sender's sent wall. OUT_OF_RANGE if the fold overflows a total
// (Ending::kPermanent).
absl::StatusOr<WritePlan> PlanWrites(const std::vector<Owner>& owners, Attempt& attempt,
                                     const FoldSettings& settings = {});

// The failure that the attempt's claims record (§2.7), per app: rows to insert if absent, rows
// to update. A requeue's failure leaves the event dead as it was: the operator sees the error.
struct FailureWrites {
  std::vector<storage::LedgerWrite> inserts;
  std::vector<storage::LedgerWrite> updates;
};
std::map<absl::string_view, FailureWrites> PlanFailures(const std::vector<Owner>& owners,
                                                        const Attempt& attempt,
                                                        const domain::RetryPolicy& retry,
                                                        absl::FunctionRef<double()> jitter);

// The wall cap (§2.14), after the merge of one app's `deltas` added rows. The users of the
// deltas' all-time rows, in order; the keys of those rows of the users in `over` (walls past the
// cap). Period walls hold a subset of the all-time wall's gifts: the cap bounds them too.
std::vector<int64_t> UsersOf(const domain::WallDeltas& deltas);
std::vector<domain::WallKey> KeysOf(const domain::WallDeltas& deltas,
                                    const std::map<int64_t, int64_t>& over);

// The events of a wall refused by the cap.
struct CapRefusal {
  int64_t user_id = 0;
  size_t gifts = 0;            // new gifts refused
  std::vector<size_t> owners;  // their claimed events
};
// `over`: the users whose walls hold more than `cap` gifts, with how many; `counts`: the
// gift_count of their merged rows. A row that existed had a gift_count of its own, so only a new
// one holds exactly its delta's.
std::vector<CapRefusal> RefuseOverCap(const std::vector<Owner>& owners, const Attempt& attempt,
                                      absl::string_view app, const domain::WallDeltas& deltas,
                                      const std::map<int64_t, int64_t>& over,
                                      const std::map<domain::WallKey, int64_t>& counts,
                                      int64_t cap);

// Across the attempts at one part of the group.
struct Retrying {
  Retrying(const domain::RetryPolicy& policy, bool blind)
      : contention(policy), claim_blind(blind) {}

  storage::ContentionRetries contention;
  // A race (a ledger row inserted or changed by another caller since it was read) is retried at
  // once and not counted as contention while each retry claims fewer events: the other caller
  // has committed, and the next read answers its events.
  size_t raced_claims = SIZE_MAX;
  // Claim by inserting at once, without a read (relay groups while recent ones met no rows).
  bool claim_blind;
};

// What follows an attempt.
struct Step {
  enum Next {
    kDone,       // every owner of the part has its outcome
    kAgain,      // another attempt at the part (what is left of it), after `pause`
    kSplit,      // each half of the part on its own
    kEachAlone,  // each owner of the part on its own
    kFail,       // the owners without an outcome failed with `failure`
  };
  Next next = kDone;
  absl::Duration pause;
  absl::Status failure;
  bool met_existing_rows = false;  // a blind claim met a ledger row: read before claiming

  static Step Of(Next next, absl::Duration pause = absl::ZeroDuration()) {
    return Step{next, pause, absl::OkStatus(), false};
  }
};

// Settles what `attempt` decided in `owners` and says what follows. May mark an owner to die
// (an overflow it alone causes) and take an owner held by another caller out of `part`.
Step Decide(const Attempt& attempt, Retrying& state, std::vector<Owner>& owners,
            std::vector<size_t>& part);

}  // namespace giftwall::projection::group

#endif  // GIFTWALL_SERVER_PROJECTION_GROUP_PLAN_H_
