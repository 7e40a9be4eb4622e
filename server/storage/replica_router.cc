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
  // Less the heartbeat's age on the primary: a beat that was late (its writer restarting, the
  // lease changing hands) is not lag.
  absl::StatusOr<int64_t> primary_age_ms = PrimaryHeartbeatAgeMs();
  if (!primary_age_ms.ok()) {
    return absl::StrCat("cannot read the primary's heartbeat: ", primary_age_ms.status().message());
  }
  const double lag = std::max<double>(0, static_cast<double>(*age_ms - *primary_age_ms) / 1000);
  {
    absl::MutexLock lock(&mu_);
    lag_seconds_ = lag;
  }
  // Back in use only well under the bound, so that a lag about the bound does not flip the reads
  // at every check.
  const double bound = absl::ToDoubleSeconds(options_.max_lag) * (in_use_ ? 1 : 0.5);
  if (lag > bound) {
    return absl::StrFormat(
        "it trails the primary by %.1f s, more than --read_replica_max_lag (%s; back in use "
        "below half of it)",
        lag, absl::FormatDuration(options_.max_lag));
  }
  return "";
}

absl::StatusOr<int64_t> ReplicaRouter::PrimaryHeartbeatAgeMs() {
  absl::StatusOr<PooledConnection> conn = primary_.Acquire();
  if (!conn.ok()) return conn.status();
  int64_t age_ms = 0;  // no row: no heartbeat written yet, none late either
  absl::Status s =
      (*conn)->Query(kHeartbeatAge, {}, [&](const SqlRow& row) { age_ms = row.Int(0); });
  if (!s.ok()) return s;
  return std::max<int64_t>(0, age_ms);
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
