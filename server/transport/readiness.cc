#include "server/transport/readiness.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "server/storage/migrator.h"
#include "server/storage/node_state.h"

namespace giftwall::transport {

ReadinessProbe::ReadinessProbe(storage::MysqlEndpoint endpoint, storage::SessionOptions session,
                               grpc::HealthCheckServiceInterface& health, absl::Duration interval)
    : endpoint_(std::move(endpoint)), session_(session), health_(health), interval_(interval) {
  // A probe takes one period at most: a database that stops answering (frozen, a dead network
  // path) turns readiness off within a period or two, not after the calls' own socket timeouts.
  session_.connect_timeout = std::min(session_.connect_timeout, interval_);
  session_.read_timeout = interval_;
  session_.write_timeout = interval_;
  Set(false);
  thread_ = std::thread([this] { Loop(); });
}

void ReadinessProbe::Stop() {
  {
    // NOT_SERVING first: load balancers must learn of the shutdown now, not after a probe that
    // may be waiting on the database.
    absl::MutexLock lock(&mu_);
    if (!stopped_) {
      stopped_ = true;
      health_.SetServingStatus(kReadinessService, false);
      health_.SetServingStatus("giftwall.v1.GiftWallService", false);
    }
  }
  std::call_once(stop_once_, [this] { stop_.Notify(); });  // Notify may run once only
}

ReadinessProbe::~ReadinessProbe() {
  Stop();
  thread_.join();
}

void ReadinessProbe::Set(bool serving) {
  absl::MutexLock lock(&mu_);
  if (stopped_) return;
  health_.SetServingStatus(kReadinessService, serving);
  health_.SetServingStatus("giftwall.v1.GiftWallService", serving);
}

std::string ReadinessProbe::Check() {
  if (conn_ == nullptr || conn_->broken()) {
    absl::StatusOr<std::unique_ptr<storage::SqlConnection>> opened =
        storage::SqlConnection::Open(endpoint_, session_);
    if (!opened.ok()) return std::string(opened.status().message());
    conn_ = *std::move(opened);
  }
  // The node first: a Galera node outside the primary component answers SHOW, and nothing else.
  absl::StatusOr<domain::NodeState> node = storage::ReadNodeState(*conn_);
  if (!node.ok()) return std::string(node.status().message());
  if (std::string problem = domain::NodeProblem(*node); !problem.empty()) return problem;
  absl::StatusOr<storage::SchemaState> schema = storage::ReadSchemaState(*conn_);
  if (!schema.ok()) return std::string(schema.status().message());
  if (!schema->dirty.empty()) return schema->dirty;
  const int needed = storage::LatestEmbeddedVersion();
  if (schema->version < needed) {
    return absl::StrCat("the database schema is at version ", schema->version,
                        ", this binary needs ", needed, ": run `giftwall-server migrate`");
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
