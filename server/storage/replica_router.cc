#include "server/storage/replica_router.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "glog/logging.h"
#include "server/storage/db_clock.h"
#include "server/storage/migrator.h"

namespace giftwall::storage {
namespace {

constexpr absl::string_view kHeartbeatAge = "SELECT " GIFTWALL_DB_NOW_MS
                                            " - written_at_ms FROM giftwall_heartbeat "
                                            "WHERE name = 'primary'";

}  // namespace

ReplicaRouter::ReplicaRouter(ConnectionPool& primary, ConnectionPool& replica,
                             ReplicaOptions options)
    : primary_(primary), replica_(replica), options_(options) {
  thread_ = std::thread([this] { CheckLoop(); });
}

ReplicaRouter::~ReplicaRouter() {
  stop_.Notify();
  thread_.join();
}

absl::StatusOr<PooledConnection> ReplicaRouter::Acquire() {
  if (in_use_.load()) {
    absl::StatusOr<PooledConnection> conn = replica_.Acquire();
    if (conn.ok() || !options_.fall_back_to_primary) return conn;
    // Gone since the last check: the primary answers meanwhile.
    return primary_.Acquire();
  }
  if (options_.fall_back_to_primary) return primary_.Acquire();
  absl::MutexLock lock(&mu_);
  return absl::UnavailableError(absl::StrCat("the read replica is not used: ", not_used_because_,
                                             " (--read_replica_fallback=unavailable)"));
}

std::optional<double> ReplicaRouter::lag_seconds() const {
  absl::MutexLock lock(&mu_);
  return lag_seconds_;
}

std::string ReplicaRouter::Check() {
  if (conn_ == nullptr || conn_->broken()) {
    absl::StatusOr<std::unique_ptr<SqlConnection>> opened =
        SqlConnection::Open(replica_.options().endpoint, replica_.options().session);
    if (!opened.ok()) return absl::StrCat("cannot reach it: ", opened.status().message());
    conn_ = *std::move(opened);
  }
  absl::StatusOr<SchemaState> schema = ReadSchemaState(*conn_);
  if (!schema.ok()) {
    return absl::StrCat(conn_->broken() ? "cannot reach it: " : "cannot read its schema: ",
                        schema.status().message());
  }
  if (!schema->dirty.empty()) return schema->dirty;
  if (const int needed = LatestEmbeddedVersion(); schema->version < needed) {
    return absl::StrCat("its schema is at version ", schema->version, ", this binary needs ",
                        needed, " (the migration has not reached it yet)");
  }
  std::optional<int64_t> age_ms;
  absl::Status s = conn_->Query(kHeartbeatAge, {}, [&](const SqlRow& row) { age_ms = row.Int(0); });
  if (!s.ok()) return absl::StrCat("cannot read the heartbeat: ", s.message());
  if (!age_ms.has_value()) return "no heartbeat of the primary has reached it yet";
  const double lag = std::max<double>(0, static_cast<double>(*age_ms) / 1000);
  {
    absl::MutexLock lock(&mu_);
    lag_seconds_ = lag;
  }
  if (lag > absl::ToDoubleSeconds(options_.max_lag)) {
    return absl::StrFormat("it trails the primary by %.1f s, more than --read_replica_max_lag (%s)",
                           lag, absl::FormatDuration(options_.max_lag));
  }
  return "";
}

void ReplicaRouter::CheckLoop() {
  do {
    const std::string problem = Check();
    absl::MutexLock lock(&mu_);
    if (problem == not_used_because_ && in_use_ == problem.empty()) continue;
    if (problem.empty()) {
      LOG(INFO) << "read replica: in use (wall reads go to "
                << replica_.options().endpoint.Describe() << ")";
    } else if (in_use_ || not_used_because_ == "not checked yet") {
      LOG(WARNING) << "read replica: not used, " << problem << "; wall reads "
                   << (options_.fall_back_to_primary ? "go to the primary" : "answer UNAVAILABLE");
    }
    not_used_because_ = problem;
    in_use_ = problem.empty();
  } while (!stop_.WaitForNotificationWithTimeout(options_.check_every));
}

}  // namespace giftwall::storage
