#include "server/worker/rebuild_runner.h"

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "server/common/status_macros.h"

namespace giftwall::worker {

RebuildProgress RebuildJob::Progress() const {
  absl::MutexLock lock(&mu_);
  return progress_;
}

bool RebuildJob::WaitForChange(uint64_t* seen, absl::Duration timeout,
                               RebuildProgress* progress) const {
  absl::MutexLock lock(&mu_);
  const uint64_t before = *seen;
  auto changed = [this, before]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return version_ != before; };
  mu_.AwaitWithTimeout(absl::Condition(&changed), timeout);
  *progress = progress_;
  *seen = version_;
  return version_ != before;
}

void RebuildJob::Update(RebuildProgress progress) {
  absl::MutexLock lock(&mu_);
  progress_ = std::move(progress);
  ++version_;
}

RebuildRunner::~RebuildRunner() {
  stopping_ = true;
  absl::MutexLock lock(&mu_);
  for (Running& r : running_) r.thread.join();
}

absl::StatusOr<std::shared_ptr<RebuildJob>> RebuildRunner::Start(const std::string& app_code) {
  // Held while the lock is taken too, so that two calls cannot both pass the limit.
  absl::MutexLock guard(&mu_);
  // Threads of rebuilds that have finished are joined here rather than left to pile up.
  for (auto it = running_.begin(); it != running_.end();) {
    if (it->job->Progress().finished) {
      it->thread.join();
      it = running_.erase(it);
    } else {
      ++it;
    }
  }
  if (static_cast<int>(running_.size()) >= max_running_) {
    return absl::ResourceExhaustedError(
        absl::StrCat(running_.size(),
                     " rebuild(s) running in this server, the most "
                     "--max_concurrent_rebuilds allows: retry once one has finished"));
  }
  absl::StatusOr<std::unique_ptr<storage::LeaseKeeper>> lease = audit_.LockRebuild(app_code);
  if (!lease.ok()) return lease.status();
  auto job = std::make_shared<RebuildJob>(app_code);
  RebuildProgress listing;
  listing.phase = "listing users";
  job->Update(listing);
  running_.push_back(Running{job, std::thread([this, job, held = *std::move(lease)]() mutable {
                               Run(std::move(held), job);
                             })});
  return job;
}

namespace {

absl::Status LostLease(const RebuildProgress& progress) {
  return absl::AbortedError(absl::StrCat(
      "this rebuild lost its lease (the server paused, or the database was away, for longer than "
      "--lease_duration); rebuilt ",
      progress.done, " of ", progress.total, " users (each one completely): run it again"));
}

}  // namespace

void RebuildRunner::Run(std::unique_ptr<storage::LeaseKeeper> lease,
                        std::shared_ptr<RebuildJob> job) {
  const std::string& app = job->app_code();
  LOG(INFO) << "rebuild of app " << app << ": started";
  const absl::Time start = absl::Now();
  RebuildProgress progress;
  progress.phase = "listing users";
  absl::StatusOr<std::vector<int64_t>> users = audit_.ListUsers(app);
  absl::Status result = users.status();
  if (users.ok()) {
    progress.phase = "rebuilding";
    progress.total = static_cast<int64_t>(users->size());
    job->Update(progress);
    // One user's failure does not stop the others; a run of them (the database is gone) does.
    constexpr int kMaxFailuresInARow = 20;
    int64_t failed = 0;
    int failures_in_a_row = 0;
    absl::Status first_failure;
    for (int64_t user : *users) {
      if (stopping_) {
        result = absl::UnavailableError(
            absl::StrCat("the server is shutting down; rebuilt ", progress.done, " of ",
                         progress.total, " users (each one completely): run the rebuild again"));
        break;
      }
      absl::StatusOr<bool> rebuilt = audit_.RebuildUser(app, user, &lease->lease());
      if (lease->lost() || storage::IsLeaseLost(rebuilt.status())) {
        result = LostLease(progress);
        break;
      }
      if (!rebuilt.ok()) {
        ++failed;
        if (first_failure.ok()) {
          first_failure = Annotate(rebuilt.status(), absl::StrCat("user ", user));
        }
        LOG(WARNING) << "rebuild of app " << app << ": user " << user << ": " << rebuilt.status();
        if (++failures_in_a_row >= kMaxFailuresInARow) break;
        continue;
      }
      failures_in_a_row = 0;
      if (!*rebuilt) ++progress.unverifiable;
      ++progress.done;
      job->Update(progress);
    }
    if (result.ok() && failed == 0) {
      progress.phase = "rebuilding the sent wall";
      job->Update(progress);
      result = audit_
                   .RebuildSentWall(
                       app, [this] { return stopping_.load(); }, &lease->lease())
                   .status();
      if (lease->lost() || storage::IsLeaseLost(result)) result = LostLease(progress);
    }
    if (result.ok() && failed > 0) {
      result = absl::AbortedError(
          absl::StrCat("rebuilt ", progress.done, " of ", progress.total, " users; ", failed,
                       " failed (first: ", first_failure.message(), "): run the rebuild again"));
    }
  }
  lease.reset();  // released before "done": a watcher may start the next rebuild at once
  progress.phase = "done";
  progress.finished = true;
  progress.result = result;
  LOG(INFO) << "rebuild of app " << app << ": " << (result.ok() ? "finished" : result.ToString())
            << "; " << progress.done << " of " << progress.total << " users in "
            << absl::FormatDuration(absl::Now() - start) << ", " << progress.unverifiable
            << " left alone (not recomputable)";
  job->Update(std::move(progress));
}

}  // namespace giftwall::worker
