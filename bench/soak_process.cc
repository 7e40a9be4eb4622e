#include "bench/soak_process.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <deque>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"

namespace giftwall::soak {
namespace {

std::string HowItEnded(int wait_status) {
  if (WIFEXITED(wait_status)) return absl::StrCat("exit ", WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) return absl::StrCat("signal ", WTERMSIG(wait_status));
  return absl::StrCat("wait status ", wait_status);
}

}  // namespace

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

int64_t ResidentKib(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    absl::string_view rest = line;
    int64_t kib = 0;
    if (absl::ConsumePrefix(&rest, "VmRSS:") &&
        absl::SimpleAtoi(absl::StripSuffix(absl::StripAsciiWhitespace(rest), " kB"), &kib)) {
      return kib;
    }
  }
  return 0;
}

std::string Tail(const std::string& path, int lines) {
  std::ifstream in(path);
  std::deque<std::string> last;
  for (std::string line; std::getline(in, line);) {
    last.push_back(line);
    if (static_cast<int>(last.size()) > lines) last.pop_front();
  }
  return absl::StrJoin(last, "\n");
}

ChildProcess::ChildProcess(std::string name, std::vector<std::string> argv, std::string log_prefix)
    : name_(std::move(name)), argv_(std::move(argv)), log_prefix_(std::move(log_prefix)) {}

ChildProcess::~ChildProcess() { Kill(); }

std::string ChildProcess::log_path() const {
  return absl::StrCat(log_prefix_, "-", starts_, ".log");
}

bool ChildProcess::Start() {
  ++starts_;
  const std::string log = log_path();
  std::vector<char*> argv;
  for (std::string& a : argv_) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    // Only async-signal-safe calls from here to exec.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // the soak died before prctl
    // A session of its own: a Ctrl-C on the soak's terminal reaches the soak alone, which
    // takes its children down with it.
    setsid();
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
    }
    execvp(argv[0], argv.data());
    _exit(127);
  }
  pid_ = pid;
  return true;
}

void ChildProcess::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

void ChildProcess::Pause() {
  if (pid_ > 0) kill(pid_, SIGSTOP);
}

void ChildProcess::Resume() {
  if (pid_ > 0) kill(pid_, SIGCONT);
}

std::string ChildProcess::Terminate(absl::Duration grace) {
  if (pid_ <= 0) return "not running";
  kill(pid_, SIGCONT);  // a stopped process cannot act on SIGTERM
  kill(pid_, SIGTERM);
  const absl::Time deadline = absl::Now() + grace;
  int status = 0;
  while (waitpid(pid_, &status, WNOHANG) == 0) {
    if (absl::Now() > deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      break;
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  pid_ = -1;
  return HowItEnded(status);
}

std::optional<std::string> ChildProcess::EndedOnItsOwn() {
  if (pid_ <= 0) return std::nullopt;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) != pid_) return std::nullopt;
  pid_ = -1;
  return HowItEnded(status);
}

}  // namespace giftwall::soak
