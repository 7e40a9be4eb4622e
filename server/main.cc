// giftwall-server: wires the layers together and runs until SIGTERM or SIGINT.
//   giftwall-server            serve
//   giftwall-server migrate    apply migrations and exit
#include <signal.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/usage.h"
#include "absl/synchronization/mutex.h"
#include "glog/logging.h"
#include "server/env_flags.h"
#include "server/logging/log_sink.h"
#include "server/server.h"
#include "server/server_config.h"
#include "server/storage/migrator.h"
#include "server/storage/sql_connection.h"
#include "server/version.h"

ABSL_FLAG(bool, print, false,
          "with migrate: print the SQL it would apply (and the INSERTs that record it), apply "
          "nothing");
ABSL_FLAG(int, clear_dirty, 0,
          "with migrate: record the migration of this version, left dirty by a run that stopped "
          "part way, as finished (once it has been completed by hand)");
ABSL_FLAG(std::string, log_format, "text",
          "the log on stderr: text (glog's lines) or json (one object a line: time, severity, "
          "message, and the call's trace_id, span_id, caller, method, app_code, event_ids where "
          "known)");

namespace giftwall {
namespace {

int Migrate(const ServerConfig& config) {
  // DDL on a populated table can take far longer than any serving statement may: no statement
  // limit, a long socket timeout, and a lock wait that outlasts another replica's migration.
  storage::SessionOptions session = config.pool.session;
  session.statement_timeout = absl::ZeroDuration();
  session.read_timeout = session.write_timeout = absl::Hours(6);
  session.lock_wait_timeout = absl::Minutes(5);
  absl::StatusOr<std::unique_ptr<storage::SqlConnection>> conn =
      storage::SqlConnection::Open(config.pool.endpoint, session);
  if (!conn.ok()) {
    LOG(ERROR) << "migrate: " << conn.status().message();
    return 1;
  }
  if (absl::GetFlag(FLAGS_print)) {
    absl::StatusOr<std::string> sql = storage::PendingSql(**conn, storage::EmbeddedMigrations());
    if (!sql.ok()) {
      LOG(ERROR) << "migrate --print: " << sql.status().message();
      return 1;
    }
    std::fputs(sql->c_str(), stdout);
    return 0;
  }
  if (const int version = absl::GetFlag(FLAGS_clear_dirty); version != 0) {
    if (absl::Status s = storage::ClearDirty(**conn, version); !s.ok()) {
      LOG(ERROR) << "migrate --clear_dirty: " << s.message();
      return 1;
    }
    return 0;
  }
  absl::StatusOr<storage::MigrationReport> report =
      storage::Migrate(**conn, storage::EmbeddedMigrations());
  if (!report.ok()) {
    LOG(ERROR) << "migrate: " << report.status().message();
    return 1;
  }
  LOG(INFO) << "migrate: applied " << report->applied.size() << " migration(s); schema at version "
            << report->schema_version;
  return 0;
}

// Signals are blocked in every thread (threads inherit the mask) and taken by sigwait in main:
// Server::Shutdown must not run inside a signal handler.
sigset_t BlockTerminationSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return signals;
}

// Serves until SIGTERM or SIGINT, then drains. 2: a bad access policy; 1: a port not had.
int Serve(const ServerConfig& config) {
  const sigset_t signals = BlockTerminationSignals();  // before any thread starts
  absl::StatusOr<std::unique_ptr<Server>> server = Server::Create(config);
  if (!server.ok()) {
    LOG(ERROR) << server.status().message();
    return 2;
  }
  if (absl::Status s = (*server)->Start(); !s.ok()) {
    LOG(ERROR) << s.message();
    return 1;
  }
  int signal_number = 0;
  sigwait(&signals, &signal_number);
  LOG(INFO) << "received " << strsignal(signal_number) << ": readiness off, draining";
  (*server)->Drain();
  return 0;
}

}  // namespace
}  // namespace giftwall

int main(int argc, char** argv) {
  // Debian's Abseil is built with Mutex deadlock detection on, which records every lock
  // acquisition in a global graph: a debugging aid the tests keep, too costly to serve with.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  absl::SetProgramUsageMessage(
      "The gift wall projection service.\n"
      "  giftwall-server [flags]          serve gRPC until SIGTERM/SIGINT\n"
      "  giftwall-server migrate [flags]  apply database migrations and exit\n"
      "Every flag can also be set as GIFTWALL_<FLAG> in the environment.");
  giftwall::SetVersionFlag("giftwall-server");
  std::vector<char*> args = giftwall::ParseFlagsWithEnvironment(argc, argv, "GIFTWALL_");
  giftwall::WarnOfUnknownVariables("GIFTWALL_", "giftwall-server", "GIFTWALL_CLI_");
  absl::StatusOr<giftwall::logging::LogFormat> log_format =
      giftwall::logging::ParseLogFormat(absl::GetFlag(FLAGS_log_format));
  if (!log_format.ok()) {
    std::fprintf(stderr, "giftwall-server: %s\n",
                 std::string(log_format.status().message()).c_str());
    return 2;
  }
  giftwall::logging::InitLogging(argv[0], *log_format);
  absl::StatusOr<giftwall::ServerConfig> config = giftwall::ServerConfigFromFlags();
  if (!config.ok()) {
    std::fprintf(stderr, "giftwall-server: %s\n", std::string(config.status().message()).c_str());
    return 2;
  }
  giftwall::storage::InitMysqlDriver();
  if (args.size() > 2 || (args.size() == 2 && absl::string_view(args[1]) != "migrate")) {
    std::fprintf(stderr, "giftwall-server: unknown command \"%s\" (known: migrate)\n", args[1]);
    return 2;
  }
  LOG(INFO) << "giftwall-server " << giftwall::Version() << ": " << giftwall::Describe(*config);
  if (args.size() == 2) return giftwall::Migrate(*config);
  if (absl::Status s = giftwall::CheckCanServe(*config); !s.ok()) {
    std::fprintf(stderr, "giftwall-server: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  return giftwall::Serve(*config);
}
