#include "server/worker/catch_up_worker.h"

#include <set>

#include "glog/logging.h"
#include "server/domain/app_code.h"

namespace giftwall::worker {

CatchUpWorker::CatchUpWorker(projection::Recovery& recovery, storage::LedgerRepository& ledger,
                             storage::ScanLocks* locks, CatchUpOptions options)
    : recovery_(recovery), ledger_(ledger), locks_(locks), options_(std::move(options)) {}

void CatchUpWorker::ReportStatus(const std::string& app) {
  if (sink_ == nullptr) return;
  auto [last, fresh] = reported_.try_emplace(app, absl::InfinitePast());
  if (!fresh && absl::Now() - last->second < options_.status_every) return;
  absl::StatusOr<storage::ProjectionStatus> status = ledger_.Status(app);
  if (!status.ok()) {
    LOG(WARNING) << "catch-up: cannot measure the status of app " << app << ": " << status.status();
    return;
  }
  last->second = absl::Now();
  sink_->Report(app, *status);
}

void CatchUpWorker::Start() {
  CHECK(!thread_.joinable()) << "catch-up worker started twice";
  thread_ = std::thread([this] {
    do {
      RunRound();
    } while (!stop_.WaitForNotificationWithTimeout(options_.interval));
  });
}

void CatchUpWorker::RequestStop() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
}

void CatchUpWorker::Stop() {
  RequestStop();
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
    // The relay normalizes app codes; the outbox may hold them as the wallet wrote them. Scan
    // under the normalized code, so both paths key the same ledger rows and walls.
    std::set<std::string> normalized;
    for (const std::string& raw : *found) {
      absl::StatusOr<std::string> code = domain::NormalizeAppCode(raw);
      if (!code.ok()) {
        LOG_EVERY_N(WARNING, 100) << "catch-up: skipping outbox app code: " << code.status();
        continue;
      }
      LOG_IF_EVERY_N(WARNING, *code != raw, 100)
          << "catch-up: outbox app code \"" << raw << "\" is not normalized; only rows under \""
          << *code << "\" are scanned";
      normalized.insert(*std::move(code));
    }
    apps.assign(normalized.begin(), normalized.end());
  }
  for (const std::string& app : apps) {
    if (stop_.HasBeenNotified()) break;
    if (locks_ != nullptr) {
      absl::StatusOr<bool> mine = locks_->Hold(app);
      if (!mine.ok()) {
        LOG(WARNING) << "catch-up: cannot take the scan lock of app " << app << ": "
                     << mine.status();
        ++round.errors;
        continue;
      }
      if (!*mine) {
        ++round.skipped;
        if (sink_ != nullptr && reported_.erase(app) > 0) sink_->Forget(app);
        continue;
      }
    }
    ++round.apps;
    domain::ScanHorizon& horizon =
        horizons_.try_emplace(app, options_.safety_margin, options_.full_sweep_every).first->second;
    int64_t start = horizon.Start(absl::Now());
    int projected = 0, dead = 0;
    for (int pass = 0; pass < options_.max_passes && !stop_.HasBeenNotified(); ++pass) {
      absl::StatusOr<projection::CatchUpPass> result = recovery_.ProjectPendingGiftWallEvents(
          projection::CatchUpRequest{app, options_.batch, start, options_.min_age});
      if (!result.ok()) {
        // The horizon stays: the next round starts again where this one could not go on.
        LOG(WARNING) << "catch-up: " << result.status();
        ++round.errors;
        break;
      }
      projected += result->projected;
      dead += result->dead;
      horizon.Advance(result->resume_from_ms, result->reached_newest);
      start = horizon.horizon_ms();
      if (result->reached_newest && result->found < options_.batch) break;  // caught up
    }
    if (projected > 0 || dead > 0) {
      LOG(INFO) << "catch-up: app " << app << ": projected " << projected
                << " event(s) the relay had not delivered or that were due for retry, " << dead
                << " went dead";
    }
    round.projected += projected;
    round.dead += dead;
    ReportStatus(app);
  }
  return round;
}

}  // namespace giftwall::worker
