// Keeps the `readiness` health status true to the database: SERVING while the node the probe's
// session reaches can serve (a Galera node ready, in the primary component and Synced; a Group
// Replication member ONLINE; any node writable: domain::NodeProblem) and its schema is what this
// binary needs, NOT_SERVING otherwise and from shutdown on. Behind a proxy, that node is the one
// the proxy chose for this session.
#ifndef GIFTWALL_SERVER_TRANSPORT_READINESS_H_
#define GIFTWALL_SERVER_TRANSPORT_READINESS_H_

#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "grpcpp/health_check_service_interface.h"
#include "server/storage/mysql_url.h"
#include "server/storage/sql_connection.h"

namespace giftwall::transport {

// The health service name that load balancers and Kubernetes probes ask about.
inline constexpr char kReadinessService[] = "readiness";

// The probe has a session of its own: a pool saturated by calls says nothing about whether the
// database answers, and must not make the replica look unready.
class ReadinessProbe {
 public:
  // Starts probing at once, then every `interval`; each probe waits for the database for one
  // interval at most.
  ReadinessProbe(storage::MysqlEndpoint endpoint, storage::SessionOptions session,
                 grpc::HealthCheckServiceInterface& health, absl::Duration interval);
  // Sets NOT_SERVING at once, for good, and tells the probe to stop (without waiting for a probe
  // that may be waiting on the database); called first thing on shutdown.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);
  ~ReadinessProbe();

 private:
  void Loop();
  // Empty when ready, else why not.
  std::string Check();
  // Sets the status unless Stop() has run.
  void Set(bool serving) ABSL_LOCKS_EXCLUDED(mu_);

  const storage::MysqlEndpoint endpoint_;
  storage::SessionOptions session_;  // the calls' options, with timeouts of one period
  grpc::HealthCheckServiceInterface& health_;
  const absl::Duration interval_;
  std::unique_ptr<storage::SqlConnection> conn_;  // the probe thread's only
  absl::Mutex mu_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::once_flag stop_once_;
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace giftwall::transport

#endif  // GIFTWALL_SERVER_TRANSPORT_READINESS_H_
