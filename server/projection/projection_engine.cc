#include "server/projection/projection_engine.h"

#include <algorithm>
#include <utility>

#include "absl/synchronization/blocking_counter.h"
#include "glog/logging.h"

namespace giftwall::projection {
namespace {

absl::Status ShuttingDown() {
  return absl::UnavailableError("the server is shutting down; retry on another replica");
}

}  // namespace

ProjectionEngine::ProjectionEngine(GroupProjector& projector, EngineOptions options)
    : projector_(projector), options_(options) {
  CHECK_GT(options_.lanes, 0);
  CHECK_GT(options_.max_group_events, 0);
  CHECK_GT(options_.queue_capacity, 0);
  lanes_.reserve(static_cast<size_t>(options_.lanes));
  for (int i = 0; i < options_.lanes; ++i) lanes_.emplace_back([this] { Lane(); });
}

ProjectionEngine::~ProjectionEngine() { Shutdown(); }

void ProjectionEngine::Submit(Submission submission) {
  if (submission.unit.events.empty()) {
    submission.done(std::vector<domain::ProjectionResult>());
    return;
  }
  absl::Status refused;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) {
      refused = ShuttingDown();
    } else if (queue_.size() >= static_cast<size_t>(options_.queue_capacity)) {
      refused = absl::ResourceExhaustedError(
          "the server is overloaded (its projection queue is full); retry later");
    } else {
      queue_.push_back(std::move(submission));
      return;
    }
  }
  submission.done(refused);
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

int ProjectionEngine::queued() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(queue_.size());
}

EngineStats ProjectionEngine::Stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

std::vector<Submission> ProjectionEngine::TakeGroup() {
  std::vector<Submission> group;
  size_t events = 0;
  while (!queue_.empty()) {
    const size_t next = queue_.front().unit.events.size();
    if (!group.empty() && (!options_.group_commit ||
                           events + next > static_cast<size_t>(options_.max_group_events))) {
      break;
    }
    events += next;
    group.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  return group;
}

void ProjectionEngine::Lane() {
  for (;;) {
    std::vector<Submission> taken;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](ProjectionEngine* e)
               ABSL_EXCLUSIVE_LOCKS_REQUIRED(e->mu_) { return e->stopping_ || !e->queue_.empty(); },
          this));
      if (queue_.empty()) return;  // stopping, and nothing left
      taken = TakeGroup();
    }
    // Units whose callers gave up are answered without being projected.
    std::vector<ProjectionUnit> units;
    std::vector<Submission*> members;
    for (Submission& s : taken) {
      absl::Status wanted = s.still_wanted ? s.still_wanted() : absl::OkStatus();
      if (!wanted.ok()) {
        s.done(wanted);
        continue;
      }
      units.push_back(std::move(s.unit));
      members.push_back(&s);
    }
    if (units.empty()) continue;
    int64_t events = 0;
    for (const ProjectionUnit& unit : units) events += static_cast<int64_t>(unit.events.size());
    {
      absl::MutexLock lock(&mu_);
      ++stats_.groups;
      stats_.units += static_cast<int64_t>(units.size());
      stats_.events += events;
      stats_.largest_group_events = std::max(stats_.largest_group_events, events);
    }
    std::vector<UnitResult> results = projector_.ProjectGroup(units);
    for (size_t i = 0; i < members.size(); ++i) members[i]->done(std::move(results[i]));
  }
}

void ProjectionEngine::Shutdown(absl::Time drain_deadline) {
  std::deque<Submission> cancelled;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_ && lanes_.empty()) return;
    stopping_ = true;
    mu_.AwaitWithDeadline(absl::Condition(
                              +[](std::deque<Submission>* q) { return q->empty(); }, &queue_),
                          drain_deadline);
    cancelled.swap(queue_);
  }
  for (Submission& s : cancelled) s.done(ShuttingDown());
  for (std::thread& t : lanes_) t.join();
  lanes_.clear();
}

}  // namespace giftwall::projection
