#include "server/worker/catch_up_worker.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_join.h"
#include "glog/logging.h"

namespace giftwall::worker {

CatchUpWorker::CatchUpWorker(projection::Recovery& recovery, storage::LedgerRepository& ledger,
                             storage::OutboxRepository& outbox, storage::ScanLeases* leases,
                             CatchUpOptions options)
    : recovery_(recovery),
      ledger_(ledger),
      outbox_(outbox),
      outbox_codes_(outbox),
      leases_(leases),
      options_(std::move(options)) {}

void CatchUpWorker::ReportStatus(const std::string& app,
                                 const std::vector<std::string>& outbox_codes) {
  if (sink_ == nullptr) return;
  auto [last, fresh] = reported_.try_emplace(app, absl::InfinitePast());
  if (!fresh && absl::Now() - last->second < options_.status_every) return;
  absl::StatusOr<storage::ProjectionStatus> status = ledger_.Status(app, outbox_codes);
  if (!status.ok()) {
    LOG(WARNING) << "catch-up: cannot measure the status of app " << app << ": " << status.status();
    return;
  }
  last->second = absl::Now();
  sink_->Report(app, *status);
}

void CatchUpWorker::ReportInvalidAppCodes(const std::vector<std::string>& codes) {
  if (sink_ == nullptr || absl::Now() - invalid_reported_ < options_.status_every) return;
  int64_t events = 0;
  if (!codes.empty()) {
    absl::StatusOr<int64_t> counted = outbox_.CountGiftEvents(codes);
    if (!counted.ok()) {
      LOG(WARNING) << "catch-up: cannot count the events under invalid app codes: "
                   << counted.status();
      return;
    }
    events = *counted;
    std::vector<std::string> shown;
    for (const std::string& code : codes) shown.push_back(absl::CHexEscape(code));
    LOG(WARNING) << "catch-up: " << events << " gift event(s) in the outbox are under app codes "
                 << "that no path can project: \"" << absl::StrJoin(shown, "\", \"") << "\"";
  }
  invalid_reported_ = absl::Now();
  sink_->ReportInvalidAppCodeEvents(events);
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
  std::call_once(stop_once_, [this] { stop_.Notify(); });  // Notify may run once only
}

void CatchUpWorker::Stop() {
  RequestStop();
  if (thread_.joinable()) thread_.join();
}

CatchUpRound CatchUpWorker::RunRound() {
  absl::MutexLock lock(&mu_);
  CatchUpRound round;
  absl::StatusOr<domain::OutboxAppCodes> codes = outbox_codes_.All();
  if (!codes.ok()) {
    LOG(WARNING) << "catch-up: cannot list app codes: " << codes.status();
    ++round.errors;
    return round;
  }
  ReportInvalidAppCodes(codes->invalid);
  std::vector<std::string> apps = options_.app_codes;
  if (apps.empty()) {
    for (const auto& [app, outbox_codes] : codes->by_app) apps.push_back(app);
  }
  for (const std::string& app : apps) {
    if (stop_.HasBeenNotified()) break;
    ScanApp(app, codes->Of(app), round);
  }
  return round;
}

void CatchUpWorker::ScanApp(const std::string& app, const std::vector<std::string>& outbox_codes,
                            CatchUpRound& round) {
  if (leases_ != nullptr) {
    absl::StatusOr<bool> mine = leases_->Hold(app);
    if (!mine.ok()) {
      LOG(WARNING) << "catch-up: cannot take the scan lease of app " << app << ": "
                   << mine.status();
      ++round.errors;
      return;
    }
    if (!*mine) {
      ++round.skipped;
      if (sink_ != nullptr && reported_.erase(app) > 0) sink_->Forget(app);
      return;
    }
  }
  ++round.apps;
  int projected = 0, dead = 0;
  for (const std::string& outbox_code : outbox_codes) {
    // The relay normalizes app codes, and so does the scan: rows the wallet wrote under "APP3X"
    // are app3x's events.
    LOG_IF_EVERY_N(INFO, outbox_code != app, 100)
        << "catch-up: outbox app code \"" << outbox_code << "\" is not normalized; its events "
        << "are projected under \"" << app << "\"";
    domain::ScanHorizon& horizon =
        horizons_.try_emplace(outbox_code, options_.safety_margin, options_.full_sweep_every)
            .first->second;
    int64_t start = horizon.Start(absl::Now());
    for (int pass = 0; pass < options_.max_passes && !stop_.HasBeenNotified(); ++pass) {
      projection::CatchUpRequest request{app, options_.batch, start, options_.min_age};
      request.outbox_app_code = outbox_code;
      absl::StatusOr<projection::CatchUpPass> result =
          recovery_.ProjectPendingGiftWallEvents(request);
      if (!result.ok()) {
        // The horizon stays: the next round starts again where this one could not go on.
        LOG(WARNING) << "catch-up: " << result.status();
        ++round.errors;
        break;
      }
      projected += result->projected;
      dead += result->dead;
      horizon.Advance(result->resume_from_ms, result->newest_ms);
      start = horizon.horizon_ms();
      if (result->reached_newest && result->found < options_.batch) break;  // caught up
    }
  }
  if (projected > 0 || dead > 0) {
    LOG(INFO) << "catch-up: app " << app << ": projected " << projected
              << " event(s) the relay had not delivered or that were due for retry, " << dead
              << " went dead";
  }
  round.projected += projected;
  round.dead += dead;
  ReportStatus(app, outbox_codes);
  PrunePeriods(app);
}

void CatchUpWorker::PrunePeriods(const std::string& app) {
  if (pruner_ == nullptr) return;
  absl::Time& last = pruned_.try_emplace(app, absl::InfinitePast()).first->second;
  if (absl::Now() - last < options_.prune_every) return;
  last = absl::Now();
  absl::StatusOr<int64_t> deleted = pruner_->Prune(app, [this] { return stop_.HasBeenNotified(); });
  if (!deleted.ok()) {
    LOG(WARNING) << "catch-up: pruning the period walls of app " << app << ": " << deleted.status();
  } else if (*deleted > 0) {
    LOG(INFO) << "catch-up: app " << app << ": pruned " << *deleted
              << " period wall and sender row(s) past retention";
  }
}

}  // namespace giftwall::worker
