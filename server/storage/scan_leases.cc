#include "server/storage/scan_leases.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

namespace giftwall::storage {

ScanLeases::ScanLeases(MysqlEndpoint endpoint, SessionOptions session, const LeaseOptions& lease)
    : endpoint_(std::move(endpoint)),
      session_(session),
      holder_(NewLeaseHolder(lease.who)),
      duration_(lease.duration) {}

ScanLeases::~ScanLeases() {
  if (conn_ == nullptr || conn_->broken()) return;
  for (const auto& [app, held] : held_) {
    absl::Status released = LeaseStatements(*conn_).Release(held.lease);
    LOG_IF(WARNING, !released.ok()) << "catch-up: releasing the scan lease of app " << app
                                    << " (it expires by itself): " << released;
  }
}

absl::StatusOr<bool> ScanLeases::Hold(absl::string_view app_code) {
  const std::string app(app_code);
  // Held and renewed within a third of its duration: still ours for two thirds of it at least.
  if (auto it = held_.find(app);
      it != held_.end() && std::chrono::steady_clock::now() - it->second.renewed <
                               absl::ToChronoNanoseconds(duration_ / 3)) {
    return true;
  }
  const std::chrono::steady_clock::time_point asked = std::chrono::steady_clock::now();
  absl::StatusOr<Lease> lease;
  // Twice at most: a session found dead on the first try is replaced once.
  for (int attempt = 0;; ++attempt) {
    if (conn_ == nullptr || conn_->broken()) {
      conn_.reset();
      absl::StatusOr<std::unique_ptr<SqlConnection>> opened =
          SqlConnection::Open(endpoint_, session_);
      if (!opened.ok()) return opened.status();
      conn_ = *std::move(opened);
    }
    lease = LeaseStatements(*conn_).Acquire(absl::StrCat("scan/", app), holder_, duration_);
    if (lease.ok() || !conn_->broken() || attempt > 0) break;
  }
  if (lease.ok()) {
    if (held_.insert_or_assign(app, Held{*lease, asked}).second) {
      LOG(INFO) << "catch-up: this replica scans app " << app << " (lease token " << lease->token
                << ")";
    }
    return true;
  }
  if (lease.status().code() != absl::StatusCode::kFailedPrecondition) return lease.status();
  if (held_.erase(app) > 0) {
    LOG(WARNING) << "catch-up: another replica scans app " << app << ": "
                 << lease.status().message();
  }
  return false;
}

}  // namespace giftwall::storage
