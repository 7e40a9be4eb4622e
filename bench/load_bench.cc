// Load against a running giftwall-server: N callers for a while, then throughput, latency
// percentiles and failures by status code. scripts/bench runs it against a throwaway database.
//   load_bench --server=127.0.0.1:50051 --mode=project --threads=16 --duration=10s
#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "giftwall/v1/giftwall.grpc.pb.h"
#include "grpcpp/grpcpp.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "host:port of giftwall-server");
ABSL_FLAG(std::string, mode, "project",
          "project: every call a new event; redeliver: each caller cycles through 200 events, so "
          "all but its first 200 calls are duplicates; wall: GetGiftWall of random users");
ABSL_FLAG(int, threads, 16, "concurrent callers");
ABSL_FLAG(absl::Duration, duration, absl::Seconds(10), "how long to run");
ABSL_FLAG(int, users, 1000, "walls the events spread over");
ABSL_FLAG(int, gifts, 20, "gift ids the events spread over");
ABSL_FLAG(std::string, app_code, "bench", "app code of the generated events");
ABSL_FLAG(std::string, run_id, "", "prefix of event ids (default: the start time)");

namespace {

using giftwall::v1::GiftWallService;

struct Totals {
  absl::Mutex mu;
  std::vector<double> latencies_ms ABSL_GUARDED_BY(mu);
  std::map<int, int64_t> failures ABSL_GUARDED_BY(mu);
};

grpc::Status OneCall(GiftWallService::Stub& stub, const std::string& mode, int thread, int64_t n,
                     std::mt19937_64& rng) {
  const int users = absl::GetFlag(FLAGS_users), gifts = absl::GetFlag(FLAGS_gifts);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  if (mode == "wall") {
    giftwall::v1::GetGiftWallRequest request;
    request.set_app_code(absl::GetFlag(FLAGS_app_code));
    request.set_user_id(1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(users)));
    giftwall::v1::GetGiftWallResponse response;
    return stub.GetGiftWall(&context, request, &response);
  }
  giftwall::v1::ProjectMessageRequest request;
  giftwall::v1::WalletOutboxMessage* m = request.mutable_message();
  m->set_app_code(absl::GetFlag(FLAGS_app_code));
  m->set_event_id(absl::StrCat(absl::GetFlag(FLAGS_run_id), "-", thread, "-", n));
  m->set_event_type("WalletGiftDebited");
  m->set_occurred_at_ms(absl::ToUnixMillis(absl::Now()));
  // Deterministic per event id, so a redelivery carries the same payload.
  std::mt19937_64 event_rng(static_cast<uint64_t>(thread) * 1'000'003u + static_cast<uint64_t>(n));
  m->set_payload_json(absl::StrFormat(
      R"({"target_user_id":%d,"gift_id":"gift-%d","gift_count":%d,"sender_user_id":%d,)"
      R"("coin_amount":%d})",
      1 + event_rng() % users, event_rng() % gifts, 1 + event_rng() % 5,
      100000 + event_rng() % 5000, 100 * (1 + event_rng() % 5)));
  giftwall::v1::ProjectMessageResponse response;
  return stub.ProjectMessage(&context, request, &response);
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const std::string mode = absl::GetFlag(FLAGS_mode);
  if (mode != "project" && mode != "redeliver" && mode != "wall") {
    std::fprintf(stderr, "--mode: \"%s\" is not project, redeliver or wall\n", mode.c_str());
    return 2;
  }
  if (absl::GetFlag(FLAGS_run_id).empty()) {
    absl::SetFlag(&FLAGS_run_id, absl::StrCat("run", absl::ToUnixSeconds(absl::Now())));
  }
  const int threads = absl::GetFlag(FLAGS_threads);
  const absl::Duration duration = absl::GetFlag(FLAGS_duration);
  Totals totals;
  std::vector<std::thread> callers;
  const absl::Time start = absl::Now();
  for (int t = 0; t < threads; ++t) {
    callers.emplace_back([&, t] {
      // One channel per caller: spreads the calls over HTTP/2 connections like real clients.
      grpc::ChannelArguments args;
      args.SetInt("grpc.channel_id", t);
      auto channel = grpc::CreateCustomChannel(absl::GetFlag(FLAGS_server),
                                               grpc::InsecureChannelCredentials(), args);
      auto stub = GiftWallService::NewStub(channel);
      std::mt19937_64 rng(static_cast<uint64_t>(t));
      std::vector<double> latencies;
      std::map<int, int64_t> failures;
      for (int64_t n = 0; absl::Now() - start < duration; ++n) {
        const absl::Time begin = absl::Now();
        grpc::Status status = mode == "redeliver" ? OneCall(*stub, "project", t, n % 200, rng)
                                                  : OneCall(*stub, mode, t, n, rng);
        latencies.push_back(absl::ToDoubleMilliseconds(absl::Now() - begin));
        if (!status.ok()) ++failures[status.error_code()];
      }
      absl::MutexLock lock(&totals.mu);
      totals.latencies_ms.insert(totals.latencies_ms.end(), latencies.begin(), latencies.end());
      for (auto [code, count] : failures) totals.failures[code] += count;
    });
  }
  for (std::thread& t : callers) t.join();
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);

  absl::MutexLock lock(&totals.mu);
  std::vector<double>& l = totals.latencies_ms;
  std::sort(l.begin(), l.end());
  auto pct = [&](double p) {
    return l.empty() ? 0.0 : l[static_cast<size_t>(p * static_cast<double>(l.size() - 1))];
  };
  int64_t failed = 0;
  for (auto [code, count] : totals.failures) failed += count;
  std::printf(
      "mode=%s threads=%d calls=%zu seconds=%.1f rate=%.0f/s p50=%.2fms p90=%.2fms "
      "p99=%.2fms max=%.2fms failed=%lld run_id=%s\n",
      mode.c_str(), threads, l.size(), seconds, static_cast<double>(l.size()) / seconds, pct(0.5),
      pct(0.9), pct(0.99), l.empty() ? 0.0 : l.back(), static_cast<long long>(failed),
      absl::GetFlag(FLAGS_run_id).c_str());
  for (auto [code, count] : totals.failures) {
    std::printf("  status %d: %lld calls\n", code, static_cast<long long>(count));
  }
  return failed == 0 ? 0 : 1;
}
