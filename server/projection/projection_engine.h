// Write coalescing (group commit) for the projection: concurrent callers' units are gathered and
// projected together, one transaction for many calls (DESIGN §2.13). A lane that is free takes
// everything waiting (up to a group's size) at once, so a call waits at most for the transactions
// in flight, never for a timer; under load, groups grow by themselves and a hot wall's row is
// written once per group instead of once per event. Each call gets its own outcome after its
// group's commit. ProjectMessage, ProjectMessages and the catch-up scan all come through here.
#ifndef GIFTWALL_SERVER_PROJECTION_PROJECTION_ENGINE_H_
#define GIFTWALL_SERVER_PROJECTION_PROJECTION_ENGINE_H_

#include <array>
#include <cstdint>
#include <functional>
#include <iterator>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/concurrency/group_queue.h"
#include "server/projection/group_projector.h"
#include "server/projection/unit.h"

namespace giftwall::projection {

struct EngineOptions {
  // Off: every unit is a transaction of its own.
  bool group_commit = true;
  // A group takes units until it holds this many events (a larger unit goes alone).
  int max_group_events = 500;
  // Groups in flight at most, each on a database session of its own. The first lane takes
  // whatever waits; another starts a group while one is in flight only if at least
  // parallel_min_events wait: a transaction has a fixed cost, so two small groups at once cost
  // more than one that holds them both.
  int lanes = 4;
  int parallel_min_events = 8;
  // Units that may wait for a lane; beyond this, Submit answers RESOURCE_EXHAUSTED at once.
  int queue_capacity = 2000;
  // Every transaction inside one app (--group_by=app_code), so that a database sharded by
  // app_code never sees one cross its shards: a group takes units of one app only, and a unit of
  // several apps (a mixed ProjectMessages batch) goes in as one unit per app, answered together.
  bool group_by_app = false;
};

// A unit as submitted: what to project, how to answer, and whether the caller still wants it.
struct Submission {
  ProjectionUnit unit;
  // Called exactly once: with the unit's result, or with why it was not projected.
  std::function<void(UnitResult)> done;
  // Asked when a lane takes the unit: a non-OK status (the caller gave up, its deadline passed)
  // answers the unit without projecting it. May be empty.
  std::function<absl::Status()> still_wanted;
};

// What the engine has done since it started.
struct EngineStats {
  int64_t groups = 0;  // transactions, or attempts at one (a group that had to split counts once)
  int64_t units = 0;
  int64_t events = 0;
  int64_t largest_group_events = 0;
  // Groups by their number of events: group_sizes[i] counts those of at most
  // kGroupSizeBounds[i] (and more than the bound before); the last, those larger than all.
  static constexpr int64_t kGroupSizeBounds[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};
  std::array<int64_t, std::size(kGroupSizeBounds) + 1> group_sizes{};
  // Events answered, by who asked for them and what became of them: a ProjectionOutcome's name,
  // or "not_projected" for the events of a unit answered with an error (retry later).
  std::map<std::pair<domain::ProjectedBy, std::string>, int64_t> outcomes;

  // Adds another engine's figures to these (the serving and the background engine report as
  // one projection).
  void Add(const EngineStats& other);
};

class ProjectionEngine final : public UnitProjector {
 public:
  ProjectionEngine(GroupProjector& projector, EngineOptions options);
  ProjectionEngine(const ProjectionEngine&) = delete;
  ProjectionEngine& operator=(const ProjectionEngine&) = delete;

  // Queues a unit. If the queue is full (RESOURCE_EXHAUSTED) or the engine is shutting down
  // (UNAVAILABLE), `done` is called at once, on the caller's thread; otherwise on a lane's.
  void Submit(Submission submission);

  // Submits every unit and waits for all of them. Must not be called from a lane.
  std::vector<UnitResult> ProjectUnits(std::vector<ProjectionUnit> units) override;

  // Refuses new units, lets the lanes take queued ones until `drain_deadline`, answers what is
  // still queued then with UNAVAILABLE, and waits for the groups in flight.
  void Shutdown(absl::Time drain_deadline = absl::InfinitePast()) {
    queue_.Shutdown(drain_deadline);
  }

  int queued() const { return queue_.queued(); }
  EngineStats Stats() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void RunGroup(std::vector<Submission> group) ABSL_LOCKS_EXCLUDED(mu_);
  // Submits a unit of several apps as one unit per app, and answers it once all are answered.
  void SubmitPerApp(Submission submission);
  // Answers a unit and counts what became of its events.
  void Answer(Submission& submission, domain::ProjectedBy by, size_t events, UnitResult result)
      ABSL_LOCKS_EXCLUDED(mu_);

  GroupProjector& projector_;
  const bool group_by_app_;
  mutable absl::Mutex mu_;
  EngineStats stats_ ABSL_GUARDED_BY(mu_);
  // Last: its lanes stop before the members they use go.
  concurrency::GroupQueue<Submission> queue_;
};

}  // namespace giftwall::projection

#endif  // GIFTWALL_SERVER_PROJECTION_PROJECTION_ENGINE_H_
