// giftwall-server: wires the layers together and runs until SIGTERM or SIGINT.
//   giftwall-server            serve
//   giftwall-server migrate    apply migrations and exit
#include <signal.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "glog/logging.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/impl/server_builder_option.h"
#include "grpcpp/impl/server_builder_plugin.h"
#include "server/env_flags.h"
#include "server/metrics/metrics.h"
#include "server/projection/group_projector.h"
#include "server/projection/outbox_payloads.h"
#include "server/projection/recovery.h"
#include "server/projection/wall_audit.h"
#include "server/server_config.h"
#include "server/storage/connection_pool.h"
#include "server/storage/ledger_repository.h"
#include "server/storage/migrator.h"
#include "server/storage/outbox_repository.h"
#include "server/storage/wall_repository.h"
#include "server/transport/access_control.h"
#include "server/transport/admin_service.h"
#include "server/transport/gift_wall_service.h"
#include "server/transport/health_fanout.h"
#include "server/transport/readiness.h"
#include "server/transport/tls.h"
#include "server/transport/undecodable_requests.h"
#include "server/transport/worker_pool.h"
#include "server/worker/catch_up_worker.h"
#include "server/worker/rebuild_runner.h"

ABSL_FLAG(bool, print, false,
          "with migrate: print the SQL it would apply (and the INSERTs that record it), apply "
          "nothing");
ABSL_FLAG(int, clear_dirty, 0,
          "with migrate: record the migration of this version, left dirty by a run that stopped "
          "part way, as finished (once it has been completed by hand)");

namespace giftwall {
namespace {

int Migrate(const ServerConfig& config) {
  // DDL on a populated table can take far longer than any serving statement may: no statement
  // limit, a long socket timeout, and a lock wait that outlasts another replica's migration.
  storage::SessionOptions session = config.pool.session;
  session.statement_timeout = absl::ZeroDuration();
  session.read_timeout = session.write_timeout = absl::Hours(6);
  session.lock_wait_timeout = absl::Minutes(5);
  absl::StatusOr<std::unique_ptr<storage::SqlConnection>> conn =
      storage::SqlConnection::Open(config.pool.endpoint, session);
  if (!conn.ok()) {
    LOG(ERROR) << "migrate: " << conn.status().message();
    return 1;
  }
  if (absl::GetFlag(FLAGS_print)) {
    absl::StatusOr<std::string> sql = storage::PendingSql(**conn, storage::EmbeddedMigrations());
    if (!sql.ok()) {
      LOG(ERROR) << "migrate --print: " << sql.status().message();
      return 1;
    }
    std::fputs(sql->c_str(), stdout);
    return 0;
  }
  if (const int version = absl::GetFlag(FLAGS_clear_dirty); version != 0) {
    if (absl::Status s = storage::ClearDirty(**conn, version); !s.ok()) {
      LOG(ERROR) << "migrate --clear_dirty: " << s.message();
      return 1;
    }
    return 0;
  }
  absl::StatusOr<storage::MigrationReport> report =
      storage::Migrate(**conn, storage::EmbeddedMigrations());
  if (!report.ok()) {
    LOG(ERROR) << "migrate: " << report.status().message();
    return 1;
  }
  LOG(INFO) << "migrate: applied " << report->applied.size() << " migration(s); schema at version "
            << report->schema_version;
  return 0;
}

int Ms(absl::Duration d) {
  return static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(d), INT32_MAX));
}

// Keepalive, connection age and message size (DESIGN §6).
void ConfigureConnections(const ServerConfig& config, grpc::ServerBuilder& builder) {
  // A port already taken fails the start (SO_REUSEPORT would let two servers split its calls).
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, Ms(config.keepalive_time));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, Ms(config.keepalive_timeout));
  // Clients (the relay) may keep their idle connection alive with pings of their own.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10'000);
  if (config.max_connection_age > absl::ZeroDuration()) {
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS, Ms(config.max_connection_age));
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS,
                               Ms(config.max_connection_age_grace));
  }
  builder.SetMaxReceiveMessageSize(transport::kMaxReceiveMessageBytes);
}

// Takes server reflection out of a builder (--enable_reflection=false): its plugin registers
// itself with every builder as soon as the library is loaded.
class WithoutReflection final : public grpc::ServerBuilderOption {
 public:
  void UpdateArguments(grpc::ChannelArguments*) override {}
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>* plugins) override {
    plugins->erase(std::remove_if(plugins->begin(), plugins->end(),
                                  [](const std::unique_ptr<grpc::ServerBuilderPlugin>& plugin) {
                                    return plugin->name() == "proto_server_reflection";
                                  }),
                   plugins->end());
  }
};

// The gRPC services this server registers, for the metrics to pre-initialize.
std::vector<const google::protobuf::ServiceDescriptor*> ServedServices(const ServerConfig& config) {
  const google::protobuf::DescriptorPool& pool =
      *google::protobuf::DescriptorPool::generated_pool();
  std::vector<const google::protobuf::ServiceDescriptor*> services = {
      pool.FindServiceByName("giftwall.v1.GiftWallService"),
      pool.FindServiceByName("grpc.health.v1.Health")};
  if (config.enable_reflection) {
    services.push_back(pool.FindServiceByName("grpc.reflection.v1alpha.ServerReflection"));
  }
  if (config.enable_admin) {
    services.push_back(pool.FindServiceByName("giftwall.v1.ProjectionAdminService"));
  }
  services.erase(std::remove(services.begin(), services.end(), nullptr), services.end());
  return services;
}

// Signals are blocked in every thread (threads inherit the mask) and taken by sigwait in main:
// Server::Shutdown must not run inside a signal handler.
sigset_t BlockTerminationSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return signals;
}

int Serve(const ServerConfig& config) {
  const sigset_t signals = BlockTerminationSignals();

  // Built in order of dependency; destroyed in reverse, after the gRPC server.
  storage::ConnectionPool pool(config.pool);
  // Wall reads go to the replica when there is one; the primary serves everything else.
  std::unique_ptr<storage::ConnectionPool> read_pool;
  if (config.read_pool.has_value()) {
    read_pool = std::make_unique<storage::ConnectionPool>(*config.read_pool);
  }
  // Admin calls and background work have sessions of their own: a long verify or rebuild, or
  // a scan of a large backlog, never leaves the relay waiting for one.
  storage::ConnectionPool background_pool(config.background_pool);
  storage::WallRepository wall(read_pool != nullptr ? *read_pool : pool);
  storage::OutboxRepository outbox(pool);
  projection::GroupProjector projector(pool, config.retry, config.max_wall_gifts);
  projection::ProjectionEngine engine(projector, config.engine);
  storage::LedgerRepository ledger(background_pool);
  storage::OutboxRepository background_outbox(background_pool);
  projection::WallAudit audit(background_pool, config.retry, config.max_wall_gifts);
  projection::GroupProjector background_projector(background_pool, config.retry,
                                                  config.max_wall_gifts);
  projection::EngineOptions background_engine_options = config.engine;
  background_engine_options.lanes = kBackgroundProjectionLanes;
  projection::ProjectionEngine background_engine(background_projector, background_engine_options);
  projection::Recovery recovery(background_engine, background_outbox, ledger);
  reads::WallReader reader(wall, config.reads);
  worker::RebuildRunner rebuilds(audit, config.max_concurrent_rebuilds);
  transport::WorkerPool workers(config.worker_threads, config.queue_capacity);
  std::unique_ptr<transport::AccessControl> access = transport::AccessControl::Open();
  if (!config.access_policy_file.empty()) {
    absl::StatusOr<std::unique_ptr<transport::AccessControl>> from_file =
        transport::AccessControl::FromFile(config.access_policy_file, config.access_policy_refresh);
    if (!from_file.ok()) {
      LOG(ERROR) << "--access_policy_file: " << from_file.status().message();
      return 2;
    }
    access = *std::move(from_file);
  }
  storage::LedgerRepository serving_ledger(pool);
  const projection::OutboxPayloads outbox_payloads(engine, outbox, serving_ledger);
  transport::GiftWallService gift_wall(engine, reader, wall, workers, *access,
                                       config.payload_from_outbox ? &outbox_payloads : nullptr);
  transport::WorkerPool admin_workers(kAdminThreads, kAdminQueueCapacity);
  transport::AdminService admin(ledger, background_outbox, recovery, audit, rebuilds, admin_workers,
                                *access);
  storage::ScanLocks scan_locks(config.pool.endpoint, config.pool.session);
  worker::CatchUpWorker catch_up(recovery, ledger, background_outbox, &scan_locks, config.catch_up);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int port = 0;
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  if (config.tls.has_value()) {
    credentials = transport::TlsCredentials(*config.tls);
    // Callers the policy does not know are refused before their requests are read (plaintext
    // servers refuse them in the handlers).
    if (!config.access_policy_file.empty()) {
      credentials->SetAuthMetadataProcessor(access->RefuseStrangersBeforeReading());
    }
  }
  builder.AddListeningPort(config.listen, credentials, &port);
  // Bounds what the transport holds for all calls at once (their requests as they arrive).
  grpc::ResourceQuota quota("giftwall");
  quota.Resize(static_cast<size_t>(config.grpc_memory_bytes));
  builder.SetResourceQuota(quota);
  ConfigureConnections(config, builder);
  if (!config.enable_reflection) builder.SetOption(std::make_unique<WithoutReflection>());
  // Both outlive the server. The first answers undecodable requests; the metrics' count every
  // call, after the first has set its code.
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(std::make_unique<transport::UndecodableRequestInterceptorFactory>());
  std::unique_ptr<metrics::Metrics> metrics;
  if (!config.metrics_listen.empty()) {
    absl::StatusOr<std::unique_ptr<metrics::Metrics>> started = metrics::Metrics::Start(
        config.metrics_listen,
        {&pool, read_pool.get(), &background_pool, &engine, &background_engine, &reader, &workers,
         &admin_workers,
         config.tls.has_value() && !config.access_policy_file.empty() ? access.get() : nullptr},
        ServedServices(config));
    if (!started.ok()) {
      LOG(ERROR) << started.status().message();
      return 1;
    }
    metrics = *std::move(started);
    LOG(INFO) << "serving metrics on " << config.metrics_listen << " (port " << metrics->port()
              << ")";
    catch_up.ReportStatusTo(metrics.get());
    interceptors.push_back(metrics->InterceptorFactory());
  }
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  builder.RegisterService(&gift_wall);
  if (config.enable_admin) builder.RegisterService(&admin);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    LOG(ERROR) << "cannot listen on " << config.listen;
    return 1;
  }
  const std::string host = config.listen.substr(0, config.listen.rfind(':'));
  LOG(INFO) << "serving giftwall.v1.GiftWallService on " << host << ":" << port
            << (config.tls.has_value() ? " (TLS)" : " (plaintext)");
  std::vector<grpc::HealthCheckServiceInterface*> health_services = {
      server->GetHealthCheckService()};
  // Probes that cannot speak TLS ask a plaintext port that serves nothing but health.
  // The health port's catch-all: a gRPC server needs one service besides health, and this
  // one answers every other method UNIMPLEMENTED, which is the point of that port.
  grpc::CallbackGenericService health_port_catch_all;
  std::unique_ptr<grpc::Server> health_server;
  if (!config.health_listen.empty()) {
    grpc::ServerBuilder health_builder;
    health_builder.RegisterCallbackGenericService(&health_port_catch_all);
    health_builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    // Health only: reflection there would describe every service, admin included, to anyone.
    health_builder.SetOption(std::make_unique<WithoutReflection>());
    int health_port = 0;
    health_builder.AddListeningPort(config.health_listen, grpc::InsecureServerCredentials(),
                                    &health_port);
    health_server = health_builder.BuildAndStart();
    if (health_server == nullptr || health_port == 0) {
      LOG(ERROR) << "cannot listen on " << config.health_listen;
      server->Shutdown();
      return 1;
    }
    LOG(INFO) << "serving grpc.health.v1.Health on " << config.health_listen << " (port "
              << health_port << ", plaintext)";
    health_services.push_back(health_server->GetHealthCheckService());
  }
  transport::HealthFanout health(std::move(health_services));
  health.SetServingStatus("", true);
  transport::ReadinessProbe readiness(config.pool.endpoint, config.pool.session, health,
                                      absl::Seconds(2));
  if (config.enable_admin) LOG(INFO) << "serving giftwall.v1.ProjectionAdminService";
  if (config.catch_up.interval > absl::ZeroDuration()) catch_up.Start();

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  LOG(INFO) << "received " << strsignal(signal_number) << ": readiness off, draining";
  readiness.Stop();
  catch_up.RequestStop();
  absl::SleepFor(config.drain_delay);

  // gRPC stops accepting calls (one that reaches the process after this is CANCELLED before any
  // handler sees it) and at the deadline cancels whatever is still unanswered. Queued calls get
  // until a little before then to run; what is still queued answers UNAVAILABLE (retry), not
  // CANCELLED.
  const absl::Time deadline = absl::Now() + config.shutdown_grace;
  const absl::Time answer_by = deadline - std::min(absl::Seconds(1), config.shutdown_grace / 4);
  std::thread stopper([&] { server->Shutdown(absl::ToChronoTime(deadline)); });
  // Each queue before the one it feeds: a worker's call may still project.
  workers.Shutdown(answer_by);
  engine.Shutdown(answer_by);
  reader.Shutdown(answer_by);
  admin_workers.Shutdown(answer_by);
  background_engine.Shutdown(answer_by);
  stopper.join();
  server->Wait();
  // Liveness answered until the end.
  if (health_server != nullptr) health_server->Shutdown();
  catch_up.Stop();
  const projection::EngineStats writes = engine.Stats();
  const reads::WallReaderStats reads = reader.Stats();
  LOG(INFO) << "stopped; projected " << writes.events << " event(s) of " << writes.units
            << " call(s) in " << writes.groups << " group commit(s) (largest "
            << writes.largest_group_events << " events); read " << reads.reads << " wall(s) in "
            << reads.groups << " statement(s)";
  return 0;
}

}  // namespace
}  // namespace giftwall

int main(int argc, char** argv) {
  FLAGS_logtostderr = true;
  google::InitGoogleLogging(argv[0]);
  // Debian's Abseil is built with Mutex deadlock detection on, which records every lock
  // acquisition in a global graph: a debugging aid the tests keep, too costly to serve with.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  absl::SetProgramUsageMessage(
      "The gift wall projection service.\n"
      "  giftwall-server [flags]          serve gRPC until SIGTERM/SIGINT\n"
      "  giftwall-server migrate [flags]  apply database migrations and exit\n"
      "Every flag can also be set as GIFTWALL_<FLAG> in the environment.");
  std::vector<char*> args = giftwall::ParseFlagsWithEnvironment(argc, argv, "GIFTWALL_");
  giftwall::WarnOfUnknownVariables("GIFTWALL_", "giftwall-server");
  absl::StatusOr<giftwall::ServerConfig> config = giftwall::ServerConfigFromFlags();
  if (!config.ok()) {
    std::fprintf(stderr, "giftwall-server: %s\n", std::string(config.status().message()).c_str());
    return 2;
  }
  giftwall::storage::InitMysqlDriver();
  if (args.size() > 2 || (args.size() == 2 && absl::string_view(args[1]) != "migrate")) {
    std::fprintf(stderr, "giftwall-server: unknown command \"%s\" (known: migrate)\n", args[1]);
    return 2;
  }
  LOG(INFO) << giftwall::Describe(*config);
  if (args.size() == 2) return giftwall::Migrate(*config);
  if (absl::Status s = giftwall::CheckCanServe(*config); !s.ok()) {
    std::fprintf(stderr, "giftwall-server: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  return giftwall::Serve(*config);
}
