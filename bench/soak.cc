// A soak: mixed load for a while (10 minutes by default) against two giftwall-server replicas
// on one MariaDB, with faults injected on a schedule drawn from --seed; then checks that no
// event was lost or counted twice, and that the long-lived server's memory stayed flat.
// scripts/soak builds and runs it (docs/BENCHMARKS.md, "Soak"):
//   soak --server_bin=build/giftwall-server --mariadbd=/usr/sbin/mariadbd --datadir=D
//        --db_port=P --work_dir=W [--duration=10m] [-- server flags]
//
// The traffic (soak_traffic.h): the wallet commits events to wallet_outbox at a steady rate
// (a few with bad payloads, a few of another type); its relay delivers them to both servers,
// alone or in batches, losing 30% and sending 5% twice, and redelivers with backoff on the
// codes the real relay redelivers on; a few malformed envelopes, which it dead-letters; readers
// page through walls. The faults, one at a time, every --fault_every, in a shuffled rotation:
//   server kill     kill -9 of server b, restarted 1-3 s later (server a is never killed: its
//                   memory is the series judged for stability)
//   database kill   kill -9 of mariadbd, restarted on the same datadir 0.5-2 s later
//   database pause  SIGSTOP for 3-8 s, then SIGCONT
//   storm           fresh and already answered events delivered by 8 callers at once
// Then the relay drains, the servers' background catch-up scan projects what the relay lost,
// and the checks run; a Markdown report goes to stdout, progress to stderr. Exit code 1 if any
// check failed.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/soak_traffic.h"
#include "giftwall/v1/admin.grpc.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "server/storage/mysql_url.h"
#include "server/storage/sql_connection.h"
#include "tests/support/process.h"

ABSL_FLAG(absl::Duration, duration, absl::Minutes(10), "how long the load and the faults run");
ABSL_FLAG(uint64_t, seed, 1, "seeds the events, the losses, the faults and their order");
ABSL_FLAG(double, events_per_second, 200, "events the wallet commits to its outbox a second");
ABSL_FLAG(absl::Duration, fault_every, absl::Seconds(20), "time between two faults");
ABSL_FLAG(double, relay_loss, 0.3, "share of the outbox events the relay never sends");
ABSL_FLAG(int, relay_workers, 6, "the relay's concurrent callers");
ABSL_FLAG(int, readers, 2, "concurrent GetGiftWall readers");
ABSL_FLAG(int, users, 500, "walls the events spread over");
ABSL_FLAG(int, storm_fresh, 100, "new events in each duplicate storm");
ABSL_FLAG(int, storm_old, 200, "already answered events in each duplicate storm");
ABSL_FLAG(int, storm_callers, 8, "callers delivering every event of a storm at once");
ABSL_FLAG(absl::Duration, rss_every, absl::Seconds(2), "how often the servers' VmRSS is read");
ABSL_FLAG(double, rss_growth_limit, 0.20,
          "the long-lived server's RSS may end at most this much above its second third's peak");
ABSL_FLAG(absl::Duration, settle_bound, absl::Minutes(5),
          "longest the relay may take to drain, and the scan to catch up, after the load");
ABSL_FLAG(std::string, server_bin, "", "giftwall-server");
ABSL_FLAG(std::string, mariadbd, "/usr/sbin/mariadbd", "the database server binary");
ABSL_FLAG(std::string, datadir, "",
          "a MariaDB datadir with database `soak` migrated (scripts/soak makes it)");
ABSL_FLAG(int, db_port, 0, "the port the database listens on");
ABSL_FLAG(std::string, work_dir, "", "where process logs go");

namespace giftwall::soak {
namespace {

using process::ChildProcess;
using process::FreePort;
using process::Tail;

// The process's resident memory in KiB; 0 if it is gone.
int64_t ResidentKib(pid_t pid) {
  const double mib = process::StatusMib(pid, "VmRSS");
  return mib < 0 ? 0 : static_cast<int64_t>(mib * 1024);
}

constexpr char kDatabase[] = "soak";

void Log(const std::string& line) {
  std::fprintf(stderr, "[soak] %s %s\n",
               absl::FormatTime("%H:%M:%S", absl::Now(), absl::UTCTimeZone()).c_str(),
               line.c_str());
}

std::string Seconds(absl::Duration d) {
  return absl::StrFormat("%.1f s", absl::ToDoubleSeconds(d));
}

std::string Mib(int64_t kib) { return absl::StrFormat("%.1f", static_cast<double>(kib) / 1024.0); }

// --- memory -------------------------------------------------------------------------------------

// VmRSS of the servers every --rss_every, a series per process (a restarted server starts one).
class RssSampler {
 public:
  struct Series {
    std::string label;
    pid_t pid = 0;
    std::vector<std::pair<absl::Time, int64_t>> samples;  // KiB
    bool ended = false;
  };

  explicit RssSampler(absl::Duration every) : thread_([this, every] { Run(every); }) {}
  ~RssSampler() { Stop(); }

  void Begin(const std::string& label, pid_t pid) {
    absl::MutexLock lock(&mu_);
    series_.push_back({label, pid, {}, false});
  }
  void End(pid_t pid) {
    absl::MutexLock lock(&mu_);
    for (Series& s : series_) {
      if (s.pid == pid) s.ended = true;
    }
  }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  std::vector<Series> series() const {
    absl::MutexLock lock(&mu_);
    return series_;
  }

 private:
  void Run(absl::Duration every) {
    while (!stop_) {
      {
        absl::MutexLock lock(&mu_);
        for (Series& s : series_) {
          if (s.ended) continue;
          const int64_t kib = ResidentKib(s.pid);
          if (kib == 0) {
            s.ended = true;  // gone
          } else {
            s.samples.emplace_back(absl::Now(), kib);
          }
        }
      }
      absl::SleepFor(every);
    }
  }

  mutable absl::Mutex mu_;
  std::vector<Series> series_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// --- faults -------------------------------------------------------------------------------------

enum class Fault { kServerKill, kDatabaseKill, kDatabasePause, kStorm };

const char* FaultName(Fault f) {
  switch (f) {
    case Fault::kServerKill:
      return "server kill -9, restart";
    case Fault::kDatabaseKill:
      return "database kill -9, restart";
    case Fault::kDatabasePause:
      return "database paused (SIGSTOP, SIGCONT)";
    case Fault::kStorm:
      return "duplicate storm";
  }
  return "?";
}

struct FaultStats {
  int count = 0;
  // Server kill: from the kill to readiness; database kill: from the kill to the first answer;
  // pause: stopped.
  absl::Duration outage;
  absl::Duration longest;
};

// One fault every `every`, from `every` on, rotating through the kinds in an order shuffled
// afresh each round; none in the last 10 s of the load.
std::vector<std::pair<absl::Duration, Fault>> Schedule(absl::Duration duration,
                                                       absl::Duration every, std::mt19937_64& rng) {
  std::vector<std::pair<absl::Duration, Fault>> schedule;
  std::vector<Fault> round;
  for (absl::Duration at = every; at <= duration - absl::Seconds(10); at += every) {
    if (round.empty()) {
      round = {Fault::kServerKill, Fault::kDatabaseKill, Fault::kDatabasePause, Fault::kStorm};
      std::shuffle(round.begin(), round.end(), rng);
    }
    schedule.emplace_back(at, round.back());
    round.pop_back();
  }
  return schedule;
}

absl::Duration Between(absl::Duration low, absl::Duration high, std::mt19937_64& rng) {
  return low + absl::Milliseconds(static_cast<int64_t>(
                   rng() % static_cast<uint64_t>(absl::ToInt64Milliseconds(high - low) + 1)));
}

// --- the soak -----------------------------------------------------------------------------------

class Soak {
 public:
  explicit Soak(std::vector<std::string> server_flags);
  int Run();

 private:
  struct Check {
    std::string name;
    bool passed;
    std::string detail;
  };

  struct Server {
    std::unique_ptr<ChildProcess> process;
    std::string address;
  };

  bool StartDatabase();
  bool StartServer(Server& server);
  // Sleeps until `until`, restarting whatever ended without the soak ending it (a problem).
  void WatchUntil(absl::Time until);
  void Inject(Fault fault, std::mt19937_64& rng);
  void StartStorm(std::mt19937_64& rng);

  // After the load: every message answered, and the scan caught up.
  void Settle(Relay& relay);
  std::optional<v1::GetProjectionStatusResponse> Status();
  void CheckVerify();
  // Dead events by last_error, as ListDeadEvents groups them.
  void ReadDeadReasons();
  // Every database kill was a crash that InnoDB recovered from (its error log says so).
  void CheckCrashRecoveries();
  void CheckWallsAndLedger();
  // The series' peaks (KiB) in each third of the load; 0 where it has no sample.
  std::array<int64_t, 3> PeaksByThird(const RssSampler::Series& series) const;
  void CheckMemory();
  void CheckShutdown();
  void AddCheck(std::string name, bool passed, std::string detail = "");
  void Report();

  const absl::Duration duration_ = absl::GetFlag(FLAGS_duration);
  const uint64_t seed_ = absl::GetFlag(FLAGS_seed);
  TrafficShape shape_;
  storage::MysqlEndpoint endpoint_;
  Tally tally_;
  EventLog log_;
  RssSampler sampler_{absl::GetFlag(FLAGS_rss_every)};
  std::unique_ptr<ChildProcess> database_;
  // servers_[0] is never killed: its first start is the long-lived series of memory samples.
  std::vector<Server> servers_;
  std::vector<std::string> addresses_;
  std::string long_lived_series_;
  std::map<Fault, FaultStats> faults_;
  std::vector<std::thread> storms_;
  std::atomic<int> storms_running_{0};
  std::atomic<bool> give_up_{false};
  absl::Time load_start_, load_end_;
  std::optional<absl::Duration> drained_after_, caught_up_after_;
  v1::GetProjectionStatusResponse final_status_;
  std::vector<Check> checks_;
  std::vector<std::string> crashes_;
  std::vector<std::string> dead_reasons_;
  std::string work_dir_ = absl::GetFlag(FLAGS_work_dir);
};

Soak::Soak(std::vector<std::string> server_flags) {
  shape_.users = absl::GetFlag(FLAGS_users);
  shape_.relay_loss = absl::GetFlag(FLAGS_relay_loss);
  const int db_port = absl::GetFlag(FLAGS_db_port);
  endpoint_.host = "127.0.0.1";
  endpoint_.port = db_port;
  endpoint_.user = "root";
  endpoint_.database = kDatabase;

  const std::string datadir = absl::GetFlag(FLAGS_datadir);
  const std::string& work = work_dir_;
  // As scripts/lib/common.sh's mariadb_start runs it, durable commits included (the default
  // innodb_flush_log_at_trx_commit=1): a kill -9 loses nothing that was committed.
  std::vector<std::string> mariadbd = {absl::GetFlag(FLAGS_mariadbd),
                                       "--no-defaults",
                                       absl::StrCat("--datadir=", datadir),
                                       absl::StrCat("--tmpdir=", datadir, ".tmp"),
                                       absl::StrCat("--port=", db_port),
                                       "--bind-address=127.0.0.1",
                                       absl::StrCat("--socket=", datadir, "/mariadb.sock"),
                                       absl::StrCat("--pid-file=", datadir, "/mariadb.pid"),
                                       absl::StrCat("--log-error=", work, "/mariadb-error.log"),
                                       "--skip-log-bin",
                                       "--innodb-buffer-pool-size=256M",
                                       "--max-connections=500"};
  if (getuid() == 0) mariadbd.push_back("--user=root");
  database_ = std::make_unique<ChildProcess>("mariadbd", mariadbd, work + "/mariadbd");

  for (const char* name : {"a", "b"}) {
    const std::string address = absl::StrCat("127.0.0.1:", FreePort());
    std::vector<std::string> argv = {
        absl::GetFlag(FLAGS_server_bin),
        absl::StrCat("--listen=", address),
        "--plaintext",
        absl::StrCat("--mysql_url=mysql://root@127.0.0.1:", db_port, "/", kDatabase),
        absl::StrCat("--worker_id=soak-", name),
        "--enable_admin"};
    argv.insert(argv.end(), server_flags.begin(), server_flags.end());
    servers_.push_back({std::make_unique<ChildProcess>(absl::StrCat("server ", name), argv,
                                                       absl::StrCat(work, "/server-", name)),
                        address});
    addresses_.push_back(address);
  }
}

std::string SeriesLabel(const ChildProcess& process) {
  return absl::StrCat(process.name(), ", start ", process.starts());
}

bool Soak::StartDatabase() {
  if (!database_->Start()) return false;
  const absl::Time deadline = absl::Now() + absl::Minutes(2);
  while (absl::Now() < deadline) {
    storage::SessionOptions options;
    options.connect_timeout = absl::Seconds(1);
    if (storage::SqlConnection::Open(endpoint_, options).ok()) return true;
    if (database_->EndedOnItsOwn()) return false;
    absl::SleepFor(absl::Milliseconds(200));
  }
  return false;
}

std::string Readiness(const std::string& address) {
  auto stub = grpc::health::v1::Health::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
  grpc::health::v1::HealthCheckRequest request;
  request.set_service("readiness");
  grpc::health::v1::HealthCheckResponse response;
  const grpc::Status status = stub->Check(&context, request, &response);
  if (!status.ok()) return CodeName(status.error_code());
  return grpc::health::v1::HealthCheckResponse::ServingStatus_Name(response.status());
}

bool Soak::StartServer(Server& server) {
  if (!server.process->Start()) return false;
  sampler_.Begin(SeriesLabel(*server.process), server.process->pid());
  const absl::Time deadline = absl::Now() + absl::Minutes(1);
  while (absl::Now() < deadline) {
    if (Readiness(server.address) == "SERVING") return true;
    if (server.process->EndedOnItsOwn()) return false;
    absl::SleepFor(absl::Milliseconds(100));
  }
  return false;
}

void Soak::WatchUntil(absl::Time until) {
  // Whether `p` ended on its own; if so, the crash is recorded.
  auto crashed = [this](ChildProcess& p) {
    std::optional<std::string> how = p.EndedOnItsOwn();
    if (!how) return false;
    const std::string crash = absl::StrCat(p.name(), " (", p.log_path(), "): ", *how,
                                           "; its log ends:\n", Tail(p.log_path(), 15));
    Log(crash);
    crashes_.push_back(crash);
    return true;
  };
  do {
    if (crashed(*database_) && !StartDatabase()) Log("mariadbd does not come back");
    for (Server& server : servers_) {
      if (crashed(*server.process) && !StartServer(server)) {
        Log(absl::StrCat(server.process->name(), " does not come back"));
      }
    }
    absl::SleepFor(std::min(absl::Milliseconds(200), until - absl::Now()));
  } while (absl::Now() < until);
}

void Soak::Inject(Fault fault, std::mt19937_64& rng) {
  Log(absl::StrCat("fault: ", FaultName(fault)));
  FaultStats& stats = faults_[fault];
  ++stats.count;
  const absl::Time start = absl::Now();
  switch (fault) {
    case Fault::kServerKill: {
      Server& server = servers_[1];
      sampler_.End(server.process->pid());
      server.process->Kill();
      WatchUntil(absl::Now() + Between(absl::Seconds(1), absl::Seconds(3), rng));
      if (!StartServer(server)) {
        AddCheck("a killed server is ready again within a minute", false,
                 server.process->log_path());
      }
      break;
    }
    case Fault::kDatabaseKill:
      database_->Kill();
      WatchUntil(absl::Now() + Between(absl::Milliseconds(500), absl::Seconds(2), rng));
      if (!StartDatabase()) {
        AddCheck("a killed database answers again within 2 minutes", false,
                 "see mariadb-error.log");
      }
      break;
    case Fault::kDatabasePause:
      database_->Pause();
      WatchUntil(absl::Now() + Between(absl::Seconds(3), absl::Seconds(8), rng));
      database_->Resume();
      break;
    case Fault::kStorm:
      StartStorm(rng);
      break;
  }
  const absl::Duration outage = absl::Now() - start;
  stats.outage += outage;
  stats.longest = std::max(stats.longest, outage);
}

void Soak::StartStorm(std::mt19937_64& rng) {
  const int index = static_cast<int>(storms_.size());
  ++storms_running_;
  storms_.emplace_back([this, index, seed = rng()] {
    RunStorm(addresses_, endpoint_, shape_, seed, index, absl::GetFlag(FLAGS_storm_fresh),
             absl::GetFlag(FLAGS_storm_old), absl::GetFlag(FLAGS_storm_callers), log_, tally_,
             give_up_);
    --storms_running_;
  });
}

std::optional<v1::GetProjectionStatusResponse> Soak::Status() {
  auto admin = v1::ProjectionAdminService::NewStub(
      grpc::CreateChannel(addresses_[0], grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  v1::GetProjectionStatusRequest request;
  request.set_app_code(kApp);
  v1::GetProjectionStatusResponse response;
  if (!admin->GetProjectionStatus(&context, request, &response).ok()) return std::nullopt;
  return response;
}

void Soak::Settle(Relay& relay) {
  const absl::Time start = absl::Now();
  const absl::Time deadline = start + absl::GetFlag(FLAGS_settle_bound);
  while (absl::Now() < deadline && !(storms_running_ == 0 && relay.Drain(absl::Now()))) {
    WatchUntil(absl::Now() + absl::Milliseconds(200));
  }
  if (storms_running_ == 0 && relay.Drain(absl::Now())) drained_after_ = absl::Now() - start;
  // Whatever is not answered by now never will be: the checks say which.
  give_up_ = true;
  relay.GiveUp();
  for (std::thread& t : storms_) t.join();

  // What the relay lost, the servers' background scan projects once it is --catchup_min_age old.
  while (absl::Now() < deadline) {
    std::optional<v1::GetProjectionStatusResponse> status = Status();
    if (status && status->unprojected_count() == 0 && status->processing_count() == 0 &&
        status->failed_count() == 0) {
      caught_up_after_ = absl::Now() - start;
      final_status_ = *status;
      return;
    }
    WatchUntil(absl::Now() + absl::Seconds(1));
  }
  if (std::optional<v1::GetProjectionStatusResponse> status = Status()) final_status_ = *status;
}

void Soak::AddCheck(std::string name, bool passed, std::string detail) {
  checks_.push_back({std::move(name), passed, std::move(detail)});
}

void Soak::CheckVerify() {
  auto admin = v1::ProjectionAdminService::NewStub(
      grpc::CreateChannel(addresses_[0], grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Minutes(10)));
  v1::VerifyGiftWallRequest request;
  request.set_app_code(kApp);
  v1::VerifyGiftWallResponse report;
  const grpc::Status status = admin->VerifyGiftWall(&context, request, &report);
  if (!status.ok()) {
    AddCheck("VerifyGiftWall finds no drift", false,
             absl::StrCat(CodeName(status.error_code()), ": ", status.error_message()));
    return;
  }
  std::vector<std::string> samples;
  for (const v1::Drift& d : report.samples()) {
    samples.push_back(absl::StrCat("user ", d.user_id(), " ", d.gift_id(), " sender ",
                                   d.sender_user_id(), " ", d.field(), ": expected ", d.expected(),
                                   ", got ", d.actual()));
  }
  AddCheck(
      "VerifyGiftWall finds no drift",
      report.drifted() == 0 && report.unverifiable_users_size() == 0,
      absl::StrCat(report.users_checked(), " users, ", report.rows_checked(), " rows checked, ",
                   report.drifted(), " drifted, ", report.unverifiable_users_size(),
                   " unverifiable", samples.empty() ? "" : ": ", absl::StrJoin(samples, "; ")));
}

void Soak::ReadDeadReasons() {
  auto admin = v1::ProjectionAdminService::NewStub(
      grpc::CreateChannel(addresses_[0], grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
  v1::ListDeadEventsRequest request;
  request.set_app_code(kApp);
  request.set_page_size(1);  // the groups cover every dead event, whatever the page
  v1::ListDeadEventsResponse response;
  if (!admin->ListDeadEvents(&context, request, &response).ok()) return;
  for (const v1::DeadErrorGroup& group : response.groups()) {
    dead_reasons_.push_back(absl::StrCat(group.last_error(), " (", group.count(), ")"));
  }
}

void Soak::CheckCrashRecoveries() {
  std::ifstream in(absl::StrCat(work_dir_, "/mariadb-error.log"));
  int recoveries = 0;
  for (std::string line; std::getline(in, line);) {
    recoveries += line.find("InnoDB: Starting crash recovery") != std::string::npos;
  }
  const int kills = faults_[Fault::kDatabaseKill].count;
  AddCheck("every database kill was a crash InnoDB recovered from", recoveries == kills,
           absl::StrCat(kills, " kills, ", recoveries, " crash recoveries in mariadb-error.log"));
}

// The harness's own account, from what it generated: each sound event counted once on its
// wall, each bad one dead and on no wall, other types and malformed envelopes nowhere.
void Soak::CheckWallsAndLedger() {
  storage::SessionOptions options;
  options.statement_timeout = absl::Minutes(2);
  options.read_timeout = options.write_timeout = absl::Minutes(3);
  absl::StatusOr<std::unique_ptr<storage::SqlConnection>> session =
      storage::SqlConnection::Open(endpoint_, options);
  if (!session.ok()) {
    AddCheck("the database answers the checks", false, session.status().ToString());
    return;
  }
  storage::SqlConnection& db = **session;
  const std::vector<EventPtr> events = log_.Snapshot();

  struct Cell {
    int64_t count = 0, coins = 0;
  };
  std::map<std::pair<int64_t, std::string>, Cell> expected, actual;
  for (const EventPtr& e : events) {
    if (e->kind != EventKind::kGift) continue;
    Cell& c = expected[{e->user, e->gift}];
    c.count += e->count;
    c.coins += e->coins;
  }
  absl::Status read = db.Query(
      "SELECT user_id, gift_id, gift_count, total_coins FROM user_gift_wall WHERE app_code = ?",
      {kApp}, [&](const storage::SqlRow& row) {
        actual[{row.Int(0), row.Str(1)}] = {row.Int(2), row.Int(3)};
      });
  std::vector<std::string> wrong;
  int64_t wrong_cells = 0, bad_on_wall = 0;
  auto cell = [](const std::optional<Cell>& c) {
    return c ? absl::StrCat(c->count, " (", c->coins, " coins)") : std::string("no row");
  };
  std::set<std::pair<int64_t, std::string>> keys;
  for (const auto& [key, c] : expected) keys.insert(key);
  for (const auto& [key, c] : actual) keys.insert(key);
  for (const auto& key : keys) {
    std::optional<Cell> want, got;
    if (auto it = expected.find(key); it != expected.end()) want = it->second;
    if (auto it = actual.find(key); it != actual.end()) got = it->second;
    if (key.second.rfind(kBadGiftPrefix, 0) == 0) ++bad_on_wall;
    if (want && got && want->count == got->count && want->coins == got->coins) continue;
    if (++wrong_cells <= 10) {
      wrong.push_back(absl::StrCat("user ", key.first, " ", key.second, ": expected ", cell(want),
                                   ", wall ", cell(got)));
    }
  }
  AddCheck("every sound event is counted once on its wall (gift_count, total_coins)",
           read.ok() && wrong_cells == 0,
           read.ok() ? absl::StrCat(expected.size(), " (user, gift) cells from ", events.size(),
                                    " outbox events; ", wrong_cells, " differ",
                                    wrong.empty() ? "" : ": ", absl::StrJoin(wrong, "; "))
                     : read.ToString());
  AddCheck("no bad payload on any wall", read.ok() && bad_on_wall == 0,
           absl::StrCat(bad_on_wall, " wall rows of bad gifts"));

  std::map<std::string, std::string> ledger;
  read = db.Query(
      "SELECT event_id, status FROM wallet_projection_events "
      "WHERE projection_name = 'user_gift_wall' AND app_code = ?",
      {kApp}, [&](const storage::SqlRow& row) { ledger[row.Str(0)] = row.Str(1); });
  // By kind, what the ledger says: "gift: done" 1234, ...
  std::map<std::string, int64_t> outcomes;
  int64_t misplaced = 0;
  std::vector<std::string> samples;
  for (const EventPtr& e : events) {
    auto it = ledger.find(e->message.event_id());
    const std::string status = it == ledger.end() ? "no row" : it->second;
    ++outcomes[absl::StrCat(KindName(e->kind), ": ", status)];
    const std::string want = e->kind == EventKind::kGift         ? "done"
                             : e->kind == EventKind::kBadPayload ? "dead"
                                                                 : "no row";
    if (status != want && ++misplaced <= 10) {
      samples.push_back(absl::StrCat(e->message.event_id(), " (", KindName(e->kind), "): ", status,
                                     e->lost ? ", lost by the relay" : ""));
    }
    if (it != ledger.end()) ledger.erase(it);
  }
  // What is left is no event of the outbox: a malformed envelope that got written.
  for (const auto& [id, status] : ledger) {
    if (++misplaced <= 10) samples.push_back(absl::StrCat(id, ": ", status, ", not in the outbox"));
  }
  std::vector<std::string> summary;
  for (const auto& [what, n] : outcomes) summary.push_back(absl::StrCat(what, " ", n));
  AddCheck("the ledger: sound events done, bad ones dead, others absent",
           read.ok() && misplaced == 0,
           read.ok() ? absl::StrCat(absl::StrJoin(summary, ", "), "; ", misplaced, " wrong",
                                    samples.empty() ? "" : ": ", absl::StrJoin(samples, "; "))
                     : read.ToString());

  int64_t outbox_rows = 0;
  read = db.Query("SELECT COUNT(*) FROM wallet_outbox WHERE app_code = ?", {kApp},
                  [&](const storage::SqlRow& row) { outbox_rows = row.Int(0); });
  AddCheck("the outbox holds exactly the events the wallet committed",
           read.ok() && outbox_rows == static_cast<int64_t>(events.size()),
           absl::StrCat(outbox_rows, " rows, ", events.size(), " committed"));

  // Every event the relay sent was answered; every bad envelope was dead-lettered.
  int64_t unanswered = 0;
  std::vector<std::string> never;
  for (const EventPtr& e : events) {
    if (!e->lost && e->answered == 0 && ++unanswered <= 5) never.push_back(e->message.event_id());
  }
  AddCheck("the relay got an answer for every message it sent", unanswered == 0,
           absl::StrCat(unanswered, " never answered", never.empty() ? "" : ": ",
                        absl::StrJoin(never, ", ")));
  AddCheck("every malformed envelope was INVALID_ARGUMENT (dead-lettered)",
           tally_.counter("dead-lettered by the relay") == tally_.counter("bad envelopes sent"),
           absl::StrCat(tally_.counter("dead-lettered by the relay"), " of ",
                        tally_.counter("bad envelopes sent")));
}

std::array<int64_t, 3> Soak::PeaksByThird(const RssSampler::Series& series) const {
  std::array<int64_t, 3> peaks = {0, 0, 0};
  const absl::Duration third = (load_end_ - load_start_) / 3;
  for (const auto& [at, kib] : series.samples) {
    if (at < load_start_ || at > load_end_) continue;
    const auto i = static_cast<size_t>(std::min<int64_t>((at - load_start_) / third, 2));
    peaks[i] = std::max(peaks[i], kib);
  }
  return peaks;
}

// A leak grows with the work done, so over a long run it shows as a last third that keeps
// climbing past the second. Allocator pools, gRPC's and the connector's buffers and the pools'
// sessions reach their size within the first third (warm-up) and then move within a few MiB.
void Soak::CheckMemory() {
  std::array<int64_t, 3> peaks = {0, 0, 0};
  for (const RssSampler::Series& s : sampler_.series()) {
    if (s.label == long_lived_series_) peaks = PeaksByThird(s);
  }
  const int64_t second = peaks[1], last = peaks[2];
  const double growth =
      second > 0 ? static_cast<double>(last - second) / static_cast<double>(second) : 1;
  const double limit = absl::GetFlag(FLAGS_rss_growth_limit);
  AddCheck(absl::StrFormat("server a's RSS: last third's peak at most %.0f%% above the second's",
                           limit * 100),
           second > 0 && last > 0 && growth <= limit,
           absl::StrFormat("%s MiB, then %s MiB: %+.1f%%", Mib(second), Mib(last), growth * 100));
}

void Soak::CheckShutdown() {
  std::vector<std::string> ends;
  bool clean = true;
  for (Server& server : servers_) {
    sampler_.End(server.process->pid());
    const std::string how = server.process->Terminate(absl::Seconds(30));
    clean = clean && how == "exit 0";
    ends.push_back(absl::StrCat(server.process->name(), ": ", how));
  }
  AddCheck("the servers shut down cleanly on SIGTERM", clean, absl::StrJoin(ends, ", "));
}

int Soak::Run() {
  std::mt19937_64 rng(seed_);
  if (!StartDatabase()) {
    Log(absl::StrCat("mariadbd did not start: ", Tail(database_->log_path(), 20)));
    return 2;
  }
  for (Server& server : servers_) {
    if (!StartServer(server)) {
      Log(absl::StrCat(server.process->name(),
                       " did not start: ", Tail(server.process->log_path(), 20)));
      return 2;
    }
  }
  long_lived_series_ = SeriesLabel(*servers_[0].process);
  const std::vector<std::pair<absl::Duration, Fault>> schedule =
      Schedule(duration_, absl::GetFlag(FLAGS_fault_every), rng);
  Log(absl::StrCat("load for ", absl::FormatDuration(duration_), " with ", schedule.size(),
                   " faults; servers on ", absl::StrJoin(addresses_, " and ")));
  {
    Relay relay(addresses_, absl::GetFlag(FLAGS_relay_workers), seed_, tally_);
    WallReaders readers(addresses_, absl::GetFlag(FLAGS_readers), shape_, seed_, tally_);
    load_start_ = absl::Now();
    Wallet wallet(endpoint_, shape_, absl::GetFlag(FLAGS_events_per_second), seed_, log_, relay,
                  tally_);
    for (const auto& [at, fault] : schedule) {
      WatchUntil(load_start_ + at);
      Inject(fault, rng);
    }
    WatchUntil(load_start_ + duration_);
    load_end_ = absl::Now();
    wallet.Stop();
    Log("load over: draining the relay, then waiting for the scan to catch up");
    Settle(relay);
    readers.Stop();
  }
  Log("checking");
  AddCheck(
      "the relay drained and the scan caught up in time",
      drained_after_.has_value() && caught_up_after_.has_value(),
      absl::StrCat("drained after ", drained_after_ ? Seconds(*drained_after_) : "never",
                   ", caught up after ", caught_up_after_ ? Seconds(*caught_up_after_) : "never",
                   " (bound ", absl::FormatDuration(absl::GetFlag(FLAGS_settle_bound)), ")"));
  CheckVerify();
  CheckWallsAndLedger();
  ReadDeadReasons();
  const int64_t lost = tally_.counter("lost by the relay: gift");
  AddCheck("the scan recovered at least every sound event the relay lost",
           final_status_.recovered_by_scan_total() >= lost,
           absl::StrCat(final_status_.recovered_by_scan_total(), " recovered, ", lost, " lost"));
  const auto problems = tally_.problems();
  for (const char* check : kTrafficChecks) {
    auto it = problems.find(check);
    AddCheck(
        check, it == problems.end(),
        it == problems.end()
            ? ""
            : absl::StrCat(it->second.first, " times: ", absl::StrJoin(it->second.second, "; ")));
  }
  AddCheck("no process ended unless the soak ended it", crashes_.empty(),
           absl::StrJoin(crashes_, "\n"));
  CheckCrashRecoveries();
  CheckMemory();
  CheckShutdown();
  sampler_.Stop();
  database_->Terminate(absl::Minutes(1));
  Report();
  return std::all_of(checks_.begin(), checks_.end(), [](const Check& c) { return c.passed; }) ? 0
                                                                                              : 1;
}

// --- the report ---------------------------------------------------------------------------------

void Soak::Report() {
  const std::vector<EventPtr> events = log_.Snapshot();
  int64_t answered = 0, duplicates = 0;
  for (const EventPtr& e : events) {
    answered += e->answered > 0;
    duplicates += std::max(0, e->answered.load() - 1);
  }
  const double seconds = absl::ToDoubleSeconds(load_end_ - load_start_);
  auto kinds = [&](const std::string& prefix) {
    return absl::StrFormat("%d (gift %d, bad payload %d, other type %d)",
                           tally_.counter(prefix + "gift") +
                               tally_.counter(prefix + "bad payload") +
                               tally_.counter(prefix + "other type"),
                           tally_.counter(prefix + "gift"), tally_.counter(prefix + "bad payload"),
                           tally_.counter(prefix + "other type"));
  };
  std::printf("### Events\n\n| | |\n|---|---|\n");
  std::printf("| load | %s at %.0f events/s committed (%d%% lost by the relay), seed %llu |\n",
              Seconds(load_end_ - load_start_).c_str(),
              static_cast<double>(events.size()) / seconds,
              static_cast<int>(shape_.relay_loss * 100), static_cast<unsigned long long>(seed_));
  std::printf("| committed to the outbox | %s |\n", kinds("outbox: ").c_str());
  std::printf("| lost by the relay (never sent) | %s |\n", kinds("lost by the relay: ").c_str());
  std::printf("| answered by a server at least once | %lld |\n", static_cast<long long>(answered));
  std::printf(
      "| duplicates answered (beyond each event's first answer) | %lld: relay copies %lld, "
      "storm events %lld |\n",
      static_cast<long long>(duplicates),
      static_cast<long long>(tally_.counter("copies the relay sent twice")),
      static_cast<long long>(tally_.counter("storm events")));
  std::printf("| redelivered after an error (messages) | %lld |\n",
              static_cast<long long>(tally_.counter("redeliveries after an error")));
  std::printf("| malformed envelopes dead-lettered by the relay | %lld of %lld |\n",
              static_cast<long long>(tally_.counter("dead-lettered by the relay")),
              static_cast<long long>(tally_.counter("bad envelopes sent")));
  std::printf(
      "| ledger at the end | done %lld, dead %lld, failed %lld, unprojected %lld; "
      "recovered by the scan %lld |\n",
      static_cast<long long>(final_status_.done_count()),
      static_cast<long long>(final_status_.dead_count()),
      static_cast<long long>(final_status_.failed_count()),
      static_cast<long long>(final_status_.unprojected_count()),
      static_cast<long long>(final_status_.recovered_by_scan_total()));
  std::printf("| dead, by reason | %s |\n", absl::StrJoin(dead_reasons_, "; ").c_str());
  std::printf("| after the load | relay drained in %s, scan caught up in %s |\n",
              drained_after_ ? Seconds(*drained_after_).c_str() : "never",
              caught_up_after_ ? Seconds(*caught_up_after_).c_str() : "never");

  std::printf(
      "\n### Faults\n\n| fault | times | outage in all | longest |\n|---|---:|---:|---:|\n");
  for (const auto& [fault, stats] : faults_) {
    // A storm takes nothing out of service.
    const bool storm = fault == Fault::kStorm;
    std::printf("| %s | %d | %s | %s |\n", FaultName(fault), stats.count,
                storm ? "-" : Seconds(stats.outage).c_str(),
                storm ? "-" : Seconds(stats.longest).c_str());
  }

  std::printf("\n### Calls by status code\n\n| method | code | calls |\n|---|---|---:|\n");
  for (const auto& [key, n] : tally_.calls()) {
    std::printf("| %s | %s | %lld |\n", key.first.c_str(), CodeName(key.second),
                static_cast<long long>(n));
  }
  std::printf("\n| projection outcome (per message) | count |\n|---|---:|\n");
  for (const auto& [outcome, n] : tally_.outcomes()) {
    std::printf("| %s | %lld |\n", outcome.c_str(), static_cast<long long>(n));
  }

  std::printf(
      "\n### Server memory (VmRSS, MiB, sampled every %s)\n\n"
      "| process | lived | samples | first | peak 1st third | peak 2nd third | "
      "peak last third | last |\n|---|---:|---:|---:|---:|---:|---:|---:|\n",
      absl::FormatDuration(absl::GetFlag(FLAGS_rss_every)).c_str());
  for (const RssSampler::Series& s : sampler_.series()) {
    if (s.samples.empty()) continue;
    const std::array<int64_t, 3> peak = PeaksByThird(s);
    auto shown = [](int64_t kib) { return kib == 0 ? std::string("-") : Mib(kib); };
    std::printf("| %s | %s | %zu | %s | %s | %s | %s | %s |\n", s.label.c_str(),
                Seconds(s.samples.back().first - s.samples.front().first).c_str(), s.samples.size(),
                Mib(s.samples.front().second).c_str(), shown(peak[0]).c_str(),
                shown(peak[1]).c_str(), shown(peak[2]).c_str(),
                Mib(s.samples.back().second).c_str());
  }

  std::printf("\n### Checks\n\n| check | result | detail |\n|---|---|---|\n");
  for (const Check& c : checks_) {
    std::string detail = c.detail;
    std::replace(detail.begin(), detail.end(), '\n', ' ');
    std::replace(detail.begin(), detail.end(), '|', '/');
    std::printf("| %s | %s | %s |\n", c.name.c_str(), c.passed ? "pass" : "**FAIL**",
                detail.c_str());
  }
  std::fflush(stdout);
}

}  // namespace
}  // namespace giftwall::soak

int main(int argc, char** argv) {
  std::vector<char*> rest = absl::ParseCommandLine(argc, argv);
  if (absl::GetFlag(FLAGS_server_bin).empty() || absl::GetFlag(FLAGS_datadir).empty() ||
      absl::GetFlag(FLAGS_db_port) <= 0 || absl::GetFlag(FLAGS_work_dir).empty()) {
    std::fprintf(stderr, "--server_bin, --datadir, --db_port and --work_dir are required\n");
    return 2;
  }
  if (absl::GetFlag(FLAGS_duration) < absl::Seconds(30)) {
    std::fprintf(stderr, "--duration: at least 30s (thirds of it are compared)\n");
    return 2;
  }
  giftwall::storage::InitMysqlDriver();
  // Everything after the program's name that is not a flag of its own goes to the servers.
  giftwall::soak::Soak soak(std::vector<std::string>(rest.begin() + 1, rest.end()));
  return soak.Run();
}
