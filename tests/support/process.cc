#include "tests/support/process.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <deque>
#include <fstream>
#include <iterator>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"

extern char** environ;

namespace giftwall::process {
namespace {

std::vector<char*> Argv(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  return argv;
}

pid_t SpawnDyingWithParent(const std::vector<std::string>& args, const std::string& log_path) {
  std::vector<char*> argv = Argv(args);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid != 0) return pid;  // the parent, or -1
  // Only async-signal-safe calls from here to exec.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);  // the parent died before prctl
  setsid();
  const int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd >= 0) {
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
  }
  execvp(argv[0], argv.data());
  _exit(127);
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

pid_t Spawn(const std::vector<std::string>& args, const std::string& log_path,
            SpawnOptions options) {
  if (args.empty()) return -1;
  if (options.die_with_parent) return SpawnDyingWithParent(args, log_path);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  std::vector<char*> argv = Argv(args);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

std::string HowItEnded(int wait_status) {
  if (WIFEXITED(wait_status)) return absl::StrCat("exit ", WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) return absl::StrCat("signal ", WTERMSIG(wait_status));
  return absl::StrCat("wait status ", wait_status);
}

double CpuSeconds(pid_t pid) {
  if (pid <= 0) return 0;
  const std::string stat = ReadFile(absl::StrCat("/proc/", pid, "/stat"));
  // The command name (field 2) may hold spaces: count fields from the last ')'.
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 > stat.size()) return 0;
  const std::vector<absl::string_view> fields =
      absl::StrSplit(absl::string_view(stat).substr(paren + 2), ' ');
  int64_t utime = 0, stime = 0;  // fields 14 and 15 of the whole line
  if (fields.size() < 13 || !absl::SimpleAtoi(fields[11], &utime) ||
      !absl::SimpleAtoi(fields[12], &stime)) {
    return 0;
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double StatusMib(pid_t pid, const std::string& field) {
  if (pid <= 0) return -1;
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  for (std::string line; std::getline(status, line);) {
    absl::string_view rest = line;
    if (!absl::ConsumePrefix(&rest, field + ":")) continue;
    double kib = 0;
    if (absl::SimpleAtod(absl::StripSuffix(absl::StripAsciiWhitespace(rest), " kB"), &kib)) {
      return kib / 1024;
    }
  }
  return -1;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
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
  SpawnOptions options;
  options.die_with_parent = true;
  pid_ = Spawn(argv_, log_path(), options);
  return pid_ > 0;
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

}  // namespace giftwall::process
