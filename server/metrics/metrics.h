// Prometheus metrics on a port of their own (--metrics_listen): gRPC's server metrics under the
// names and labels of go-grpc-prometheus (which existing dashboards use), pre-initialized for
// every method served; the projection's outcomes by source, its group sizes and its lag; the
// database pool and errors; queue depths; build info. Everything but the lag is read from the
// components' own counters when Prometheus scrapes; the lag needs SQL, and the catch-up worker
// reports it as it scans (never per scrape).
#ifndef GIFTWALL_SERVER_METRICS_METRICS_H_
#define GIFTWALL_SERVER_METRICS_METRICS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "google/protobuf/descriptor.h"
#include "grpcpp/support/server_interceptor.h"
#include "server/projection/projection_engine.h"
#include "server/reads/wall_reader.h"
#include "server/storage/connection_pool.h"
#include "server/storage/ledger_repository.h"
#include "server/storage/replica_router.h"
#include "server/transport/access_control.h"
#include "server/transport/worker_pool.h"
#include "server/worker/catch_up_worker.h"

namespace prometheus {
class Exposer;
class Registry;
}  // namespace prometheus

namespace giftwall::metrics {

// What the metrics read when scraped. Every pointer must outlive the Metrics; null ones are left
// out.
struct Sources {
  const storage::ConnectionPool* pool = nullptr;             // pool="primary"
  const storage::ConnectionPool* read_pool = nullptr;        // pool="read": --mysql_read_url's
  const storage::ConnectionPool* background_pool = nullptr;  // pool="background"
  const projection::ProjectionEngine* engine = nullptr;      // the relay's
  const projection::ProjectionEngine* background_engine = nullptr;  // the scan's and requeues'
  const reads::WallReader* reader = nullptr;
  const transport::WorkerPool* workers = nullptr;
  const transport::WorkerPool* admin_workers = nullptr;
  const transport::AccessControl* access = nullptr;  // with a policy, over TLS
  const storage::ReplicaRouter* replica = nullptr;   // with --mysql_read_url
};

class Metrics final : public worker::AppStatusSink {
 public:
  // Serves /metrics on `listen` (host:port; port 0 picks a free one). `services`: the gRPC
  // services the server registers, whose methods are pre-initialized. FAILED_PRECONDITION if the
  // port cannot be bound.
  static absl::StatusOr<std::unique_ptr<Metrics>> Start(
      const std::string& listen, Sources sources,
      const std::vector<const google::protobuf::ServiceDescriptor*>& services);
  ~Metrics() override;

  // For grpc::ServerBuilder::experimental().SetInterceptorCreators: counts every call. The
  // factory refers to this object, which must outlive the server.
  std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> InterceptorFactory();

  // The port /metrics is served on.
  int port() const;

  // worker::AppStatusSink: the lag, dead and recovered counts of an app this replica scans.
  void Report(const std::string& app_code, const storage::ProjectionStatus& status) override;
  void Forget(const std::string& app_code) override;
  void ReportInvalidAppCodeEvents(int64_t events) override;

  class Impl;

 private:
  explicit Metrics(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace giftwall::metrics

#endif  // GIFTWALL_SERVER_METRICS_METRICS_H_
