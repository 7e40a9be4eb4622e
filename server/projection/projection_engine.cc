#include "server/projection/projection_engine.h"

#include <algorithm>
#include <utility>

#include "absl/synchronization/blocking_counter.h"

namespace giftwall::projection {
namespace {

concurrency::GroupQueueOptions QueueOptions(const EngineOptions& options) {
  concurrency::GroupQueueOptions queue;
  queue.name = "projection";
  queue.lanes = options.lanes;
  queue.capacity = options.queue_capacity;
  // Without group commit, a group is one unit: a batch is a transaction of its own as ever.
  queue.max_group_weight =
      options.group_commit ? static_cast<size_t>(std::max(options.max_group_events, 1)) : 1;
  // Without group commit there is nothing to gather: every free lane takes a call.
  queue.parallel_min_weight =
      options.group_commit ? static_cast<size_t>(std::max(options.parallel_min_events, 0)) : 0;
  return queue;
}

}  // namespace

ProjectionEngine::ProjectionEngine(GroupProjector& projector, EngineOptions options)
    : projector_(projector),
      queue_(
          QueueOptions(options), [](const Submission& s) { return s.unit.events.size(); },
          [this](std::vector<Submission> group) { RunGroup(std::move(group)); },
          [this](Submission s, absl::Status why) {
            Answer(s, s.unit.by, s.unit.events.size(), std::move(why));
          }) {}

void ProjectionEngine::Submit(Submission submission) {
  if (submission.unit.events.empty()) {
    submission.done(std::vector<domain::ProjectionResult>());
    return;
  }
  queue_.Submit(std::move(submission));
}

std::vector<UnitResult> ProjectionEngine::ProjectUnits(std::vector<ProjectionUnit> units) {
  std::vector<UnitResult> results(units.size(), absl::UnknownError("unanswered"));
  absl::BlockingCounter pending(static_cast<int>(units.size()));
  for (size_t i = 0; i < units.size(); ++i) {
    Submit(Submission{std::move(units[i]),
                      [&results, &pending, i](UnitResult r) {
                        results[i] = std::move(r);
                        pending.DecrementCount();
                      },
                      nullptr});
  }
  pending.Wait();
  return results;
}

void EngineStats::Add(const EngineStats& other) {
  groups += other.groups;
  units += other.units;
  events += other.events;
  largest_group_events = std::max(largest_group_events, other.largest_group_events);
  for (size_t i = 0; i < group_sizes.size(); ++i) group_sizes[i] += other.group_sizes[i];
  for (const auto& [key, count] : other.outcomes) outcomes[key] += count;
}

EngineStats ProjectionEngine::Stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

void ProjectionEngine::Answer(Submission& submission, domain::ProjectedBy by, size_t events,
                              UnitResult result) {
  {
    absl::MutexLock lock(&mu_);
    if (result.ok()) {
      for (const domain::ProjectionResult& r : *result) {
        ++stats_.outcomes[{by, std::string(domain::ProjectionOutcomeName(r.outcome))}];
      }
    } else {
      stats_.outcomes[{by, "not_projected"}] += static_cast<int64_t>(events);
    }
  }
  submission.done(std::move(result));
}

void ProjectionEngine::RunGroup(std::vector<Submission> group) {
  // Units whose callers gave up are answered without being projected.
  std::vector<ProjectionUnit> units;
  std::vector<Submission*> members;
  std::vector<size_t> sizes;
  int64_t events = 0;
  for (Submission& s : group) {
    absl::Status wanted = s.still_wanted ? s.still_wanted() : absl::OkStatus();
    if (!wanted.ok()) {
      Answer(s, s.unit.by, s.unit.events.size(), wanted);
      continue;
    }
    events += static_cast<int64_t>(s.unit.events.size());
    sizes.push_back(s.unit.events.size());
    units.push_back(std::move(s.unit));
    members.push_back(&s);
  }
  if (units.empty()) return;
  {
    absl::MutexLock lock(&mu_);
    ++stats_.groups;
    stats_.units += static_cast<int64_t>(units.size());
    stats_.events += events;
    stats_.largest_group_events = std::max(stats_.largest_group_events, events);
    const auto bound = std::lower_bound(std::begin(EngineStats::kGroupSizeBounds),
                                        std::end(EngineStats::kGroupSizeBounds), events);
    ++stats_.group_sizes[static_cast<size_t>(bound - std::begin(EngineStats::kGroupSizeBounds))];
  }
  std::vector<UnitResult> results = projector_.ProjectGroup(units);
  for (size_t i = 0; i < members.size(); ++i) {
    Answer(*members[i], units[i].by, sizes[i], std::move(results[i]));
  }
}

}  // namespace giftwall::projection
