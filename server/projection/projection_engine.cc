#include "server/projection/projection_engine.h"

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/blocking_counter.h"
#include "glog/logging.h"
#include "server/logging/log_context.h"

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

bool SpansApps(const ProjectionUnit& unit) {
  return std::any_of(unit.events.begin(), unit.events.end(), [&](const domain::GiftEvent& e) {
    return e.app_code != unit.events.front().app_code;
  });
}

}  // namespace

ProjectionEngine::ProjectionEngine(GroupProjector& projector, EngineOptions options)
    : projector_(projector),
      group_by_app_(options.group_by_app),
      queue_(
          QueueOptions(options), [](const Submission& s) { return s.unit.events.size(); },
          [this](std::vector<Submission> group) { RunGroup(std::move(group)); },
          [this](Submission s, absl::Status why) {
            Answer(s, s.unit.by, s.unit.events.size(), std::move(why));
          },
          options.group_by_app
          ? [](const Submission& s) -> absl::string_view { return s.unit.events.front().app_code; }
          : concurrency::GroupQueue<Submission>::Partition()) {}

void ProjectionEngine::Submit(Submission submission) {
  if (submission.unit.events.empty()) {
    submission.done(std::vector<domain::ProjectionResult>());
    return;
  }
  if (group_by_app_ && SpansApps(submission.unit)) {
    SubmitPerApp(std::move(submission));
    return;
  }
  queue_.Submit(std::move(submission));
}

void ProjectionEngine::SubmitPerApp(Submission submission) {
  // The parts answer into one join; the last to answer answers the unit: its events' results in
  // the unit's order, or the first error of a part. A caller that retries the whole unit then
  // finds the parts that were projected duplicate (the ledger), never projected twice.
  struct Join {
    absl::Mutex mu;
    Submission whole;
    std::vector<domain::ProjectionResult> results ABSL_GUARDED_BY(mu);
    absl::Status error ABSL_GUARDED_BY(mu);
    size_t pending ABSL_GUARDED_BY(mu) = 0;
  };
  std::map<std::string, std::vector<size_t>> positions;  // by app, in the unit's order
  for (size_t i = 0; i < submission.unit.events.size(); ++i) {
    positions[submission.unit.events[i].app_code].push_back(i);
  }
  auto join = std::make_shared<Join>();
  std::vector<Submission> parts;
  for (const auto& [app, at] : positions) {
    Submission part;
    part.unit.by = submission.unit.by;
    for (size_t i : at) part.unit.events.push_back(submission.unit.events[i]);
    part.still_wanted = submission.still_wanted;
    part.done = [join, at = at](UnitResult result) {
      absl::MutexLock lock(&join->mu);
      if (!result.ok()) {
        if (join->error.ok()) join->error = result.status();
      } else {
        CHECK_EQ(result->size(), at.size()) << "a part answered for other events";
        for (size_t k = 0; k < at.size(); ++k) join->results[at[k]] = std::move((*result)[k]);
      }
      if (--join->pending > 0) return;
      UnitResult whole = join->error.ok() ? UnitResult(std::move(join->results)) : join->error;
      join->whole.done(std::move(whole));
    };
    parts.push_back(std::move(part));
  }
  {
    absl::MutexLock lock(&join->mu);
    join->results.resize(submission.unit.events.size());
    join->pending = parts.size();
  }
  join->whole = std::move(submission);
  for (Submission& part : parts) {
    // A part refused at once (a full queue, shutting down) has answered the unit: the parts
    // after it are answered with the same error, not projected for nobody.
    absl::Status refused;
    {
      absl::MutexLock lock(&join->mu);
      refused = join->error;
    }
    if (!refused.ok()) {
      Answer(part, part.unit.by, part.unit.events.size(), refused);
      continue;
    }
    queue_.Submit(std::move(part));
  }
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
  // The group's log lines name its calls and events (the first of each, and how many).
  logging::LogContext group_log;
  for (const ProjectionUnit& unit : units) {
    if (!unit.trace_id.empty()) group_log.AddTraceId(unit.trace_id);
    for (const domain::GiftEvent& event : unit.events) {
      if (group_log.events == 0) group_log.app_code = event.app_code;
      if (group_log.app_code != event.app_code) group_log.app_code.clear();
      group_log.AddEventId(event.event_id);
    }
  }
  const logging::ScopedLogContext scope(&group_log);
  std::vector<UnitResult> results = projector_.ProjectGroup(units);
  for (size_t i = 0; i < members.size(); ++i) {
    Answer(*members[i], units[i].by, sizes[i], std::move(results[i]));
  }
}

}  // namespace giftwall::projection
