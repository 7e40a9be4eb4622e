// Load against a running giftwall-server: N concurrent streams, each a closed loop (a stream
// sends its next call when the previous one answers) for a while, then one line of key=value
// pairs that scripts/bench parses: throughput, latency percentiles, failures by gRPC code, the
// CPU the client, the server, the database and anything else used while it ran, and the
// server's memory.
//   load_bench --server=127.0.0.1:50051 --mode=project --streams=16 --duration=10s
//
// Modes, one function each (Run<Mode> below):
//   health     grpc.health.v1.Health/Check: the gRPC stack alone, the ceiling of a read.
//   project    ProjectMessage of a new event per call.
//   batch      ProjectMessages of --batch_size new events per call.
//   redeliver  ProjectMessage of events already projected: each stream first projects
//              --redeliver_ids events (not measured), then cycles through them.
//   hot        ProjectMessage of new events all to one wall (--hot_user): --hot_gifts gifts,
//              --hot_senders senders, so every call contends on the same few rows.
//   wall       GetGiftWall of random users 1..--users (walls that project and batch fill).
//   capwall    GetGiftWall of one wall at the cap (--cap_gifts gifts, filled first), in every
//              order: a bounded wall must stay cheap to read.
//   senders    ListGiftWallSenders of the hot user's gifts (filled by hot).
//   scan       ProjectionAdminService/RunCatchUp (--scan_limit events a pass) over outbox rows
//              inserted beforehand under --app_code, until a pass finds nothing or --duration
//              ends: the catch-up scan, measured as the seed's ProjectPendingGiftWallEvents is
//              (events: moved to done or dead). The server needs --enable_admin.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/grpc_code_name.h"
#include "giftwall/v1/admin.grpc.pb.h"
#include "giftwall/v1/giftwall.grpc.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "tests/support/process.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "host:port of giftwall-server");
ABSL_FLAG(std::string, mode, "project",
          "health, project, batch, redeliver, hot, wall, senders, capwall or scan (see the top of "
          "load_bench.cc)");
ABSL_FLAG(int, streams, 16, "concurrent streams, each with a channel (connection) of its own");
ABSL_FLAG(absl::Duration, duration, absl::Seconds(10), "how long to measure");
ABSL_FLAG(std::string, client, "callback",
          "callback: gRPC's callback API, the streams multiplexed on gRPC's own threads (the "
          "cheaper client: see docs/BENCHMARKS.md); sync: a thread per stream, blocking calls");
ABSL_FLAG(int, users, 1000, "walls that project and batch spread their events over");
ABSL_FLAG(int, gifts, 20, "gift ids that project and batch spread their events over");
ABSL_FLAG(int, senders, 5000, "sender ids that project and batch spread their events over");
ABSL_FLAG(int, batch_size, 100, "events per ProjectMessages call in batch mode");
ABSL_FLAG(int, redeliver_ids, 200, "distinct events each stream redelivers in redeliver mode");
ABSL_FLAG(int64_t, hot_user, 1'000'000, "the one wall of hot mode, and of senders mode");
ABSL_FLAG(int, hot_gifts, 5, "gift ids of hot mode");
ABSL_FLAG(int, hot_senders, 1000, "sender ids of hot mode");
ABSL_FLAG(int64_t, cap_user, 2'000'000, "the one wall of capwall mode");
ABSL_FLAG(int, cap_gifts, 1000, "distinct gifts capwall mode fills its wall with (the cap)");
ABSL_FLAG(int, scan_limit, 100, "events a RunCatchUp pass examines in scan mode (1..100)");
ABSL_FLAG(std::string, app_code, "bench", "app code of the events and walls");
ABSL_FLAG(std::string, period, "",
          "wall: the period read (GetGiftWallRequest.period: \"month\"; \"\" all-time)");
ABSL_FLAG(bool, include_unlit, false,
          "wall: also the catalogue's gifts the walls lack (GetGiftWallRequest.include_unlit)");
ABSL_FLAG(std::string, run_id, "", "prefix of event ids (default: mode, streams and start time)");
ABSL_FLAG(absl::Duration, deadline, absl::Seconds(30), "deadline of each call");
ABSL_FLAG(int, server_pid, 0, "if set, report this process's CPU and memory as the server's");
ABSL_FLAG(int, db_pid, 0, "if set, report this process's CPU as the database's");

namespace {

using giftwall::bench::CodeName;
using giftwall::v1::GiftWallService;
using giftwall::v1::ProjectionAdminService;
using grpc::health::v1::Health;

// What one stream saw. Each stream owns one, so the hot path takes no lock.
struct Tally {
  std::vector<double> latencies_ms;
  std::map<grpc::StatusCode, int64_t> failures;
  // What OK replies said: projection outcomes, serving status, empty or not.
  std::map<std::string, int64_t> outcomes;
  int64_t events = 0;  // events an OK reply carried (batch: batch_size a call)
};

// How a mode calls: its n-th request on stream `stream`, one RPC made either way, and what an
// OK reply counts for.
template <typename Service, typename Request, typename Response>
struct Rpc {
  using Stub = typename Service::Stub;
  using Done = std::function<void(grpc::Status)>;
  std::function<void(int stream, int64_t n, Request*)> fill;
  std::function<grpc::Status(Stub&, grpc::ClientContext*, const Request&, Response*)> sync;
  std::function<void(Stub&, grpc::ClientContext*, const Request*, Response*, Done)> callback;
  std::function<void(const Response&, Tally&)> count;
  // If set and true of an OK reply, the stream stops there (before --duration): nothing is left.
  std::function<bool(const Response&)> last;
};

// --- measuring the processes ----------------------------------------------------------------

double SelfCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// A line of /proc/PID/status such as VmHWM, in MiB; 0 if absent.
double ProcessStatusMib(int pid, const std::string& key) {
  return std::max(0.0, giftwall::process::StatusMib(pid, key));
}

// CPU seconds all processes of the machine have used so far (the first line of /proc/stat, less
// idle and iowait): what the client, the server and the database did not use of it was used by
// something else, which skews the figures.
double MachineCpuSeconds() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  in >> cpu;
  double ticks = 0, value = 0;
  for (int i = 0; i < 8 && in >> value; ++i) {
    if (i != 3 && i != 4) ticks += value;  // user nice system [idle iowait] irq softirq steal
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

struct CpuSnapshot {
  double client, server, db, machine;
  static CpuSnapshot Now() {
    return {SelfCpuSeconds(), giftwall::process::CpuSeconds(absl::GetFlag(FLAGS_server_pid)),
            giftwall::process::CpuSeconds(absl::GetFlag(FLAGS_db_pid)), MachineCpuSeconds()};
  }
};

// --- streams and drivers --------------------------------------------------------------------

// One channel per stream: with a distinct channel argument, channels share no connection, so
// the calls spread over HTTP/2 connections as independent relays and readers would.
std::shared_ptr<grpc::Channel> NewChannel(int stream) {
  grpc::ChannelArguments args;
  args.SetInt("grpc.channel_id", stream);
  auto channel = grpc::CreateCustomChannel(absl::GetFlag(FLAGS_server),
                                           grpc::InsecureChannelCredentials(), args);
  // Connecting is not what is measured.
  if (!channel->WaitForConnected(absl::ToChronoTime(absl::Now() + absl::Seconds(10)))) {
    std::fprintf(stderr, "cannot connect to %s\n", absl::GetFlag(FLAGS_server).c_str());
    std::exit(1);
  }
  return channel;
}

template <typename Service, typename Request, typename Response>
void Record(const Rpc<Service, Request, Response>& rpc, const grpc::Status& status,
            const Response& response, absl::Duration latency, Tally& tally) {
  tally.latencies_ms.push_back(absl::ToDoubleMilliseconds(latency));
  if (status.ok()) {
    rpc.count(response, tally);
  } else {
    ++tally.failures[status.error_code()];
  }
}

// A thread per stream, each blocking on its call.
template <typename Service, typename Request, typename Response>
void DriveSync(const Rpc<Service, Request, Response>& rpc,
               std::vector<std::unique_ptr<typename Service::Stub>>& stubs,
               std::vector<Tally>& tallies, absl::Time end) {
  std::vector<std::thread> threads;
  for (size_t s = 0; s < stubs.size(); ++s) {
    threads.emplace_back([&, s] {
      for (int64_t n = 0; absl::Now() < end; ++n) {
        grpc::ClientContext context;
        context.set_deadline(absl::ToChronoTime(absl::Now() + absl::GetFlag(FLAGS_deadline)));
        Request request;
        rpc.fill(static_cast<int>(s), n, &request);
        Response response;
        const absl::Time begin = absl::Now();
        const grpc::Status status = rpc.sync(*stubs[s], &context, request, &response);
        Record(rpc, status, response, absl::Now() - begin, tallies[s]);
        if (status.ok() && rpc.last && rpc.last(response)) break;
      }
    });
  }
  for (std::thread& t : threads) t.join();
}

// The callback API: each reply's callback, on a gRPC thread, issues the stream's next call, so
// the client needs no thread per stream.
template <typename Service, typename Request, typename Response>
void DriveCallback(const Rpc<Service, Request, Response>& rpc,
                   std::vector<std::unique_ptr<typename Service::Stub>>& stubs,
                   std::vector<Tally>& tallies, absl::Time end) {
  struct Stream {
    int index = 0;
    int64_t n = 0;
    std::unique_ptr<grpc::ClientContext> context;
    Request request;
    Response response;
    absl::Time begin;
  };
  std::vector<Stream> streams(stubs.size());
  absl::BlockingCounter finished(static_cast<int>(stubs.size()));
  std::function<void(Stream&)> issue = [&](Stream& s) {
    // A context serves one call only; the previous call is complete when this runs.
    s.context = std::make_unique<grpc::ClientContext>();
    s.context->set_deadline(absl::ToChronoTime(absl::Now() + absl::GetFlag(FLAGS_deadline)));
    s.request.Clear();
    rpc.fill(s.index, s.n, &s.request);
    s.response.Clear();
    s.begin = absl::Now();
    rpc.callback(*stubs[static_cast<size_t>(s.index)], s.context.get(), &s.request, &s.response,
                 [&](grpc::Status status) {
                   Record(rpc, status, s.response, absl::Now() - s.begin,
                          tallies[static_cast<size_t>(s.index)]);
                   ++s.n;
                   const bool last = status.ok() && rpc.last && rpc.last(s.response);
                   if (!last && absl::Now() < end) {
                     issue(s);
                   } else {
                     finished.DecrementCount();
                   }
                 });
  };
  for (size_t s = 0; s < streams.size(); ++s) {
    streams[s].index = static_cast<int>(s);
    issue(streams[s]);
  }
  finished.Wait();
}

// CPU seconds the machine used between the snapshots beyond what the three processes used.
double OtherCpu(const CpuSnapshot& before, const CpuSnapshot& after) {
  const double ours =
      (after.client - before.client) + (after.server - before.server) + (after.db - before.db);
  return std::max(0.0, (after.machine - before.machine) - ours);
}

// Runs `rpc` on every stream for --duration and prints the result line. Returns the exit
// code: 1 if any call failed, so a script notices without parsing.
template <typename Service, typename Request, typename Response>
int Measure(const Rpc<Service, Request, Response>& rpc) {
  const int streams = absl::GetFlag(FLAGS_streams);
  std::vector<std::unique_ptr<typename Service::Stub>> stubs;
  for (int s = 0; s < streams; ++s) stubs.push_back(Service::NewStub(NewChannel(s)));
  std::vector<Tally> tallies(static_cast<size_t>(streams));

  const CpuSnapshot cpu_before = CpuSnapshot::Now();
  const absl::Time start = absl::Now();
  const absl::Time end = start + absl::GetFlag(FLAGS_duration);
  if (absl::GetFlag(FLAGS_client) == "callback") {
    DriveCallback(rpc, stubs, tallies, end);
  } else {
    DriveSync(rpc, stubs, tallies, end);
  }
  // Until the last reply: a call that straddles the end counts, and so does its time.
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  const CpuSnapshot cpu_after = CpuSnapshot::Now();

  Tally total;
  for (Tally& t : tallies) {
    total.latencies_ms.insert(total.latencies_ms.end(), t.latencies_ms.begin(),
                              t.latencies_ms.end());
    for (auto [code, count] : t.failures) total.failures[code] += count;
    for (const auto& [outcome, count] : t.outcomes) total.outcomes[outcome] += count;
    total.events += t.events;
  }
  std::vector<double>& l = total.latencies_ms;
  std::sort(l.begin(), l.end());
  auto pct = [&](double p) {
    return l.empty() ? 0.0 : l[static_cast<size_t>(p * static_cast<double>(l.size() - 1))];
  };
  int64_t failed = 0;
  std::vector<std::string> failures;
  for (auto [code, count] : total.failures) {
    failed += count;
    failures.push_back(absl::StrCat(CodeName(code), ":", count));
  }
  std::vector<std::string> outcomes;
  for (const auto& [outcome, count] : total.outcomes) {
    outcomes.push_back(absl::StrCat(outcome, ":", count));
  }
  const int server_pid = absl::GetFlag(FLAGS_server_pid);
  const auto calls = static_cast<double>(l.size());
  absl::PrintF(
      "RESULT mode=%s streams=%d client=%s calls=%d events=%d seconds=%.2f rate=%.1f "
      "event_rate=%.1f p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f max_ms=%.3f failed=%d failures=%s "
      "outcomes=%s cpu_client=%.2f cpu_server=%.2f cpu_db=%.2f cpu_other=%.2f server_rss_mib=%.1f "
      "server_hwm_mib=%.1f run_id=%s\n",
      absl::GetFlag(FLAGS_mode), streams, absl::GetFlag(FLAGS_client), l.size(), total.events,
      seconds, calls / seconds, static_cast<double>(total.events) / seconds, pct(0.5), pct(0.9),
      pct(0.99), l.empty() ? 0.0 : l.back(), failed,
      failures.empty() ? "none" : absl::StrJoin(failures, ","),
      outcomes.empty() ? "none" : absl::StrJoin(outcomes, ","),
      (cpu_after.client - cpu_before.client) / seconds,
      (cpu_after.server - cpu_before.server) / seconds, (cpu_after.db - cpu_before.db) / seconds,
      OtherCpu(cpu_before, cpu_after) / seconds, ProcessStatusMib(server_pid, "VmRSS"),
      ProcessStatusMib(server_pid, "VmHWM"), absl::GetFlag(FLAGS_run_id));
  return failed == 0 ? 0 : 1;
}

// --- events -----------------------------------------------------------------------------------

std::string EventId(const char* kind, int stream, int64_t n) {
  return absl::StrCat(absl::GetFlag(FLAGS_run_id), "-", kind, "-", stream, "-", n);
}

std::string HotGiftId(uint64_t i) { return absl::StrCat("hot-", i); }

// A WalletGiftDebited message whose payload follows from its id alone, so a redelivery carries
// the same payload and occurred_at_ms as the first delivery.
void FillGiftEvent(const std::string& event_id, int64_t target_user, const std::string& gift_id,
                   int64_t sender, uint64_t seed, giftwall::v1::WalletOutboxMessage* m) {
  static const int64_t base_ms = absl::ToUnixMillis(absl::Now());
  m->set_app_code(absl::GetFlag(FLAGS_app_code));
  m->set_event_id(event_id);
  m->set_event_type("WalletGiftDebited");
  m->set_occurred_at_ms(base_ms + static_cast<int64_t>(seed % 1000));
  const uint64_t count = 1 + seed % 5;
  m->set_payload_json(
      absl::StrFormat(R"({"target_user_id":%d,"gift_id":"%s","gift_count":%d,"sender_user_id":%d,)"
                      R"("coin_amount":%d})",
                      target_user, gift_id, count, sender, 100 * count));
}

// An event spread over --users walls, --gifts gifts and --senders senders.
void FillSpreadEvent(const char* kind, int stream, int64_t n,
                     giftwall::v1::WalletOutboxMessage* m) {
  std::mt19937_64 rng(static_cast<uint64_t>(stream) * 1'000'003u + static_cast<uint64_t>(n));
  const auto users = static_cast<uint64_t>(absl::GetFlag(FLAGS_users));
  const auto gifts = static_cast<uint64_t>(absl::GetFlag(FLAGS_gifts));
  const auto senders = static_cast<uint64_t>(absl::GetFlag(FLAGS_senders));
  const auto user = static_cast<int64_t>(1 + rng() % users);
  const std::string gift = absl::StrCat("gift-", rng() % gifts);
  const auto sender = static_cast<int64_t>(100'000 + rng() % senders);
  FillGiftEvent(EventId(kind, stream, n), user, gift, sender, rng(), m);
}

using ProjectRpc =
    Rpc<GiftWallService, giftwall::v1::ProjectMessageRequest, giftwall::v1::ProjectMessageResponse>;

// ProjectMessage of whatever `fill` makes, counting outcomes.
ProjectRpc ProjectMessageRpc(
    std::function<void(int, int64_t, giftwall::v1::ProjectMessageRequest*)> fill) {
  ProjectRpc rpc;
  rpc.fill = std::move(fill);
  rpc.sync = [](auto& stub, auto* context, const auto& request, auto* response) {
    return stub.ProjectMessage(context, request, response);
  };
  rpc.callback = [](auto& stub, auto* context, const auto* request, auto* response, auto done) {
    stub.async()->ProjectMessage(context, request, response, std::move(done));
  };
  rpc.count = [](const giftwall::v1::ProjectMessageResponse& response, Tally& tally) {
    ++tally.events;
    ++tally.outcomes[giftwall::v1::ProjectionOutcome_Name(response.outcome())];
  };
  return rpc;
}

// --- modes ------------------------------------------------------------------------------------

int RunHealth() {
  Rpc<Health, grpc::health::v1::HealthCheckRequest, grpc::health::v1::HealthCheckResponse> rpc;
  // Service "": the process is up. It answers from memory, so this is gRPC's own cost.
  rpc.fill = [](int, int64_t, grpc::health::v1::HealthCheckRequest* request) {
    request->set_service("");
  };
  rpc.sync = [](auto& stub, auto* context, const auto& request, auto* response) {
    return stub.Check(context, request, response);
  };
  rpc.callback = [](auto& stub, auto* context, const auto* request, auto* response, auto done) {
    stub.async()->Check(context, request, response, std::move(done));
  };
  rpc.count = [](const grpc::health::v1::HealthCheckResponse& response, Tally& tally) {
    ++tally.events;
    ++tally.outcomes[grpc::health::v1::HealthCheckResponse::ServingStatus_Name(response.status())];
  };
  return Measure(rpc);
}

int RunProject() {
  return Measure(ProjectMessageRpc([](int stream, int64_t n, auto* request) {
    FillSpreadEvent("p", stream, n, request->mutable_message());
  }));
}

int RunBatch() {
  Rpc<GiftWallService, giftwall::v1::ProjectMessagesRequest, giftwall::v1::ProjectMessagesResponse>
      rpc;
  const int64_t size = absl::GetFlag(FLAGS_batch_size);
  rpc.fill = [size](int stream, int64_t n, giftwall::v1::ProjectMessagesRequest* request) {
    for (int64_t i = 0; i < size; ++i)
      FillSpreadEvent("b", stream, n * size + i, request->add_messages());
  };
  rpc.sync = [](auto& stub, auto* context, const auto& request, auto* response) {
    return stub.ProjectMessages(context, request, response);
  };
  rpc.callback = [](auto& stub, auto* context, const auto* request, auto* response, auto done) {
    stub.async()->ProjectMessages(context, request, response, std::move(done));
  };
  rpc.count = [](const giftwall::v1::ProjectMessagesResponse& response, Tally& tally) {
    for (const auto& result : response.results()) {
      ++tally.events;
      ++tally.outcomes[giftwall::v1::ProjectionOutcome_Name(result.outcome())];
    }
  };
  return Measure(rpc);
}

// Projects every stream's --redeliver_ids events before the clock starts, in batches, so that
// each measured call is a duplicate.
int RunRedeliver() {
  const int ids = absl::GetFlag(FLAGS_redeliver_ids);
  const int batch = std::max(1, std::min(absl::GetFlag(FLAGS_batch_size), 500));
  const int streams = absl::GetFlag(FLAGS_streams);
  std::vector<std::thread> warmers;
  std::vector<int> failed(static_cast<size_t>(streams));
  for (int s = 0; s < streams; ++s) {
    warmers.emplace_back([&, s] {
      auto stub = GiftWallService::NewStub(NewChannel(s));
      for (int first = 0; first < ids; first += batch) {
        giftwall::v1::ProjectMessagesRequest request;
        for (int n = first; n < std::min(ids, first + batch); ++n) {
          FillSpreadEvent("r", s, n, request.add_messages());
        }
        grpc::ClientContext context;
        context.set_deadline(absl::ToChronoTime(absl::Now() + absl::GetFlag(FLAGS_deadline)));
        giftwall::v1::ProjectMessagesResponse response;
        if (!stub->ProjectMessages(&context, request, &response).ok()) {
          ++failed[static_cast<size_t>(s)];
        }
      }
    });
  }
  for (std::thread& t : warmers) t.join();
  if (std::count(failed.begin(), failed.end(), 0) != streams) {
    std::fprintf(stderr, "redeliver: projecting the events to redeliver failed\n");
    return 1;
  }
  return Measure(ProjectMessageRpc([ids](int stream, int64_t n, auto* request) {
    FillSpreadEvent("r", stream, n % ids, request->mutable_message());
  }));
}

int RunHot() {
  return Measure(ProjectMessageRpc([](int stream, int64_t n, auto* request) {
    std::mt19937_64 rng(static_cast<uint64_t>(stream) * 1'000'003u + static_cast<uint64_t>(n));
    const std::string gift =
        HotGiftId(rng() % static_cast<uint64_t>(absl::GetFlag(FLAGS_hot_gifts)));
    const auto sender = static_cast<int64_t>(
        200'000 + rng() % static_cast<uint64_t>(absl::GetFlag(FLAGS_hot_senders)));
    FillGiftEvent(EventId("h", stream, n), absl::GetFlag(FLAGS_hot_user), gift, sender, rng(),
                  request->mutable_message());
  }));
}

using WallRpc =
    Rpc<GiftWallService, giftwall::v1::GetGiftWallRequest, giftwall::v1::GetGiftWallResponse>;

// GetGiftWall calls whose requests `fill` writes.
WallRpc GetGiftWallRpc(std::function<void(int, int64_t, giftwall::v1::GetGiftWallRequest*)> fill) {
  WallRpc rpc;
  rpc.fill = std::move(fill);
  rpc.sync = [](auto& stub, auto* context, const auto& request, auto* response) {
    return stub.GetGiftWall(context, request, response);
  };
  rpc.callback = [](auto& stub, auto* context, const auto* request, auto* response, auto done) {
    stub.async()->GetGiftWall(context, request, response, std::move(done));
  };
  return rpc;
}

int RunWall() {
  WallRpc rpc =
      GetGiftWallRpc([](int stream, int64_t n, giftwall::v1::GetGiftWallRequest* request) {
        std::mt19937_64 rng(static_cast<uint64_t>(stream) * 1'000'003u + static_cast<uint64_t>(n));
        request->set_app_code(absl::GetFlag(FLAGS_app_code));
        request->set_user_id(
            1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(absl::GetFlag(FLAGS_users))));
        request->set_period(absl::GetFlag(FLAGS_period));
        request->set_include_unlit(absl::GetFlag(FLAGS_include_unlit));
      });
  // "empty" says the walls were not filled first, which would make the figure meaningless.
  rpc.count = [](const giftwall::v1::GetGiftWallResponse& response, Tally& tally) {
    ++tally.events;
    ++tally.outcomes[response.items().empty() ? "empty" : "items"];
  };
  return Measure(rpc);
}

// A wall at the cap (--cap_gifts distinct gifts, filled before the clock starts; events with
// fixed ids, so a second run adds nothing), read a page at a time by every stream, each stream
// in one of the four orders.
int RunCapWall() {
  const int64_t user = absl::GetFlag(FLAGS_cap_user);
  const int gifts = absl::GetFlag(FLAGS_cap_gifts);
  auto filler = GiftWallService::NewStub(NewChannel(0));
  for (int first = 0; first < gifts; first += 500) {
    giftwall::v1::ProjectMessagesRequest request;
    for (int g = first; g < std::min(gifts, first + 500); ++g) {
      FillGiftEvent(absl::StrCat("capwall-", user, "-", g), user, absl::StrCat("cap-gift-", g),
                    300'000 + g, static_cast<uint64_t>(g), request.add_messages());
    }
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::GetFlag(FLAGS_deadline)));
    giftwall::v1::ProjectMessagesResponse response;
    grpc::Status status = filler->ProjectMessages(&context, request, &response);
    if (!status.ok()) {
      std::fprintf(stderr, "capwall: filling the wall failed: %s\n",
                   status.error_message().c_str());
      return 1;
    }
  }
  WallRpc rpc =
      GetGiftWallRpc([user](int stream, int64_t, giftwall::v1::GetGiftWallRequest* request) {
        request->set_app_code(absl::GetFlag(FLAGS_app_code));
        request->set_user_id(user);
        request->set_sort(static_cast<giftwall::v1::GiftWallSort>(1 + stream % 4));
      });
  // "short" says the wall is not at the cap (a smaller --max_wall_gifts, or a failed fill).
  rpc.count = [gifts](const giftwall::v1::GetGiftWallResponse& response, Tally& tally) {
    ++tally.events;
    ++tally.outcomes[response.summary().distinct_gifts() == gifts ? "at_cap" : "short"];
  };
  return Measure(rpc);
}

int RunSenders() {
  Rpc<GiftWallService, giftwall::v1::ListGiftWallSendersRequest,
      giftwall::v1::ListGiftWallSendersResponse>
      rpc;
  rpc.fill = [](int stream, int64_t n, giftwall::v1::ListGiftWallSendersRequest* request) {
    std::mt19937_64 rng(static_cast<uint64_t>(stream) * 1'000'003u + static_cast<uint64_t>(n));
    request->set_app_code(absl::GetFlag(FLAGS_app_code));
    request->set_user_id(absl::GetFlag(FLAGS_hot_user));
    request->set_gift_id(HotGiftId(rng() % static_cast<uint64_t>(absl::GetFlag(FLAGS_hot_gifts))));
  };
  rpc.sync = [](auto& stub, auto* context, const auto& request, auto* response) {
    return stub.ListGiftWallSenders(context, request, response);
  };
  rpc.callback = [](auto& stub, auto* context, const auto* request, auto* response, auto done) {
    stub.async()->ListGiftWallSenders(context, request, response, std::move(done));
  };
  rpc.count = [](const giftwall::v1::ListGiftWallSendersResponse& response, Tally& tally) {
    ++tally.events;
    ++tally.outcomes[response.senders().empty() ? "empty" : "senders"];
  };
  return Measure(rpc);
}

// The catch-up scan on demand: RunCatchUp passes (the server needs --enable_admin) over a
// backlog of outbox rows that the caller inserted under --app_code beforehand; an event is one a
// pass moved to done or dead. A stream stops when its pass found nothing (no unprojected or due
// event is left), so a backlog that drains before --duration ends the run at its last reply.
int RunScan() {
  Rpc<ProjectionAdminService, giftwall::v1::RunCatchUpRequest, giftwall::v1::RunCatchUpResponse>
      rpc;
  rpc.fill = [](int, int64_t, giftwall::v1::RunCatchUpRequest* request) {
    request->set_app_code(absl::GetFlag(FLAGS_app_code));
    request->set_limit(absl::GetFlag(FLAGS_scan_limit));
  };
  rpc.sync = [](auto& stub, auto* context, const auto& request, auto* response) {
    return stub.RunCatchUp(context, request, response);
  };
  rpc.callback = [](auto& stub, auto* context, const auto* request, auto* response, auto done) {
    stub.async()->RunCatchUp(context, request, response, std::move(done));
  };
  rpc.count = [](const giftwall::v1::RunCatchUpResponse& response, Tally& tally) {
    tally.events += response.processed();
    ++tally.outcomes[response.found() == 0 ? "nothing_left" : "found"];
  };
  rpc.last = [](const giftwall::v1::RunCatchUpResponse& response) { return response.found() == 0; };
  return Measure(rpc);
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const std::map<std::string, int (*)()> modes = {
      {"health", RunHealth},       {"project", RunProject}, {"batch", RunBatch},
      {"redeliver", RunRedeliver}, {"hot", RunHot},         {"wall", RunWall},
      {"senders", RunSenders},     {"capwall", RunCapWall}, {"scan", RunScan}};
  const std::string mode = absl::GetFlag(FLAGS_mode);
  const std::string client = absl::GetFlag(FLAGS_client);
  auto run = modes.find(mode);
  if (run == modes.end()) {
    std::fprintf(stderr, "--mode: \"%s\" is not one of the modes (see --help)\n", mode.c_str());
    return 2;
  }
  if (client != "sync" && client != "callback") {
    std::fprintf(stderr, "--client: \"%s\" is not sync or callback\n", client.c_str());
    return 2;
  }
  if (absl::GetFlag(FLAGS_streams) < 1 || absl::GetFlag(FLAGS_batch_size) < 1 ||
      absl::GetFlag(FLAGS_redeliver_ids) < 1 || absl::GetFlag(FLAGS_users) < 1 ||
      absl::GetFlag(FLAGS_gifts) < 1 || absl::GetFlag(FLAGS_senders) < 1 ||
      absl::GetFlag(FLAGS_hot_gifts) < 1 || absl::GetFlag(FLAGS_hot_senders) < 1) {
    std::fprintf(stderr, "--streams, --batch_size and the id counts must be at least 1\n");
    return 2;
  }
  if (absl::GetFlag(FLAGS_run_id).empty()) {
    // Distinct per invocation, so no run's new events are an earlier run's duplicates.
    absl::SetFlag(&FLAGS_run_id, absl::StrCat(mode, absl::GetFlag(FLAGS_streams), "-",
                                              absl::ToUnixMicros(absl::Now())));
  }
  return run->second();
}
