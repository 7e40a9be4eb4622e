// The soak's child processes: the database and the servers it kills, pauses and restarts.
//
// Every child is killed when the thread that started it ends (PR_SET_PDEATHSIG), so an
// interrupted soak leaves nothing running. That signal follows the starting *thread*: start,
// kill and reap children from the main thread only.
#ifndef GIFTWALL_BENCH_SOAK_PROCESS_H_
#define GIFTWALL_BENCH_SOAK_PROCESS_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace giftwall::soak {

// A TCP port on 127.0.0.1 that was free a moment ago.
int FreePort();

// The process's resident memory (VmRSS) in KiB; 0 if it is gone.
int64_t ResidentKib(pid_t pid);

// The last `lines` lines of a file, for a report.
std::string Tail(const std::string& path, int lines);

class ChildProcess {
 public:
  // `log_prefix` + "-N.log" gets the stdout and stderr of the N-th start.
  ChildProcess(std::string name, std::vector<std::string> argv, std::string log_prefix);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Starts it (again); false if it could not be spawned.
  bool Start();
  // SIGKILL: no shutdown of any kind. Reaped before it returns.
  void Kill();
  // SIGSTOP / SIGCONT: it neither answers nor closes anything meanwhile, as on a hung host.
  void Pause();
  void Resume();
  // SIGTERM, then SIGKILL after `grace`. Returns how it ended ("exit 0", "signal 9").
  std::string Terminate(absl::Duration grace);
  // If it ended on its own since the last look: how ("exit 1", "signal 11"). Reaps it.
  std::optional<std::string> EndedOnItsOwn();

  const std::string& name() const { return name_; }
  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0; }
  // The log of the current (or last) start.
  std::string log_path() const;
  int starts() const { return starts_; }

 private:
  std::string name_;
  std::vector<std::string> argv_;
  std::string log_prefix_;
  pid_t pid_ = -1;
  int starts_ = 0;
};

}  // namespace giftwall::soak

#endif  // GIFTWALL_BENCH_SOAK_PROCESS_H_
