#include "server/transport/readiness.h"

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "server/storage/migrator.h"

namespace giftwall::transport {

ReadinessProbe::ReadinessProbe(storage::ConnectionPool& pool,
                               grpc::HealthCheckServiceInterface& health, absl::Duration interval)
    : pool_(pool), health_(health), interval_(interval) {
  Set(false);
  thread_ = std::thread([this] { Loop(); });
}

void ReadinessProbe::Stop() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (thread_.joinable()) thread_.join();
  Set(false);
}

void ReadinessProbe::Set(bool serving) {
  health_.SetServingStatus(kReadinessService, serving);
  health_.SetServingStatus("giftwall.v1.GiftWallService", serving);
}

std::string ReadinessProbe::Check() {
  absl::StatusOr<storage::PooledConnection> conn = pool_.Acquire();
  if (!conn.ok()) return std::string(conn.status().message());
  absl::StatusOr<int> version = storage::SchemaVersion(**conn);
  if (!version.ok()) return std::string(version.status().message());
  const int needed = storage::LatestEmbeddedVersion();
  if (*version < needed) {
    return absl::StrCat("the database schema is at version ", *version, ", this binary needs ",
                        needed, ": run `giftwall-server migrate`");
  }
  return "";
}

void ReadinessProbe::Loop() {
  std::string last = "not probed yet";
  do {
    std::string problem = Check();
    if (problem != last) {
      if (problem.empty()) {
        LOG(INFO) << "ready: the database answers";
      } else {
        LOG(WARNING) << "not ready: " << problem;
      }
      // Stop() may have run meanwhile; it sets NOT_SERVING after joining this thread.
      Set(problem.empty());
      last = std::move(problem);
    }
  } while (!stop_.WaitForNotificationWithTimeout(interval_));
}

}  // namespace giftwall::transport
