// The server's configuration, from flags (each with a GIFTWALL_* environment fallback).
#ifndef GIFTWALL_SERVER_SERVER_CONFIG_H_
#define GIFTWALL_SERVER_SERVER_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/domain/app_settings.h"
#include "server/domain/backoff.h"
#include "server/domain/wall_cap.h"
#include "server/projection/projection_engine.h"
#include "server/reads/wall_reader.h"
#include "server/storage/connection_pool.h"
#include "server/storage/replica_router.h"
#include "server/transport/tls.h"
#include "server/worker/catch_up_worker.h"
#include "server/worker/rebuild_runner.h"

namespace giftwall {

// Threads that run admin calls (a verify may read a whole app): they never take a worker from
// the relay; and the calls that may wait for one.
inline constexpr int kAdminThreads = 2;
inline constexpr int kAdminQueueCapacity = 16;
// Lanes of the background projection engine (the catch-up scan's and requeue's groups).
inline constexpr int kBackgroundProjectionLanes = 1;

struct ServerConfig {
  std::string listen;
  // How --listen is served: TLS (tls set), or plaintext when asked for; neither only for
  // `migrate`, which serves nothing.
  std::optional<transport::TlsOptions> tls;
  bool plaintext = false;
  // A plaintext port with only the health service, for probes; empty: none.
  std::string health_listen;
  // ProjectMessage(s) project the outbox row of each message, not its payload.
  bool payload_from_outbox = false;
  // Where the database password came from; empty: the URL's.
  std::string mysql_password_file;
  // Who may call what; empty: every caller may call everything.
  std::string access_policy_file;
  absl::Duration access_policy_refresh;
  // The database, for serving: the relay's projections, and reads unless read_pool is set.
  storage::PoolOptions pool;
  // The same database for the admin calls and background work (the catch-up scan, verifies,
  // rebuilds): sessions apart, so that these never take the relay's.
  storage::PoolOptions background_pool;
  // Where wall reads go (GetGiftWall, ListGiftWallSenders, ListSponsorHistory,
  // GetSenderStanding): a replica. The primary serves
  // everything else, readiness included.
  std::optional<storage::PoolOptions> read_pool;
  // When the replica is read, and what reads do when it is not usable.
  storage::ReplicaOptions replica;
  // This replica's name in logs and lease rows, and how long its leases last unless renewed.
  std::string worker_id;
  absl::Duration lease_duration = absl::Seconds(30);
  domain::RetryPolicy retry;
  int64_t max_wall_gifts = domain::kDefaultMaxWallGifts;  // DESIGN §2.14
  domain::PeriodRetention period_retention;               // DESIGN §2.15
  int max_concurrent_rebuilds = worker::kDefaultMaxConcurrentRebuilds;
  int64_t grpc_memory_bytes = 0;  // grpc::ResourceQuota of the server
  // Group commit of projections.
  projection::EngineOptions engine;
  // GetGiftWall's coalesced reads.
  reads::WallReaderOptions reads;
  // How long an app's gift catalogue is used before it is read again.
  absl::Duration catalog_cache_ttl = absl::Seconds(5);
  absl::Duration opt_out_cache_ttl = absl::Seconds(5);
  int worker_threads = 0;
  int queue_capacity = 0;
  // On SIGTERM: readiness goes NOT_SERVING, then the server keeps serving this long so that
  // load balancers stop sending it calls, then it drains for at most shutdown_grace.
  absl::Duration drain_delay;
  absl::Duration shutdown_grace;
  // The background catch-up scan; off when its interval is 0.
  worker::CatchUpOptions catch_up;
  // Serve ProjectionAdminService.
  bool enable_admin = false;
  // Serve server reflection (open to every caller, like health).
  bool enable_reflection = true;
  // Serve Prometheus metrics on this host:port; empty: no metrics.
  std::string metrics_listen;
  // Connections: the server pings idle ones, and ends each after max_connection_age (plus grace
  // for the calls in flight) so that clients reconnect and spread over new replicas.
  absl::Duration keepalive_time;
  absl::Duration keepalive_timeout;
  absl::Duration max_connection_age;
  absl::Duration max_connection_age_grace;
};

// Reads and checks the flags. INVALID_ARGUMENT names the flag and what it expects.
absl::StatusOr<ServerConfig> ServerConfigFromFlags();

// OK when the config says how to serve (TLS or --plaintext), else INVALID_ARGUMENT saying so,
// and the zone database is there (domain::CheckZoneDatabase), else FAILED_PRECONDITION.
absl::Status CheckCanServe(const ServerConfig& config);

// The sessions the background pool must hold for what `config` runs on it: each admin thread,
// each running rebuild (its work: its lease is kept on a session apart), the catch-up scan, the
// primary's heartbeat, and the background projection
// engine's lanes (the scan's and requeue's groups).
int BackgroundSessionsNeeded(const ServerConfig& config);

// One line for the log: every setting, each as its flag's name=value; no secrets.
std::string Describe(const ServerConfig& config);

}  // namespace giftwall

#endif  // GIFTWALL_SERVER_SERVER_CONFIG_H_
