// Child processes for the tests and the benchmarks: free ports, spawning with a log, what /proc
// says of a process, and a restartable child the soak kills, pauses and restarts.
#ifndef GIFTWALL_TESTS_SUPPORT_PROCESS_H_
#define GIFTWALL_TESTS_SUPPORT_PROCESS_H_

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace giftwall::process {

// A TCP port on 127.0.0.1 that was free a moment ago; 0 if none could be found.
int FreePort();

struct SpawnOptions {
  // Killed (SIGKILL) when the thread that spawned it ends, in a session of its own (a Ctrl-C on
  // the terminal reaches the parent alone, which takes its children down with it). The signal
  // follows the spawning *thread*: spawn, kill and reap such children from one thread.
  bool die_with_parent = false;
};

// Starts `argv` (argv[0] a path, or a name looked up in PATH) with stdout and stderr going to
// `log_path`; -1 on failure.
pid_t Spawn(const std::vector<std::string>& argv, const std::string& log_path,
            SpawnOptions options = {});

// How a child ended, from its wait status: "exit 0", "signal 9".
std::string HowItEnded(int wait_status);

// CPU seconds (user + system) the process has used so far; 0 if it is gone or pid <= 0.
double CpuSeconds(pid_t pid);

// A field of /proc/<pid>/status in MiB (e.g. "VmRSS", "VmHWM"); -1 if it cannot be read.
double StatusMib(pid_t pid, const std::string& field);

std::string ReadFile(const std::string& path);

// The last `lines` lines of a file, for a report.
std::string Tail(const std::string& path, int lines);

// A child that can be started again and again, each start logging to its own file; killed when
// destroyed. Spawned with die_with_parent: start, kill and reap it from one thread.
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

}  // namespace giftwall::process

#endif  // GIFTWALL_TESTS_SUPPORT_PROCESS_H_
