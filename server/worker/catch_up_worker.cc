#include "server/worker/catch_up_worker.h"

#include "glog/logging.h"

namespace giftwall::worker {

CatchUpWorker::CatchUpWorker(storage::ProjectionRepository& projection,
                             storage::LedgerRepository& ledger, CatchUpOptions options)
    : projection_(projection), ledger_(ledger), options_(std::move(options)) {}

void CatchUpWorker::Start() {
  CHECK(!thread_.joinable()) << "catch-up worker started twice";
  thread_ = std::thread([this] {
    do {
      RunRound();
    } while (!stop_.WaitForNotificationWithTimeout(options_.interval));
  });
}

void CatchUpWorker::Stop() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (thread_.joinable()) thread_.join();
}

CatchUpRound CatchUpWorker::RunRound() {
  absl::MutexLock lock(&mu_);
  CatchUpRound round;
  std::vector<std::string> apps = options_.app_codes;
  if (apps.empty()) {
    absl::StatusOr<std::vector<std::string>> found = ledger_.OutboxAppCodes();
    if (!found.ok()) {
      LOG(WARNING) << "catch-up: cannot list app codes: " << found.status();
      ++round.errors;
      return round;
    }
    apps = *std::move(found);
  }
  for (const std::string& app : apps) {
    if (stop_.HasBeenNotified()) break;
    ++round.apps;
    domain::ScanHorizon& horizon =
        horizons_.try_emplace(app, options_.safety_margin, options_.full_sweep_every).first->second;
    int64_t start = horizon.Start(absl::Now());
    int projected = 0, dead = 0;
    for (int pass = 0; pass < options_.max_passes && !stop_.HasBeenNotified(); ++pass) {
      absl::StatusOr<storage::CatchUpPass> result = projection_.ProjectPendingGiftWallEvents(
          storage::CatchUpRequest{app, options_.batch, start, options_.min_age});
      if (!result.ok()) {
        // The horizon stays: the next round starts again where this one could not go on.
        LOG(WARNING) << "catch-up: " << result.status();
        ++round.errors;
        break;
      }
      projected += result->projected;
      dead += result->dead;
      horizon.Advance(result->resume_from_ms);
      start = horizon.horizon_ms();
      if (result->found < options_.batch) break;  // caught up
    }
    if (projected > 0 || dead > 0) {
      LOG(INFO) << "catch-up: app " << app << ": projected " << projected
                << " event(s) the relay had not delivered or that were due for retry, " << dead
                << " went dead";
    }
    round.projected += projected;
    round.dead += dead;
  }
  return round;
}

}  // namespace giftwall::worker
