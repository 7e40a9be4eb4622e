// Keeps the `readiness` health status true to the database: SERVING while the database answers
// and its schema is what this binary needs, NOT_SERVING otherwise and from shutdown on.
#ifndef GIFTWALL_SERVER_TRANSPORT_READINESS_H_
#define GIFTWALL_SERVER_TRANSPORT_READINESS_H_

#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "grpcpp/health_check_service_interface.h"
#include "server/storage/connection_pool.h"

namespace giftwall::transport {

// The health service name that load balancers and Kubernetes probes ask about.
inline constexpr char kReadinessService[] = "readiness";

class ReadinessProbe {
 public:
  // Starts probing at once, then every `interval`.
  ReadinessProbe(storage::ConnectionPool& pool, grpc::HealthCheckServiceInterface& health,
                 absl::Duration interval);
  // Stops probing and sets NOT_SERVING; called first thing on shutdown.
  void Stop();
  ~ReadinessProbe() { Stop(); }

 private:
  void Loop();
  // Empty when ready, else why not.
  std::string Check();
  void Set(bool serving);

  storage::ConnectionPool& pool_;
  grpc::HealthCheckServiceInterface& health_;
  const absl::Duration interval_;
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace giftwall::transport

#endif  // GIFTWALL_SERVER_TRANSPORT_READINESS_H_
