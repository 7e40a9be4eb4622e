#include "tests/e2e/server_process.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "gtest/gtest.h"
#include "tests/support/process.h"
#include "tests/support/test_database.h"

namespace giftwall::testing {

std::string HttpGet(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return "";
  }
  const std::string request = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  if (write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
    close(fd);
    return "";
  }
  std::string response;
  char buffer[4096];
  for (ssize_t n; (n = read(fd, buffer, sizeof(buffer))) > 0;) {
    response.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  const size_t body = response.find("\r\n\r\n");
  return body == std::string::npos ? "" : response.substr(body + 4);
}

// Runs a command to completion; returns its exit code and its output (stdout and stderr).
int RunCommand(const std::vector<std::string>& args, std::string* output) {
  static std::atomic<int> counter{0};
  const std::string log = absl::StrCat(::testing::TempDir(), "/run-", getpid(), "-", counter++);
  const pid_t pid = process::Spawn(args, log);
  if (pid < 0) return -1;
  int status = 0;
  waitpid(pid, &status, 0);
  *output = process::ReadFile(log);
  unlink(log.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

ServerProcess::ServerProcess(const std::string& mysql_url, std::vector<std::string> extra,
                             std::vector<std::string> launcher, int port)
    : port_(port != 0 ? port : process::FreePort()),
      log_(absl::StrCat(::testing::TempDir(), "/server-", port_, ".log")) {
  std::vector<std::string> args = std::move(launcher);
  for (std::string arg :
       {std::string(GIFTWALL_SERVER_BIN), absl::StrCat("--listen=127.0.0.1:", port_),
        absl::StrCat("--mysql_url=", mysql_url), absl::StrCat("--worker_id=e2e-", port_)}) {
    args.push_back(std::move(arg));
  }
  // Plaintext, unless the test serves TLS.
  if (std::none_of(extra.begin(), extra.end(),
                   [](const std::string& flag) { return absl::StartsWith(flag, "--tls_"); })) {
    args.push_back("--plaintext");
  }
  args.push_back(absl::StrCat("--sql_rows=", storage::RowsPathName(TestRowsPath())));
  args.insert(args.end(), extra.begin(), extra.end());
  pid_ = process::Spawn(args, log_);
}

ServerProcess::~ServerProcess() { Kill(); }

std::string ServerProcess::address() const { return absl::StrCat("127.0.0.1:", port_); }

std::shared_ptr<grpc::Channel> ServerProcess::Channel() const {
  if (credentials_ == nullptr) {
    return grpc::CreateChannel(address(), grpc::InsecureChannelCredentials());
  }
  grpc::ChannelArguments args;
  args.SetSslTargetNameOverride(server_name_);
  return grpc::CreateCustomChannel(address(), credentials_, args);
}

void ServerProcess::UseCredentials(std::shared_ptr<grpc::ChannelCredentials> credentials,
                                   const std::string& server_name) {
  credentials_ = std::move(credentials);
  server_name_ = server_name;
}

std::string ServerProcess::log() const { return process::ReadFile(log_); }

std::string ServerProcess::Health(const std::string& service) const {
  auto stub = grpc::health::v1::Health::NewStub(Channel());
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  grpc::Status status = stub->Check(&context, request, &response);
  if (!status.ok()) return absl::StrCat("rpc error ", status.error_code());
  return grpc::health::v1::HealthCheckResponse::ServingStatus_Name(response.status());
}

bool ServerProcess::WaitReady() const {
  for (int i = 0; i < 300; ++i) {
    if (Health("readiness") == "SERVING") return true;
    absl::SleepFor(absl::Milliseconds(100));
  }
  return false;
}

int ServerProcess::Terminate() {
  kill(pid_, SIGTERM);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void ServerProcess::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

v1::WalletOutboxMessage Message(const std::string& app, const std::string& event_id,
                                const std::string& payload, int64_t at) {
  v1::WalletOutboxMessage m;
  m.set_app_code(app);
  m.set_event_id(event_id);
  m.set_event_type("WalletGiftDebited");
  m.set_payload_json(payload);
  m.set_occurred_at_ms(at);
  return m;
}

}  // namespace giftwall::testing
