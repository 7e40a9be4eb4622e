// Processes for end-to-end tests: the real giftwall-server on a free port, commands run to
// completion, and messages as the relay sends them. Ports, spawning and /proc: process.h.
#ifndef GIFTWALL_TESTS_E2E_SERVER_PROCESS_H_
#define GIFTWALL_TESTS_E2E_SERVER_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "giftwall/v1/giftwall.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "tests/support/process.h"

namespace giftwall::testing {

// The service config OPERATIONS.md recommends to callers: round robin over the replicas, each
// used only while its `readiness` health says SERVING (gRPC client-side health checking).
inline constexpr char kRecommendedServiceConfig[] =
    R"({"loadBalancingConfig":[{"round_robin":{}}],"healthCheckConfig":{"serviceName":"readiness"}})";

// The body of an HTTP/1.0 GET of http://127.0.0.1:`port``path`; empty if it fails.
std::string HttpGet(int port, const std::string& path);

// Runs a command to completion; returns its exit code and its output (stdout and stderr).
int RunCommand(const std::vector<std::string>& args, std::string* output);

// giftwall-server on a free port of 127.0.0.1; killed when destroyed.
class ServerProcess {
 public:
  // `launcher`, if any, runs the server: its words come before the server's path (e.g. `env`
  // with variables, which execs the server in its own place, so pid() stays the server's).
  // `port`: where it listens (0: a free port), e.g. a previous server's, to stand in for it.
  explicit ServerProcess(const std::string& mysql_url, std::vector<std::string> extra_flags = {},
                         std::vector<std::string> launcher = {}, int port = 0);
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  std::string address() const;
  int port() const { return port_; }
  // A channel to the server: plaintext unless UseCredentials said otherwise.
  std::shared_ptr<grpc::Channel> Channel() const;
  // What Channel(), Health() and WaitReady() connect with from now on (a TLS server), and the
  // name its certificate must carry.
  void UseCredentials(std::shared_ptr<grpc::ChannelCredentials> credentials,
                      const std::string& server_name);
  std::string log() const;
  pid_t pid() const { return pid_; }

  // The health status of `service` ("SERVING", ...), or "rpc error N".
  std::string Health(const std::string& service) const;
  // Waits (up to 30 s) until `readiness` is SERVING.
  bool WaitReady() const;

  // SIGTERM, then the exit code.
  int Terminate();
  // SIGKILL: no shutdown of any kind.
  void Kill();

 private:
  int port_;
  std::string log_;
  pid_t pid_ = -1;
  std::shared_ptr<grpc::ChannelCredentials> credentials_;
  std::string server_name_;
};

// A WalletGiftDebited message as the relay sends it.
v1::WalletOutboxMessage Message(const std::string& app, const std::string& event_id,
                                const std::string& payload, int64_t at = 1'700'000'000'000);

}  // namespace giftwall::testing

#endif  // GIFTWALL_TESTS_E2E_SERVER_PROCESS_H_
