#include "server/metrics/metrics.h"

#include <algorithm>
#include <array>
#include <exception>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "glog/logging.h"
#include "prometheus/collectable.h"
#include "prometheus/counter.h"
#include "prometheus/exposer.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "server/metrics/process_metrics.h"
#include "server/storage/contention.h"
#include "server/storage/node_state.h"
#include "server/storage/sql_connection.h"
#include "server/transport/call_log.h"
#include "server/version.h"

namespace giftwall::metrics {
namespace {

using prometheus::ClientMetric;
using prometheus::Counter;
using prometheus::Family;
using prometheus::Gauge;
using prometheus::Histogram;
using prometheus::MetricFamily;
using prometheus::MetricType;

// grpc-go's codes.Code names, which go-grpc-prometheus puts in grpc_code.
constexpr std::array<const char*, 17> kCodeNames = {
    "OK",       "Canceled",       "Unknown",          "InvalidArgument",   "DeadlineExceeded",
    "NotFound", "AlreadyExists",  "PermissionDenied", "ResourceExhausted", "FailedPrecondition",
    "Aborted",  "OutOfRange",     "Unimplemented",    "Internal",          "Unavailable",
    "DataLoss", "Unauthenticated"};

const char* TypeName(const google::protobuf::MethodDescriptor& m) {
  if (m.client_streaming()) return m.server_streaming() ? "bidi_stream" : "client_stream";
  return m.server_streaming() ? "server_stream" : "unary";
}

// The series of one method.
struct MethodMetrics {
  Counter* started = nullptr;
  Counter* received = nullptr;
  Counter* sent = nullptr;
  Histogram* seconds = nullptr;
  std::array<Counter*, kCodeNames.size()> handled{};
};

ClientMetric Labeled(std::vector<ClientMetric::Label> labels) {
  std::sort(labels.begin(), labels.end());  // as the registry's own families print them
  ClientMetric m;
  m.label = std::move(labels);
  return m;
}

MetricFamily GaugeFamily(std::string name, std::string help) {
  return MetricFamily{std::move(name), std::move(help), MetricType::Gauge, {}};
}

MetricFamily CounterFamily(std::string name, std::string help) {
  return MetricFamily{std::move(name), std::move(help), MetricType::Counter, {}};
}

void AddGauge(MetricFamily* family, std::vector<ClientMetric::Label> labels, double value) {
  ClientMetric m = Labeled(std::move(labels));
  m.gauge.value = value;
  family->metric.push_back(std::move(m));
}

// A family of one unlabelled gauge, appended to `out`.
void AddOneGauge(std::vector<MetricFamily>* out, std::string name, std::string help, double value) {
  MetricFamily family = GaugeFamily(std::move(name), std::move(help));
  AddGauge(&family, {}, value);
  out->push_back(std::move(family));
}

void AddCounter(MetricFamily* family, std::vector<ClientMetric::Label> labels, double value) {
  ClientMetric m = Labeled(std::move(labels));
  m.counter.value = value;
  family->metric.push_back(std::move(m));
}

// What is read from the components at each scrape: no SQL, only their counters.
class ComponentCollector : public prometheus::Collectable {
 public:
  explicit ComponentCollector(Sources sources) : sources_(sources) {}

  std::vector<MetricFamily> Collect() const override {
    std::vector<MetricFamily> out;
    CollectProcess(&out);
    CollectPools(&out);
    if (sources_.engine != nullptr) {
      projection::EngineStats stats = sources_.engine->Stats();
      if (sources_.background_engine != nullptr) stats.Add(sources_.background_engine->Stats());
      CollectEngine(stats, &out);
    }
    if (sources_.reader != nullptr) {
      const reads::WallReaderStats stats = sources_.reader->Stats();
      MetricFamily reads = CounterFamily("giftwall_wall_reads_total",
                                         "GetGiftWall reads, and the statements that read them");
      AddCounter(&reads, {{"what", "read"}}, static_cast<double>(stats.reads));
      AddCounter(&reads, {{"what", "statement"}}, static_cast<double>(stats.groups));
      out.push_back(std::move(reads));
    }
    MetricFamily queues =
        GaugeFamily("giftwall_queue_depth", "Calls waiting for a lane or a worker thread");
    if (sources_.engine != nullptr) {
      AddGauge(&queues, {{"queue", "projection"}}, sources_.engine->queued());
    }
    if (sources_.background_engine != nullptr) {
      AddGauge(&queues, {{"queue", "background_projection"}}, sources_.background_engine->queued());
    }
    if (sources_.reader != nullptr) {
      AddGauge(&queues, {{"queue", "wall_read"}}, sources_.reader->queued());
    }
    if (sources_.workers != nullptr) {
      AddGauge(&queues, {{"queue", "worker"}}, sources_.workers->queued());
    }
    if (sources_.admin_workers != nullptr) {
      AddGauge(&queues, {{"queue", "admin"}}, sources_.admin_workers->queued());
    }
    out.push_back(std::move(queues));
    MetricFamily errors = CounterFamily(
        "giftwall_db_errors_total",
        "Database errors met, by MySQL/MariaDB error number (0: the connector's own)");
    for (const auto& [code, count] : storage::MysqlErrorCounts()) {
      AddCounter(&errors, {{"errno", absl::StrCat(code)}}, static_cast<double>(count));
    }
    out.push_back(std::move(errors));
    MetricFamily retries = CounterFamily(
        "giftwall_db_contention_retries_total",
        "Transactions tried again on contention, by kind: conflict (a deadlock, or on a Galera "
        "cluster a certification conflict: both are 1213) or lock_wait (1205)");
    for (const auto& [kind, count] : storage::ContentionRetryCounts()) {
      AddCounter(&retries, {{"kind", kind}}, static_cast<double>(count));
    }
    out.push_back(std::move(retries));
    if (std::optional<int64_t> failures = storage::LastWsrepCertFailures()) {
      AddOneGauge(&out, "giftwall_db_wsrep_local_cert_failures",
                  "The Galera node's wsrep_local_cert_failures, as the readiness probe last read "
                  "it (a counter of the node's, since it started): certification conflicts, "
                  "which the error number cannot tell from deadlocks",
                  static_cast<double>(*failures));
    }
    if (sources_.replica != nullptr) {
      AddOneGauge(&out, "giftwall_read_replica_in_use",
                  "1 while the wall reads go to the read replica; 0 while it is not usable "
                  "(unreachable, its schema behind, lagging past --read_replica_max_lag)",
                  sources_.replica->in_use() ? 1 : 0);
      if (std::optional<double> lag = sources_.replica->lag_seconds()) {
        AddOneGauge(&out, "giftwall_read_replica_lag_seconds",
                    "How far the read replica trails the primary, as last measured: the age of "
                    "its copy of the primary's heartbeat row (by the replica's clock) less that "
                    "row's age on the primary (a late beat is not lag)",
                    *lag);
      }
    }
    if (sources_.access != nullptr) {
      MetricFamily refused = CounterFamily(
          "giftwall_auth_refused_before_reading_total",
          "Calls from callers the access policy does not know, refused (UNAUTHENTICATED) "
          "before their request was read");
      AddCounter(&refused, {}, static_cast<double>(sources_.access->refused_before_reading()));
      out.push_back(std::move(refused));
    }
    return out;
  }

 private:
  // One family per figure, a series per pool.
  // As the Prometheus client libraries name them; left out if /proc cannot be read.
  static void CollectProcess(std::vector<MetricFamily>* out) {
    absl::StatusOr<ProcessSample> process = SampleThisProcess();
    if (!process.ok()) return;
    MetricFamily cpu = CounterFamily("process_cpu_seconds_total",
                                     "Total user and system CPU time spent in seconds.");
    AddCounter(&cpu, {}, process->stat.cpu_seconds);
    out->push_back(std::move(cpu));
    AddOneGauge(out, "process_resident_memory_bytes", "Resident memory size in bytes.",
                process->stat.resident_memory_bytes);
    AddOneGauge(out, "process_virtual_memory_bytes", "Virtual memory size in bytes.",
                process->stat.virtual_memory_bytes);
    AddOneGauge(out, "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds.",
                process->stat.start_time_seconds);
    AddOneGauge(out, "process_open_fds", "Number of open file descriptors.",
                static_cast<double>(process->open_fds));
    AddOneGauge(out, "process_max_fds", "Maximum number of open file descriptors.",
                static_cast<double>(process->max_fds));
  }

  void CollectPools(std::vector<MetricFamily>* out) const {
    MetricFamily sessions =
        GaugeFamily("giftwall_db_pool_sessions", "Database sessions of the pool, by state");
    MetricFamily max = GaugeFamily(
        "giftwall_db_pool_max_sessions",
        "The pool's size (--db_pool_size, --db_read_pool_size, --db_background_pool_size)");
    MetricFamily acquired =
        CounterFamily("giftwall_db_pool_acquired_total", "Sessions handed out by the pool");
    MetricFamily wait = CounterFamily("giftwall_db_pool_wait_seconds_total",
                                      "Time spent waiting for a free session, in all");
    MetricFamily exhausted =
        CounterFamily("giftwall_db_pool_exhausted_total",
                      "Waits for a session that ended without one (UNAVAILABLE)");
    const std::pair<const char*, const storage::ConnectionPool*> pools[] = {
        {"primary", sources_.pool},
        {"read", sources_.read_pool},
        {"background", sources_.background_pool}};
    for (const auto& [name, pool] : pools) {
      if (pool == nullptr) continue;
      const storage::PoolStats stats = pool->Stats();
      AddGauge(&sessions, {{"pool", name}, {"state", "in_use"}}, stats.leased);
      AddGauge(&sessions, {{"pool", name}, {"state", "idle"}}, stats.idle);
      AddGauge(&max, {{"pool", name}}, pool->options().max_size);
      AddCounter(&acquired, {{"pool", name}}, static_cast<double>(stats.acquired_total));
      AddCounter(&wait, {{"pool", name}}, absl::ToDoubleSeconds(stats.acquire_wait_total));
      AddCounter(&exhausted, {{"pool", name}}, static_cast<double>(stats.exhausted_total));
    }
    for (MetricFamily* family : {&sessions, &max, &acquired, &wait, &exhausted}) {
      if (!family->metric.empty()) out->push_back(std::move(*family));
    }
  }

  static void CollectEngine(const projection::EngineStats& stats, std::vector<MetricFamily>* out) {
    MetricFamily events = CounterFamily(
        "giftwall_projection_events_total",
        "Events answered by the projection, by source (relay, scan, requeue) and outcome "
        "(not_projected: the call failed and is to be retried)");
    for (const auto& [key, count] : stats.outcomes) {
      AddCounter(
          &events,
          {{"source", std::string(domain::ProjectedByName(key.first))}, {"outcome", key.second}},
          static_cast<double>(count));
    }
    out->push_back(std::move(events));
    MetricFamily groups{"giftwall_projection_group_events",
                        "Events per group commit (one transaction, unless it had to split)",
                        MetricType::Histogram,
                        {}};
    ClientMetric h;
    uint64_t cumulative = 0;
    for (size_t i = 0; i < stats.group_sizes.size(); ++i) {
      cumulative += static_cast<uint64_t>(stats.group_sizes[i]);
      ClientMetric::Bucket bucket;
      bucket.cumulative_count = cumulative;
      bucket.upper_bound = i < std::size(projection::EngineStats::kGroupSizeBounds)
                               ? static_cast<double>(projection::EngineStats::kGroupSizeBounds[i])
                               : std::numeric_limits<double>::infinity();
      h.histogram.bucket.push_back(bucket);
    }
    h.histogram.sample_count = static_cast<uint64_t>(stats.groups);
    h.histogram.sample_sum = static_cast<double>(stats.events);
    groups.metric.push_back(std::move(h));
    out->push_back(std::move(groups));
  }

  const Sources sources_;
};

}  // namespace

class Metrics::Impl {
 public:
  Impl(std::unique_ptr<prometheus::Exposer> exposer, Sources sources)
      : exposer_(std::move(exposer)),
        registry_(std::make_shared<prometheus::Registry>()),
        components_(std::make_shared<ComponentCollector>(sources)),
        access_(sources.access),
        started_(prometheus::BuildCounter()
                     .Name("grpc_server_started_total")
                     .Help("Total number of RPCs started on the server.")
                     .Register(*registry_)),
        handled_(prometheus::BuildCounter()
                     .Name("grpc_server_handled_total")
                     .Help("Total number of RPCs completed on the server, regardless of success "
                           "or failure.")
                     .Register(*registry_)),
        received_(prometheus::BuildCounter()
                      .Name("grpc_server_msg_received_total")
                      .Help("Total number of RPC stream messages received on the server.")
                      .Register(*registry_)),
        sent_(prometheus::BuildCounter()
                  .Name("grpc_server_msg_sent_total")
                  .Help("Total number of gRPC stream messages sent by the server.")
                  .Register(*registry_)),
        seconds_(prometheus::BuildHistogram()
                     .Name("grpc_server_handling_seconds")
                     .Help("Histogram of response latency (seconds) of gRPC that had been "
                           "application-level handled by the server.")
                     .Register(*registry_)) {
    // An app's projection as the replica that scans it last measured it (SQL, every
    // --catchup_status_every); the other replicas do not report the app.
    for (const auto& [what, help] : std::vector<std::pair<std::string, std::string>>{
             {"giftwall_projection_unprojected_events",
              "Outbox gift events not projected yet (no ledger row, failed or processing)"},
             {"giftwall_projection_lag_seconds", "Age of the oldest unprojected outbox event"},
             {"giftwall_projection_failed_events", "Events that failed and wait for a retry"},
             {"giftwall_projection_dead_events", "Events that can never be projected"},
             {"giftwall_projection_oldest_dead_age_seconds", "Age of the oldest dead event"},
             {"giftwall_projection_recovered_by_scan_events",
              "Events the catch-up scan projected (the relay had lost them), as the ledger "
              "says"}}) {
      app_gauges_.emplace(what,
                          &prometheus::BuildGauge().Name(what).Help(help).Register(*registry_));
    }
    invalid_app_code_events_ =
        &prometheus::BuildGauge()
             .Name("giftwall_outbox_invalid_app_code_events")
             .Help(
                 "Outbox gift events under app codes that do not normalize: no path can "
                 "project them")
             .Register(*registry_)
             .Add({});
    if (access_ != nullptr) {
      caller_calls_ = &prometheus::BuildCounter()
                           .Name("giftwall_caller_calls_total")
                           .Help(
                               "Calls answered, by the access policy's name for their caller "
                               "(\"unidentified\": none) and their status code")
                           .Register(*registry_);
    }
    prometheus::BuildGauge()
        .Name("giftwall_build_info")
        .Help("The build: 1, labelled with its version")
        .Register(*registry_)
        .Add({{"version", Version()}})
        .Set(1);
    exposer_->RegisterCollectable(registry_);
    exposer_->RegisterCollectable(components_);
    Init("unknown", "unknown", "unknown", &unknown_);
  }

  // The series of `method` ("/package.Service/Method"), if a service the server registers
  // declares it; every other path a caller sends counts under one fixed series (method
  // "unknown"), so that no caller can grow the metrics.
  MethodMetrics* For(const std::string& method) {
    absl::ReaderMutexLock lock(&mu_);
    auto it = methods_.find(method);
    return it != methods_.end() ? &it->second : &unknown_;
  }

  // Counts a call answered with `code` under its caller, with an access policy. The policy's
  // callers bound the label set.
  void CountCaller(const grpc::ServerContextBase* context, size_t code) {
    if (caller_calls_ == nullptr || context == nullptr) return;
    // The call log's interceptor, which runs first, has named the caller already.
    const std::shared_ptr<const transport::CallContext> call = transport::CallLog::Find(context);
    std::string caller = call != nullptr ? call->log.caller : access_->CallerOf(*context);
    if (caller.empty()) caller = "unidentified";
    caller_calls_->Add({{"caller", std::move(caller)}, {"code", kCodeNames[code]}}).Increment();
  }

  void Declare(const google::protobuf::ServiceDescriptor& service) {
    absl::MutexLock lock(&mu_);
    for (int i = 0; i < service.method_count(); ++i) {
      const google::protobuf::MethodDescriptor& m = *service.method(i);
      auto [it, fresh] =
          methods_.try_emplace(absl::StrCat("/", service.full_name(), "/", m.name()));
      if (fresh) Init(service.full_name(), m.name(), TypeName(m), &it->second);
    }
  }

  void Report(const std::string& app, const storage::ProjectionStatus& status) {
    absl::MutexLock lock(&apps_mu_);
    auto set = [&](const char* what, double value) {
      app_gauges_.at(what)->Add({{"app_code", app}}).Set(value);
    };
    set("giftwall_projection_unprojected_events", static_cast<double>(status.unprojected));
    set("giftwall_projection_lag_seconds",
        static_cast<double>(status.oldest_unprojected_age_ms) / 1000.0);
    set("giftwall_projection_failed_events", static_cast<double>(status.failed));
    set("giftwall_projection_dead_events", static_cast<double>(status.dead));
    set("giftwall_projection_oldest_dead_age_seconds",
        static_cast<double>(status.oldest_dead_age_ms) / 1000.0);
    set("giftwall_projection_recovered_by_scan_events",
        static_cast<double>(status.recovered_by_scan));
    reported_.insert(app);
  }

  void Forget(const std::string& app) {
    absl::MutexLock lock(&apps_mu_);
    if (reported_.erase(app) == 0) return;
    for (auto& [what, family] : app_gauges_) family->Remove(&family->Add({{"app_code", app}}));
  }

  void ReportInvalidAppCodeEvents(int64_t events) {
    invalid_app_code_events_->Set(static_cast<double>(events));
  }

  int port() const {
    const std::vector<int> ports = exposer_->GetListeningPorts();
    return ports.empty() ? 0 : ports.front();
  }

 private:
  void Init(const std::string& service, const std::string& name, const char* type,
            MethodMetrics* m) {
    const std::map<std::string, std::string> labels = {
        {"grpc_type", type}, {"grpc_service", service}, {"grpc_method", name}};
    m->started = &started_.Add(labels);
    m->received = &received_.Add(labels);
    m->sent = &sent_.Add(labels);
    m->seconds = &seconds_.Add(labels, Histogram::BucketBoundaries{0.005, 0.01, 0.025, 0.05, 0.1,
                                                                   0.25, 0.5, 1, 2.5, 5, 10});
    for (size_t code = 0; code < kCodeNames.size(); ++code) {
      std::map<std::string, std::string> with_code = labels;
      with_code["grpc_code"] = kCodeNames[code];
      m->handled[code] = &handled_.Add(with_code);
    }
  }

  std::unique_ptr<prometheus::Exposer> exposer_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::shared_ptr<ComponentCollector> components_;
  const transport::AccessControl* const access_;
  Family<Counter>& started_;
  Family<Counter>& handled_;
  Family<Counter>& received_;
  Family<Counter>& sent_;
  Family<Histogram>& seconds_;
  std::map<std::string, Family<Gauge>*> app_gauges_;  // by metric name
  Gauge* invalid_app_code_events_ = nullptr;
  Family<Counter>* caller_calls_ = nullptr;  // with an access policy
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, MethodMetrics> methods_ ABSL_GUARDED_BY(mu_);
  MethodMetrics unknown_;  // every method no registered service declares
  absl::Mutex apps_mu_;
  std::set<std::string> reported_ ABSL_GUARDED_BY(apps_mu_);
};

namespace {

// Counts one call: started when created, messages as they pass, handled with its code.
class CallInterceptor : public grpc::experimental::Interceptor {
 public:
  CallInterceptor(Metrics::Impl& impl, grpc::experimental::ServerRpcInfo& info)
      : impl_(impl),
        context_(info.server_context()),
        m_(impl.For(info.method())),
        start_(absl::Now()) {
    m_->started->Increment();
  }

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    using Hook = grpc::experimental::InterceptionHookPoints;
    if (methods->QueryInterceptionHookPoint(Hook::POST_RECV_MESSAGE)) m_->received->Increment();
    if (methods->QueryInterceptionHookPoint(Hook::PRE_SEND_MESSAGE)) m_->sent->Increment();
    if (methods->QueryInterceptionHookPoint(Hook::PRE_SEND_STATUS)) {
      size_t code = static_cast<size_t>(methods->GetSendStatus().error_code());
      if (code >= kCodeNames.size()) code = 2;  // Unknown
      m_->handled[code]->Increment();
      impl_.CountCaller(context_, code);
      m_->seconds->Observe(absl::ToDoubleSeconds(absl::Now() - start_));
    }
    methods->Proceed();
  }

 private:
  Metrics::Impl& impl_;
  const grpc::ServerContextBase* const context_;
  MethodMetrics* const m_;
  const absl::Time start_;
};

class InterceptorFactory : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit InterceptorFactory(Metrics::Impl& impl) : impl_(impl) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new CallInterceptor(impl_, *info);
  }

 private:
  Metrics::Impl& impl_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Metrics>> Metrics::Start(
    const std::string& listen, Sources sources,
    const std::vector<const google::protobuf::ServiceDescriptor*>& services) {
  std::unique_ptr<prometheus::Exposer> exposer;
  try {
    exposer = std::make_unique<prometheus::Exposer>(listen, 1);
  } catch (const std::exception& e) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot serve metrics on ", listen, ": ", e.what()));
  }
  auto impl = std::make_unique<Impl>(std::move(exposer), sources);
  for (const google::protobuf::ServiceDescriptor* service : services) impl->Declare(*service);
  return std::unique_ptr<Metrics>(new Metrics(std::move(impl)));
}

Metrics::Metrics(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Metrics::~Metrics() = default;

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
Metrics::InterceptorFactory() {
  return std::make_unique<metrics::InterceptorFactory>(*impl_);
}

int Metrics::port() const { return impl_->port(); }

void Metrics::Report(const std::string& app_code, const storage::ProjectionStatus& status) {
  impl_->Report(app_code, status);
}

void Metrics::Forget(const std::string& app_code) { impl_->Forget(app_code); }

void Metrics::ReportInvalidAppCodeEvents(int64_t events) {
  impl_->ReportInvalidAppCodeEvents(events);
}

}  // namespace giftwall::metrics
