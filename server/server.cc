#include "server/server.h"

#include <algorithm>
#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/impl/server_builder_option.h"
#include "grpcpp/impl/server_builder_plugin.h"
#include "server/common/status_macros.h"
#include "server/transport/tls.h"
#include "server/transport/undecodable_requests.h"

namespace giftwall {
namespace {

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

storage::SessionSource& ReadSourceOf(const std::unique_ptr<storage::ReplicaRouter>& replica,
                                     storage::ConnectionPool& pool) {
  if (replica != nullptr) return *replica;
  return pool;
}

projection::EngineOptions BackgroundEngine(const ServerConfig& config) {
  projection::EngineOptions options = config.engine;
  options.lanes = kBackgroundProjectionLanes;
  return options;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Server>> Server::Create(const ServerConfig& config) {
  std::unique_ptr<transport::AccessControl> access = transport::AccessControl::Open();
  if (!config.access_policy_file.empty()) {
    absl::StatusOr<std::unique_ptr<transport::AccessControl>> from_file =
        transport::AccessControl::FromFile(config.access_policy_file, config.access_policy_refresh);
    if (!from_file.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--access_policy_file: ", from_file.status().message()));
    }
    access = *std::move(from_file);
  }
  return std::unique_ptr<Server>(new Server(config, std::move(access)));
}

Server::Server(const ServerConfig& config, std::unique_ptr<transport::AccessControl> access)
    : config_(config),
      pool_(config.pool),
      read_pool_(config.read_pool.has_value()
                     ? std::make_unique<storage::ConnectionPool>(*config.read_pool)
                     : nullptr),
      replica_(read_pool_ != nullptr
                   ? std::make_unique<storage::ReplicaRouter>(pool_, *read_pool_, config.replica)
                   : nullptr),
      background_pool_(config.background_pool),
      wall_(ReadSourceOf(replica_, pool_)),
      catalog_(pool_),
      privacy_(pool_),
      sent_(ReadSourceOf(replica_, pool_)),
      outbox_(pool_),
      projector_(pool_, config.retry, config.max_wall_gifts, config.period_retention),
      engine_(projector_, config.engine),
      ledger_(background_pool_),
      background_outbox_(background_pool_),
      audit_(background_pool_, config.retry, config.max_wall_gifts, config.period_retention,
             storage::LeaseOptions{config.worker_id, config.lease_duration}),
      background_projector_(background_pool_, config.retry, config.max_wall_gifts,
                            config.period_retention),
      background_engine_(background_projector_, BackgroundEngine(config)),
      recovery_(background_engine_, background_outbox_, ledger_),
      periods_([this](absl::string_view app_code) { return wall_.ReadSettings(app_code); },
               config.period_retention),
      catalogs_(
          [this](absl::string_view app_code) -> absl::StatusOr<std::vector<domain::CatalogGift>> {
            ASSIGN_OR_RETURN(storage::CatalogPage page,
                             catalog_.List(app_code, std::nullopt, domain::kMaxCatalogGifts));
            return std::move(page.gifts);
          },
          config.catalog_cache_ttl),
      // From the primary, as the catalogue: an opt-out through this server masks at once.
      opt_outs_(
          [this](absl::string_view app_code)
              -> absl::StatusOr<std::shared_ptr<const domain::OptOuts>> {
            ASSIGN_OR_RETURN(std::vector<int64_t> hidden, privacy_.ListHidden(app_code));
            return std::make_shared<const domain::OptOuts>(hidden.begin(), hidden.end());
          },
          config.opt_out_cache_ttl),
      reader_(wall_, periods_, catalogs_, opt_outs_, config.reads),
      rebuilds_(audit_, config.max_concurrent_rebuilds),
      workers_(config.worker_threads, config.queue_capacity),
      access_(std::move(access)),
      call_log_(access_.get()),
      serving_ledger_(pool_),
      outbox_payloads_(engine_, outbox_, serving_ledger_),
      gift_wall_(engine_, reader_, periods_, wall_, catalog_, catalogs_, privacy_, opt_outs_, sent_,
                 workers_, *access_, config.payload_from_outbox ? &outbox_payloads_ : nullptr),
      settings_(background_pool_),
      settings_editor_(settings_),
      admin_workers_(kAdminThreads, kAdminQueueCapacity),
      admin_(ledger_, recovery_, audit_, rebuilds_, settings_editor_, config.period_retention,
             admin_workers_, *access_),
      pruner_(settings_, config.period_retention),
      scan_leases_(config.pool.endpoint, config.pool.session,
                   storage::LeaseOptions{config.worker_id, config.lease_duration}),
      catch_up_(recovery_, ledger_, background_outbox_, &scan_leases_, config.catch_up),
      heartbeat_(background_pool_, storage::LeaseOptions{config.worker_id, config.lease_duration}),
      quota_("giftwall") {}

Server::~Server() {
  // A server that started and was never drained (a later part failed to start) stops at once.
  if (server_ != nullptr && !drained_) server_->Shutdown();
  if (health_server_ != nullptr && !drained_) health_server_->Shutdown();
}

std::shared_ptr<grpc::ServerCredentials> Server::Credentials() const {
  if (!config_.tls.has_value()) return grpc::InsecureServerCredentials();
  std::shared_ptr<grpc::ServerCredentials> credentials = transport::TlsCredentials(*config_.tls);
  // Callers the policy does not know are refused before their requests are read (plaintext
  // servers refuse them in the handlers).
  if (!config_.access_policy_file.empty()) {
    credentials->SetAuthMetadataProcessor(access_->RefuseStrangersBeforeReading());
  }
  return credentials;
}

absl::Status Server::AddInterceptors(grpc::ServerBuilder& builder) {
  // The first answers undecodable requests; the call log and the metrics see every call after the
  // first has set its code.
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(std::make_unique<transport::UndecodableRequestInterceptorFactory>());
  interceptors.push_back(call_log_.InterceptorFactory());
  if (!config_.metrics_listen.empty()) {
    ASSIGN_OR_RETURN(metrics_, metrics::Metrics::Start(
                                   config_.metrics_listen,
                                   {&pool_, read_pool_.get(), &background_pool_, &engine_,
                                    &background_engine_, &reader_, &workers_, &admin_workers_,
                                    config_.tls.has_value() && !config_.access_policy_file.empty()
                                        ? access_.get()
                                        : nullptr,
                                    replica_.get()},
                                   ServedServices(config_)));
    LOG(INFO) << "serving metrics on " << config_.metrics_listen << " (port " << metrics_->port()
              << ")";
    catch_up_.ReportStatusTo(metrics_.get());
    interceptors.push_back(metrics_->InterceptorFactory());
  }
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  return absl::OkStatus();
}

absl::Status Server::StartHealthPort(std::vector<grpc::HealthCheckServiceInterface*>& health) {
  if (config_.health_listen.empty()) return absl::OkStatus();
  grpc::ServerBuilder builder;
  builder.RegisterCallbackGenericService(&health_port_catch_all_);
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // Health only: reflection there would describe every service, admin included, to anyone.
  builder.SetOption(std::make_unique<WithoutReflection>());
  int port = 0;
  builder.AddListeningPort(config_.health_listen, grpc::InsecureServerCredentials(), &port);
  health_server_ = builder.BuildAndStart();
  if (health_server_ == nullptr || port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", config_.health_listen));
  }
  LOG(INFO) << "serving grpc.health.v1.Health on " << config_.health_listen << " (port " << port
            << ", plaintext)";
  health.push_back(health_server_->GetHealthCheckService());
  return absl::OkStatus();
}

absl::Status Server::Start() {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(config_.listen, Credentials(), &port);
  // Bounds what the transport holds for all calls at once (their requests as they arrive).
  quota_.Resize(static_cast<size_t>(config_.grpc_memory_bytes));
  builder.SetResourceQuota(quota_);
  ConfigureConnections(config_, builder);
  if (!config_.enable_reflection) builder.SetOption(std::make_unique<WithoutReflection>());
  RETURN_IF_ERROR(AddInterceptors(builder));
  builder.RegisterService(&gift_wall_);
  if (config_.enable_admin) builder.RegisterService(&admin_);
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", config_.listen));
  }
  const std::string host = config_.listen.substr(0, config_.listen.rfind(':'));
  LOG(INFO) << "serving giftwall.v1.GiftWallService on " << host << ":" << port
            << (config_.tls.has_value() ? " (TLS)" : " (plaintext)");
  // Probes that cannot speak TLS ask a plaintext port that serves nothing but health.
  std::vector<grpc::HealthCheckServiceInterface*> health = {server_->GetHealthCheckService()};
  RETURN_IF_ERROR(StartHealthPort(health));
  health_ = std::make_unique<transport::HealthFanout>(std::move(health));
  health_->SetServingStatus("", true);
  readiness_ = std::make_unique<transport::ReadinessProbe>(
      config_.pool.endpoint, config_.pool.session, *health_, absl::Seconds(2));
  if (config_.enable_admin) LOG(INFO) << "serving giftwall.v1.ProjectionAdminService";
  heartbeat_.Start();
  if (config_.catch_up.interval > absl::ZeroDuration()) {
    // The scan's thread also prunes the period walls past retention, of the apps it scans.
    catch_up_.PrunePeriodsWith(&pruner_);
    catch_up_.Start();
  }
  return absl::OkStatus();
}

void Server::Drain() {
  drained_ = true;
  readiness_->Stop();
  catch_up_.RequestStop();
  absl::SleepFor(config_.drain_delay);

  // gRPC stops accepting calls (one that reaches the process after this is CANCELLED before any
  // handler sees it) and at the deadline cancels whatever is still unanswered. Queued calls get
  // until a little before then to run; what is still queued answers UNAVAILABLE (retry), not
  // CANCELLED.
  const absl::Time deadline = absl::Now() + config_.shutdown_grace;
  const absl::Time answer_by = deadline - std::min(absl::Seconds(1), config_.shutdown_grace / 4);
  std::thread stopper([&] { server_->Shutdown(absl::ToChronoTime(deadline)); });
  // Each queue before the one it feeds: a worker's call may still project.
  workers_.Shutdown(answer_by);
  engine_.Shutdown(answer_by);
  reader_.Shutdown(answer_by);
  admin_workers_.Shutdown(answer_by);
  background_engine_.Shutdown(answer_by);
  stopper.join();
  server_->Wait();
  // Liveness answered until the end.
  if (health_server_ != nullptr) health_server_->Shutdown();
  catch_up_.Stop();
  const projection::EngineStats writes = engine_.Stats();
  const reads::WallReaderStats reads = reader_.Stats();
  LOG(INFO) << "stopped; projected " << writes.events << " event(s) of " << writes.units
            << " call(s) in " << writes.groups << " group commit(s) (largest "
            << writes.largest_group_events << " events); read " << reads.reads << " wall(s) in "
            << reads.groups << " statement(s)";
}

}  // namespace giftwall
