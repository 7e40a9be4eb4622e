// The serving process's parts, owned in start-up order: the pools, the repositories, the
// projection and its engines, the use cases, the services, the workers, then (at Start) the gRPC
// server, the health port, the metrics and readiness. Members are declared in the order they
// are built, so they are torn down in reverse by construction. main parses the flags, creates,
// starts, waits for the signal and drains.
#ifndef GIFTWALL_SERVER_SERVER_H_
#define GIFTWALL_SERVER_SERVER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/grpcpp.h"
#include "server/metrics/metrics.h"
#include "server/projection/app_settings.h"
#include "server/projection/group_projector.h"
#include "server/projection/outbox_payloads.h"
#include "server/projection/period_pruner.h"
#include "server/projection/projection_engine.h"
#include "server/projection/recovery.h"
#include "server/projection/wall_audit.h"
#include "server/reads/catalog_cache.h"
#include "server/reads/opt_out_cache.h"
#include "server/reads/wall_reader.h"
#include "server/server_config.h"
#include "server/storage/app_settings_store.h"
#include "server/storage/catalog_repository.h"
#include "server/storage/connection_pool.h"
#include "server/storage/ledger_repository.h"
#include "server/storage/outbox_repository.h"
#include "server/storage/replica_router.h"
#include "server/storage/scan_leases.h"
#include "server/storage/sender_privacy_repository.h"
#include "server/storage/wall_repository.h"
#include "server/transport/access_control.h"
#include "server/transport/admin_service.h"
#include "server/transport/call_log.h"
#include "server/transport/gift_wall_service.h"
#include "server/transport/health_fanout.h"
#include "server/transport/readiness.h"
#include "server/transport/worker_pool.h"
#include "server/worker/catch_up_worker.h"
#include "server/worker/heartbeat_writer.h"
#include "server/worker/rebuild_runner.h"

namespace giftwall {

class Server {
 public:
  // Builds every part but the gRPC server. INVALID_ARGUMENT naming --access_policy_file when
  // the policy cannot be read.
  static absl::StatusOr<std::unique_ptr<Server>> Create(const ServerConfig& config);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Serves: the gRPC server, the health port, metrics, readiness, the catch-up scan.
  // UNAVAILABLE when a port cannot be had.
  absl::Status Start();

  // Readiness off, the scan told to stop, --drain_delay of serving on, then every queue
  // answered and the server stopped within --shutdown_grace.
  void Drain();

 private:
  Server(const ServerConfig& config, std::unique_ptr<transport::AccessControl> access);

  // The credentials of --listen: TLS (refusing strangers before their requests are read, with a
  // policy), or plaintext.
  std::shared_ptr<grpc::ServerCredentials> Credentials() const;
  // The interceptors, and the metrics server with --metrics_listen.
  absl::Status AddInterceptors(grpc::ServerBuilder& builder);
  // --health_listen's plaintext port, serving health only.
  absl::Status StartHealthPort(std::vector<grpc::HealthCheckServiceInterface*>& health);

  const ServerConfig config_;
  storage::ConnectionPool pool_;
  // Wall reads go to the replica when there is one, while it is usable (replica_); the primary
  // serves everything else.
  std::unique_ptr<storage::ConnectionPool> read_pool_;
  std::unique_ptr<storage::ReplicaRouter> replica_;
  // Admin calls and background work have sessions of their own: a long verify or rebuild, or a
  // scan of a large backlog, never leaves the relay waiting for one.
  storage::ConnectionPool background_pool_;
  storage::WallRepository wall_;
  storage::CatalogRepository catalog_;
  storage::SenderPrivacyRepository privacy_;  // on the primary
  storage::SentWallRepository sent_;          // read on the replica, as the walls
  storage::OutboxRepository outbox_;
  projection::GroupProjector projector_;
  projection::ProjectionEngine engine_;
  storage::LedgerRepository ledger_;
  storage::OutboxRepository background_outbox_;
  projection::WallAudit audit_;
  projection::GroupProjector background_projector_;
  projection::ProjectionEngine background_engine_;
  projection::Recovery recovery_;
  reads::PeriodResolver periods_;
  // Catalogues for wall reads, read on the primary (where they are written: a write through this
  // server is seen at its next wall read, whatever a replica's lag).
  reads::CatalogCache catalogs_;
  reads::OptOutCache opt_outs_;
  reads::WallReader reader_;
  worker::RebuildRunner rebuilds_;
  transport::WorkerPool workers_;
  std::unique_ptr<transport::AccessControl> access_;
  transport::CallLog call_log_;  // every call's trace id and access line
  storage::LedgerRepository serving_ledger_;
  projection::OutboxPayloads outbox_payloads_;
  transport::GiftWallService gift_wall_;
  storage::SettingsRepository settings_;
  projection::AppSettingsEditor settings_editor_;
  transport::WorkerPool admin_workers_;
  transport::AdminService admin_;
  projection::PeriodPruner pruner_;
  storage::ScanLeases scan_leases_;
  worker::CatchUpWorker catch_up_;
  worker::HeartbeatWriter heartbeat_;
  // From Start on.
  grpc::ResourceQuota quota_;
  std::unique_ptr<metrics::Metrics> metrics_;
  std::unique_ptr<grpc::Server> server_;
  // The health port's catch-all: a gRPC server needs one service besides health, and this one
  // answers every other method UNIMPLEMENTED, which is the point of that port.
  grpc::CallbackGenericService health_port_catch_all_;
  std::unique_ptr<grpc::Server> health_server_;
  std::unique_ptr<transport::HealthFanout> health_;
  std::unique_ptr<transport::ReadinessProbe> readiness_;
  bool drained_ = false;
};

}  // namespace giftwall

#endif  // GIFTWALL_SERVER_SERVER_H_
