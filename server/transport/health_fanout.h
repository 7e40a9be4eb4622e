// One health status, served by several gRPC servers: the main one and the plaintext port that
// probes use (--health_listen). Each server has its own health service; this sets them all.
#ifndef GIFTWALL_SERVER_TRANSPORT_HEALTH_FANOUT_H_
#define GIFTWALL_SERVER_TRANSPORT_HEALTH_FANOUT_H_

#include <string>
#include <utility>
#include <vector>

#include "grpcpp/health_check_service_interface.h"

namespace giftwall::transport {

class HealthFanout final : public grpc::HealthCheckServiceInterface {
 public:
  // The services must outlive this.
  explicit HealthFanout(std::vector<grpc::HealthCheckServiceInterface*> services)
      : services_(std::move(services)) {}

  void SetServingStatus(const std::string& service_name, bool serving) override {
    for (grpc::HealthCheckServiceInterface* service : services_) {
      service->SetServingStatus(service_name, serving);
    }
  }
  void SetServingStatus(bool serving) override {
    for (grpc::HealthCheckServiceInterface* service : services_) service->SetServingStatus(serving);
  }
  void Shutdown() override {
    for (grpc::HealthCheckServiceInterface* service : services_) service->Shutdown();
  }

 private:
  const std::vector<grpc::HealthCheckServiceInterface*> services_;
};

}  // namespace giftwall::transport

#endif  // GIFTWALL_SERVER_TRANSPORT_HEALTH_FANOUT_H_
