// The moments a projection service is judged by: the relay loses messages, two replicas race,
// a process is killed mid-transaction, the database goes away, a bad deploy dead-letters a
// burst of events. Each test drives the real server and ends with VerifyGiftWall finding no
// drift and the wall holding exactly what the outbox says.
#include <glob.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <numeric>
#include <random>
#include <set>
#include <thread>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/civil_time.h"
#include "absl/time/clock.h"
#include "giftwall/v1/admin.grpc.pb.h"
#include "giftwall/v1/giftwall.grpc.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/storage/db_clock.h"
#include "tests/e2e/private_mariadb.h"
#include "tests/e2e/server_process.h"
#include "tests/support/test_database.h"
#include "tests/support/timing.h"

namespace giftwall {
namespace {

using testing::Message;
using testing::PrivateMariaDb;
using testing::ServerProcess;

constexpr int64_t kT0 = 1'700'000'000'000;
constexpr char kApp[] = "fault";

// One generated gift event, as the wallet wrote it to the outbox.
struct OutboxEvent {
  std::string id;
  std::string payload;
  int64_t at;
  int64_t user;
  std::string gift;
  int64_t count;
  int64_t sender;
  int64_t coins;
};

std::string PayloadOf(const OutboxEvent& e) {
  return absl::StrFormat(
      R"({"target_user_id":%d,"gift_id":"%s","gift_count":%d,"sender_user_id":%d,)"
      R"("coin_amount":%d})",
      e.user, e.gift, e.count, e.sender, e.coins);
}

std::vector<OutboxEvent> MakeEvents(int n, unsigned seed, int users = 50) {
  std::mt19937 rng(seed);
  std::vector<OutboxEvent> events;
  for (int i = 0; i < n; ++i) {
    OutboxEvent e;
    e.id = absl::StrFormat("evt-%05d", i);
    e.user = 1 + static_cast<int64_t>(rng() % static_cast<unsigned>(users));
    e.count = 1 + static_cast<int64_t>(rng() % 5);
    e.at = kT0 + static_cast<int64_t>(rng() % 100000);
    e.gift = absl::StrCat("gift-", rng() % 10);
    e.sender = 1000 + static_cast<int64_t>(rng() % 20);
    e.coins = 10 * e.count;
    e.payload = PayloadOf(e);
    events.push_back(std::move(e));
  }
  return events;
}

void WriteOutbox(testing::TestDatabase& db, const std::vector<OutboxEvent>& events) {
  for (const OutboxEvent& e : events) {
    db.InsertOutbox(kApp, e.id, "WalletGiftDebited", e.payload, e.at);
  }
}

grpc::Status Project(const ServerProcess& server, const OutboxEvent& e,
                     v1::ProjectMessageResponse* response = nullptr) {
  v1::ProjectMessageResponse ignored;
  auto stub = v1::GiftWallService::NewStub(server.Channel());
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  v1::ProjectMessageRequest request;
  *request.mutable_message() = Message(kApp, e.id, e.payload, e.at);
  return stub->ProjectMessage(&context, request, response ? response : &ignored);
}

// The relay: delivers each event until the server answers OK, redelivering what a relay
// redelivers (README: the status codes). Any other code fails the test.
void DeliverUntilAcked(const ServerProcess& server, const OutboxEvent& e) {
  for (int attempt = 0; attempt < 200; ++attempt) {
    const grpc::Status s = Project(server, e);
    if (s.ok()) return;
    switch (s.error_code()) {
      case grpc::StatusCode::UNAVAILABLE:
      case grpc::StatusCode::ABORTED:
      case grpc::StatusCode::RESOURCE_EXHAUSTED:
      case grpc::StatusCode::DEADLINE_EXCEEDED:
      case grpc::StatusCode::CANCELLED:
        break;
      default:
        ADD_FAILURE() << "event " << e.id << " answered " << s.error_code() << ": "
                      << s.error_message();
        return;
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  ADD_FAILURE() << "event " << e.id << " was never acked";
}

std::unique_ptr<v1::ProjectionAdminService::Stub> Admin(const ServerProcess& server) {
  return v1::ProjectionAdminService::NewStub(server.Channel());
}

v1::GetProjectionStatusResponse Status(const ServerProcess& server) {
  grpc::ClientContext context;
  v1::GetProjectionStatusRequest request;
  request.set_app_code(kApp);
  v1::GetProjectionStatusResponse response;
  grpc::Status s = Admin(server)->GetProjectionStatus(&context, request, &response);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return response;
}

// Waits (bounded) until every outbox event of the app is done or dead.
bool WaitUntilCaughtUp(const ServerProcess& server, int64_t events) {
  for (int i = 0; i < 600; ++i) {
    v1::GetProjectionStatusResponse s = Status(server);
    if (s.unprojected_count() == 0 && s.done_count() + s.dead_count() == events) return true;
    absl::SleepFor(absl::Milliseconds(100));
  }
  return false;
}

// The test's own fold of `events`, as DESIGN §2.10 states the rules, written out apart from
// the server's code: one line a wall row and one a sender row, in key order, in the columns
// WallRows and SenderRows read.
struct ExpectedWall {
  std::vector<std::string> walls;
  std::vector<std::string> senders;
};

ExpectedWall FoldOf(const std::vector<OutboxEvent>& events) {
  struct SenderSum {
    int64_t count = 0, coins = 0, first = INT64_MAX, last = INT64_MIN;
  };
  struct GiftSum {
    int64_t count = 0, coins = 0, first = INT64_MAX, last = INT64_MIN;
    std::pair<int64_t, std::string> first_event{INT64_MAX, ""};
    int64_t first_sender = 0;
    std::map<int64_t, SenderSum> senders;
  };
  std::map<std::pair<int64_t, std::string>, GiftSum> gifts;
  for (const OutboxEvent& e : events) {
    GiftSum& g = gifts[{e.user, e.gift}];
    g.count += e.count;
    g.coins += e.coins;
    g.first = std::min(g.first, e.at);
    g.last = std::max(g.last, e.at);
    if (std::make_pair(e.at, e.id) < g.first_event) {
      g.first_event = {e.at, e.id};
      g.first_sender = e.sender;
    }
    SenderSum& s = g.senders[e.sender];
    s.count += e.count;
    s.coins += e.coins;
    s.first = std::min(s.first, e.at);
    s.last = std::max(s.last, e.at);
  }
  ExpectedWall expected;
  for (const auto& [key, g] : gifts) {
    // 冠名: the most sent; a tie to whoever reached it first (the earlier last send), then the
    // lower user id.
    const auto top = std::min_element(g.senders.begin(), g.senders.end(), [](auto& a, auto& b) {
      return std::make_tuple(-a.second.count, a.second.last, a.first) <
             std::make_tuple(-b.second.count, b.second.last, b.first);
    });
    expected.walls.push_back(absl::StrCat(key.first, ",", key.second, ",", g.count, ",", g.coins,
                                          ",", g.first, ",", g.last, ",", g.senders.size(), ",",
                                          top->first, ",", top->second.count, ",", g.first_sender));
    for (const auto& [sender, s] : g.senders) {
      expected.senders.push_back(absl::StrCat(key.first, ",", key.second, ",", sender, ",", s.count,
                                              ",", s.coins, ",", s.first, ",", s.last));
    }
  }
  return expected;
}

// The rows of a table of the app, one line each in key order, `columns` joined by commas.
std::vector<std::string> Rows(testing::TestDatabase& db, const std::string& table,
                              const std::string& columns, const std::string& order) {
  db.Exec("SET SESSION group_concat_max_len = 67108864");
  const std::string all = db.QueryString(
      absl::StrFormat("SELECT GROUP_CONCAT(CONCAT_WS(',', %s) ORDER BY %s SEPARATOR ';') FROM %s "
                      "WHERE app_code = '%s'",
                      columns, order, table, kApp));
  return all.empty() ? std::vector<std::string>{} : absl::StrSplit(all, ';');
}

// The end of every fault test: every wall row and sender row is exactly the test's own fold of
// the outbox (counts, coins, times, senders, 冠名, first sender), every event is done, and
// verify agrees.
void ExpectExactWall(testing::TestDatabase& db, const ServerProcess& server,
                     const std::vector<OutboxEvent>& events) {
  const ExpectedWall expected = FoldOf(events);
  EXPECT_EQ(Rows(db, "user_gift_wall",
                 "user_id, gift_id, gift_count, total_coins, first_received_at_ms, "
                 "last_received_at_ms, sender_count, top_sender_user_id, top_sender_count, "
                 "first_sender_user_id",
                 "user_id, gift_id"),
            expected.walls);
  EXPECT_EQ(Rows(db, "user_gift_wall_sender",
                 "user_id, gift_id, sender_user_id, sent_count, sent_coins, first_sent_at_ms, "
                 "last_sent_at_ms",
                 "user_id, gift_id, sender_user_id"),
            expected.senders);
  std::set<int64_t> users;
  for (const OutboxEvent& e : events) users.insert(e.user);
  grpc::ClientContext context;
  v1::VerifyGiftWallRequest request;
  request.set_app_code(kApp);
  v1::VerifyGiftWallResponse report;
  grpc::Status s = Admin(server)->VerifyGiftWall(&context, request, &report);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(report.drifted(), 0) << report.DebugString();
  EXPECT_EQ(report.unverifiable_users_size(), 0);
  EXPECT_EQ(report.users_checked(), static_cast<int64_t>(users.size()));
  EXPECT_EQ(db.QueryInt("SELECT COUNT(*) FROM wallet_projection_events WHERE status <> 'done'"), 0);
  EXPECT_EQ(db.QueryInt("SELECT COUNT(*) FROM wallet_projection_events"),
            static_cast<int64_t>(events.size()));
}

// The command that runs a program with its clock moved by `offset` (libfaketime's "+1h"), or
// nothing where libfaketime is not installed. The monotonic clock, which gRPC's timers run on,
// is left alone.
std::vector<std::string> FakeClock(const std::string& offset) {
  glob_t found;
  if (glob("/usr/lib/*/faketime/libfaketime.so.1", 0, nullptr, &found) != 0) return {};
  const std::string library = found.gl_pathv[0];
  globfree(&found);
  std::vector<std::string> command = {"env", absl::StrCat("LD_PRELOAD=", library),
                                      absl::StrCat("FAKETIME=", offset),
                                      "FAKETIME_DONT_FAKE_MONOTONIC=1"};
  // Under ASan the sanitizer's runtime must come first among preloaded libraries; it may
  // follow libfaketime here.
  const char* asan = std::getenv("ASAN_OPTIONS");
  command.push_back(
      absl::StrCat("ASAN_OPTIONS=", asan ? asan : "", asan ? ":" : "", "verify_asan_link_order=0"));
  return command;
}

// The time of the first glog line of a log ("I20261205 12:34:56.789012 ..."), in the local time
// zone, as glog writes it; the infinite past if there is none.
absl::Time LoggedClock(const std::string& log) {
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    char severity = 0;
    int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
    const std::string text(line.substr(0, 18));
    if (sscanf(text.c_str(), "%c%4d%2d%2d %2d:%2d:%2d", &severity, &year, &month, &day, &hour,
               &minute, &second) == 7 &&
        std::string("IWEF").find(severity) != std::string::npos) {
      return absl::FromCivil(absl::CivilSecond(year, month, day, hour, minute, second),
                             absl::LocalTimeZone());
    }
  }
  return absl::InfinitePast();
}

const std::vector<std::string> kScanning = {"--enable_admin", "--catchup_interval=200ms",
                                            "--catchup_min_age=0s"};

TEST(Faults, RelayLossIsRecoveredByTheBackgroundScan) {
  testing::TestDatabase db;
  const std::vector<OutboxEvent> events = MakeEvents(2000, 1);
  WriteOutbox(db, events);
  ServerProcess server(db.url(), kScanning);
  ASSERT_TRUE(server.WaitReady()) << server.log();
  // The relay delivers a random 70%, some of them twice, from 8 callers.
  std::mt19937 rng(2);
  std::vector<const OutboxEvent*> delivered;
  for (const OutboxEvent& e : events) {
    if (rng() % 10 < 7) delivered.push_back(&e);
    if (rng() % 10 == 0) delivered.push_back(&e);
  }
  std::shuffle(delivered.begin(), delivered.end(), rng);
  std::atomic<size_t> next{0};
  std::vector<std::thread> relays;
  for (int t = 0; t < 8; ++t) {
    relays.emplace_back([&] {
      for (size_t i = next++; i < delivered.size(); i = next++)
        DeliverUntilAcked(server, *delivered[i]);
    });
  }
  for (std::thread& t : relays) t.join();
  ASSERT_TRUE(WaitUntilCaughtUp(server, 2000)) << Status(server).DebugString();
  std::set<std::string> relayed;
  for (const OutboxEvent* e : delivered) relayed.insert(e->id);
  // At least what the relay never delivered was recovered by the scan (it may also win races
  // against the relay for events both saw).
  EXPECT_GE(Status(server).recovered_by_scan_total(), static_cast<int64_t>(2000 - relayed.size()));
  ExpectExactWall(db, server, events);
}

TEST(Faults, TwoServersRelayingAndScanningTheSameStreamCountEachEventOnce) {
  testing::TestDatabase db;
  const std::vector<OutboxEvent> events = MakeEvents(800, 3);
  WriteOutbox(db, events);
  ServerProcess a(db.url(), kScanning), b(db.url(), kScanning);
  ASSERT_TRUE(a.WaitReady()) << a.log();
  ASSERT_TRUE(b.WaitReady()) << b.log();
  std::vector<std::thread> relays;
  for (int t = 0; t < 8; ++t) {
    relays.emplace_back([&, t] {
      // Every event goes to both servers, in each caller's own order.
      std::vector<size_t> order(events.size());
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), std::mt19937(static_cast<unsigned>(t)));
      for (size_t i : order) {
        if (i % 4 == static_cast<size_t>(t % 4)) DeliverUntilAcked(t < 4 ? a : b, events[i]);
      }
    });
  }
  for (std::thread& t : relays) t.join();
  ASSERT_TRUE(WaitUntilCaughtUp(a, 800)) << Status(a).DebugString();
  ExpectExactWall(db, a, events);
}

// An OK is a promise: the relay acks it and never sends the event again. So after a kill -9 in
// the middle of transactions, only what was not acked is redelivered, and the wall must still be
// exactly the fold of every event: an OK given before its commit would show as a missing event.
TEST(Faults, KillNineMidLoadThenRestartAndRedeliverWhatWasNotAckedIsExact) {
  testing::TestDatabase db;
  const std::vector<OutboxEvent> events = MakeEvents(1500, 4);
  WriteOutbox(db, events);
  auto first = std::make_unique<ServerProcess>(
      db.url(), std::vector<std::string>{"--enable_admin", "--catchup_interval=0"});
  ASSERT_TRUE(first->WaitReady()) << first->log();
  std::vector<char> acked(events.size(), 0);  // each index written by one relay thread only
  std::atomic<int> acks{0};
  std::atomic<bool> killed{false};
  std::mutex codes_mu;
  std::map<grpc::StatusCode, int> codes;  // what the relay saw besides OK
  std::vector<std::thread> relays;
  for (int t = 0; t < 8; ++t) {
    relays.emplace_back([&, t] {
      for (size_t i = static_cast<size_t>(t); i < events.size() && !killed; i += 8) {
        v1::ProjectMessageResponse response;
        const grpc::Status s = Project(*first, events[i], &response);
        if (s.ok()) {
          EXPECT_EQ(response.outcome(), v1::PROJECTION_OUTCOME_PROJECTED) << events[i].id;
          acked[i] = 1;
          ++acks;
        } else {
          std::lock_guard<std::mutex> lock(codes_mu);
          ++codes[s.error_code()];
        }
      }
    });
  }
  while (acks < 500) absl::SleepFor(absl::Milliseconds(5));
  first->Kill();  // SIGKILL, in the middle of transactions
  killed = true;
  for (std::thread& t : relays) t.join();
  // A call cut off by the kill is UNAVAILABLE to the relay; a server that answered INTERNAL or
  // anything else would be paging someone.
  for (const auto& [code, count] : codes) {
    EXPECT_EQ(code, grpc::StatusCode::UNAVAILABLE) << count << " call(s) answered " << code;
  }
  EXPECT_EQ(db.QueryInt("SELECT COUNT(*) FROM wallet_projection_events WHERE status = "
                        "'processing'"),
            0)
      << "a killed transaction leaves no claim behind";
  std::vector<std::string> acked_ids;
  for (size_t i = 0; i < events.size(); ++i) {
    if (acked[i]) acked_ids.push_back(absl::StrCat("'", events[i].id, "'"));
  }
  EXPECT_EQ(db.QueryInt(absl::StrCat("SELECT COUNT(*) FROM wallet_projection_events WHERE status "
                                     "= 'done' AND event_id IN (",
                                     absl::StrJoin(acked_ids, ","), ")")),
            static_cast<int64_t>(acked_ids.size()))
      << "every acked event was committed before its OK";

  ServerProcess second(db.url(), {"--enable_admin", "--catchup_interval=0"});
  ASSERT_TRUE(second.WaitReady()) << second.log();
  std::vector<std::thread> redeliveries;
  for (int t = 0; t < 8; ++t) {
    redeliveries.emplace_back([&, t] {
      for (size_t i = static_cast<size_t>(t); i < events.size(); i += 8) {
        if (!acked[i]) DeliverUntilAcked(second, events[i]);
      }
    });
  }
  for (std::thread& t : redeliveries) t.join();
  ExpectExactWall(db, second, events);
}

// A relay with the service config OPERATIONS recommends (deploy/service-config.json, read as
// it is): the calls in flight when its server is killed are retried, those made while no server
// listens wait for one (waitForReady), and with a new server on the same address within 5 s
// every call ends OK, with no code of the relay's own; the walls count each event once.
TEST(Faults, TheRecommendedServiceConfigRidesOutAServerDownForFiveSeconds) {
  testing::TestDatabase db;
  const std::vector<OutboxEvent> events = MakeEvents(1200, 9);
  WriteOutbox(db, events);
  const std::vector<std::string> flags = {"--enable_admin", "--catchup_interval=0"};
  auto server = std::make_unique<ServerProcess>(db.url(), flags);
  ASSERT_TRUE(server->WaitReady()) << server->log();
  const int port = server->port();
  grpc::ChannelArguments args;
  args.SetServiceConfigJSON(process::ReadFile(GIFTWALL_SOURCE_DIR "/deploy/service-config.json"));
  const std::shared_ptr<grpc::Channel> channel =
      grpc::CreateCustomChannel(server->address(), grpc::InsecureChannelCredentials(), args);
  auto stub = v1::GiftWallService::NewStub(channel);

  std::atomic<int> answered{0};
  std::mutex failures_mu;
  std::vector<std::string> failures;
  std::vector<std::thread> relays;
  for (int t = 0; t < 8; ++t) {
    relays.emplace_back([&, t] {
      for (size_t i = static_cast<size_t>(t); i < events.size(); i += 8) {
        grpc::ClientContext context;  // no deadline of its own: the service config's timeout
        v1::ProjectMessageRequest request;
        *request.mutable_message() = Message(kApp, events[i].id, events[i].payload, events[i].at);
        v1::ProjectMessageResponse response;
        const grpc::Status s = stub->ProjectMessage(&context, request, &response);
        if (!s.ok()) {
          std::lock_guard<std::mutex> lock(failures_mu);
          failures.push_back(
              absl::StrCat(events[i].id, ": ", s.error_code(), " ", s.error_message()));
        }
        ++answered;
      }
    });
  }
  while (answered < 300) absl::SleepFor(absl::Milliseconds(5));
  server->Kill();  // SIGKILL, with calls in flight
  const int answered_at_kill = answered;
  absl::SleepFor(absl::Seconds(3));
  server = std::make_unique<ServerProcess>(db.url(), flags, std::vector<std::string>{}, port);
  for (std::thread& t : relays) t.join();
  EXPECT_TRUE(failures.empty()) << failures.size()
                                << " call(s) failed, the first: " << failures.front() << "\n"
                                << server->log();
  EXPECT_LT(answered_at_kill, static_cast<int>(events.size())) << "the load outlived the kill";
  ASSERT_TRUE(server->WaitReady()) << server->log();
  ExpectExactWall(db, *server, events);
}

TEST(Faults, BadPayloadBurstGoesDeadIsListedAndRequeuedAfterTheFix) {
  testing::TestDatabase db;
  std::vector<OutboxEvent> events = MakeEvents(200, 5);
  // A bad deploy: 60 events without gift_count.
  std::vector<std::string> fixed_payloads;
  for (int i = 0; i < 60; ++i) {
    OutboxEvent& e = events[static_cast<size_t>(i * 3)];
    fixed_payloads.push_back(e.payload);
    e.payload = absl::StrFormat(R"({"target_user_id":%d,"gift_id":"broken"})", e.user);
  }
  WriteOutbox(db, events);
  ServerProcess server(db.url(), {"--enable_admin", "--catchup_interval=0"});
  ASSERT_TRUE(server.WaitReady()) << server.log();
  for (const OutboxEvent& e : events) DeliverUntilAcked(server, e);

  grpc::ClientContext list_context;
  v1::ListDeadEventsRequest list;
  list.set_app_code(kApp);
  list.set_page_size(10);
  v1::ListDeadEventsResponse dead;
  ASSERT_TRUE(Admin(server)->ListDeadEvents(&list_context, list, &dead).ok());
  EXPECT_EQ(dead.events_size(), 10);
  EXPECT_FALSE(dead.next_page_token().empty());
  ASSERT_EQ(dead.groups_size(), 1);
  EXPECT_EQ(dead.groups(0).count(), 60);
  EXPECT_EQ(dead.groups(0).last_error(), "invalid gift payload: missing gift_count");

  // The wallet team corrects the rows; the operator requeues by error, dry run first.
  for (int i = 0; i < 60; ++i) {
    OutboxEvent& e = events[static_cast<size_t>(i * 3)];
    e.payload = fixed_payloads[static_cast<size_t>(i)];
    db.Exec(absl::StrFormat("UPDATE wallet_outbox SET payload = '%s' WHERE event_id = '%s'",
                            e.payload, e.id));
  }
  v1::RequeueDeadEventsRequest requeue;
  requeue.set_app_code(kApp);
  requeue.set_error_contains("missing gift_count");
  requeue.set_dry_run(true);
  v1::RequeueDeadEventsResponse result;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(Admin(server)->RequeueDeadEvents(&context, requeue, &result).ok());
    EXPECT_EQ(result.matched(), 60);
    EXPECT_EQ(result.requeued(), 60) << "would be requeued";
    EXPECT_EQ(Status(server).dead_count(), 60);
  }
  requeue.set_dry_run(false);
  {
    grpc::ClientContext context;
    ASSERT_TRUE(Admin(server)->RequeueDeadEvents(&context, requeue, &result).ok());
    EXPECT_EQ(result.matched(), 60);
    EXPECT_EQ(result.requeued(), 60);
    EXPECT_EQ(result.skipped_size(), 0);
  }
  EXPECT_EQ(Status(server).dead_count(), 0);
  // Without ids or a filter, a requeue is refused.
  {
    grpc::ClientContext context;
    v1::RequeueDeadEventsRequest everything;
    everything.set_app_code(kApp);
    EXPECT_EQ(Admin(server)->RequeueDeadEvents(&context, everything, &result).error_code(),
              grpc::StatusCode::INVALID_ARGUMENT);
  }
  ExpectExactWall(db, server, events);
}

// The server's clock is an hour ahead of the database's (libfaketime, preloaded), as a replica
// with a skewed clock would be. If it took any deadline from its own clock, it would see the
// other writer's live lease as expired and steal it, stamp its ledger rows an hour late, push
// its backoff an hour out, and scan events younger than the minimum age.
TEST(Faults, Rule9_AServerAnHourAheadKeepsToTheDatabaseClock) {
  const std::vector<std::string> faketime = FakeClock("+1h");
  ASSERT_FALSE(faketime.empty()) << "libfaketime is not installed (apt-get install faketime; "
                                    "scripts/test installs it)";
  testing::TestDatabase db;
  const auto db_now = [&] { return db.QueryInt("SELECT " GIFTWALL_DB_NOW_MS); };
  // Another writer holds E-leased for a minute more, by the database's clock.
  db.Exec(absl::StrFormat(
      "INSERT INTO wallet_projection_events (projection_name, app_code, event_id, status, "
      "locked_by, locked_until_ms, next_attempt_at_ms, created_at_ms, updated_at_ms) VALUES "
      "('user_gift_wall', '%s', 'E-leased', 'processing', 'other-writer', %d, %d, 1, 1)",
      kApp, db_now() + 60'000, db_now() + 60'000));
  // An old event for the scan, and one younger than its minimum age.
  OutboxEvent old_event = MakeEvents(1, 21).front(), young = MakeEvents(2, 21).back();
  old_event.id = "E-old";
  young.id = "E-young";
  db.InsertOutbox(kApp, old_event.id, "WalletGiftDebited", old_event.payload, db_now() - 600'000);
  db.InsertOutbox(kApp, young.id, "WalletGiftDebited", young.payload, db_now());
  ServerProcess server(
      db.url(), {"--enable_admin", "--catchup_interval=200ms", "--catchup_min_age=5m"}, faketime);
  ASSERT_TRUE(server.WaitReady()) << server.log();
  EXPECT_NEAR(static_cast<double>(absl::ToInt64Seconds(LoggedClock(server.log()) - absl::Now())),
              3600, 300)
      << "the server's clock is not an hour ahead: the test would prove nothing\n"
      << server.log();

  v1::ProjectMessageResponse response;
  OutboxEvent leased = MakeEvents(1, 22).front();
  leased.id = "E-leased";
  ASSERT_TRUE(Project(server, leased, &response).ok());
  EXPECT_EQ(response.outcome(), v1::PROJECTION_OUTCOME_LEASED) << "a live lease was stolen";

  const int64_t before = db_now();
  OutboxEvent fresh = MakeEvents(1, 23).front();
  fresh.id = "E-fresh";
  ASSERT_TRUE(Project(server, fresh, &response).ok());
  EXPECT_EQ(response.outcome(), v1::PROJECTION_OUTCOME_PROJECTED);
  const int64_t after = db_now();
  for (const char* column : {"created_at_ms", "updated_at_ms", "processed_at_ms"}) {
    const int64_t at = db.QueryInt(absl::StrFormat(
        "SELECT %s FROM wallet_projection_events WHERE event_id = 'E-fresh'", column));
    EXPECT_GE(at, before) << column;
    EXPECT_LE(at, after) << column;
  }

  // A transient failure's backoff counts from the database's now: seconds, not an hour.
  db.Exec("RENAME TABLE user_gift_wall TO user_gift_wall_away");
  OutboxEvent failing = MakeEvents(1, 24).front();
  failing.id = "E-failing";
  EXPECT_FALSE(Project(server, failing).ok());
  db.Exec("RENAME TABLE user_gift_wall_away TO user_gift_wall");
  const int64_t next_attempt = db.QueryInt(
      "SELECT next_attempt_at_ms FROM wallet_projection_events WHERE event_id = 'E-failing'");
  EXPECT_GT(next_attempt, before);
  EXPECT_LT(next_attempt, db_now() + 600'000) << "the backoff was counted from the server's clock";

  // The scan takes the old event and leaves the young one to the relay. (A pass that met the
  // wall table renamed above recorded it failed; a later one, after its backoff, projects it.)
  for (int i = 0; i < 600 && db.QueryString("SELECT status FROM wallet_projection_events WHERE "
                                            "event_id = 'E-old'") != "done";
       ++i) {
    absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_EQ(db.QueryString("SELECT status FROM wallet_projection_events WHERE event_id = 'E-old'"),
            "done");
  EXPECT_EQ(db.QueryInt("SELECT COUNT(*) FROM wallet_projection_events WHERE event_id = 'E-young'"),
            0)
      << "the scan took an event younger than its minimum age by the database's clock";
}

// An operator rebuilds an app while the relay projects into it, and the client goes away
// (Ctrl-C, a dropped port-forward) as soon as the rebuild has started. The rebuild is the
// server's: it goes on to the end, fixes the walls that had drifted, and neither loses nor
// doubles what the relay projected meanwhile.
TEST(Faults, ARebuildUnderLiveLoadWhoseClientDisconnectsFinishesAndLeavesTheWallExact) {
  testing::TestDatabase db;
  const std::vector<OutboxEvent> events = MakeEvents(3000, 31, /*users=*/1000);
  WriteOutbox(db, events);
  ServerProcess server(db.url(), {"--enable_admin", "--catchup_interval=0"});
  ASSERT_TRUE(server.WaitReady()) << server.log();
  const size_t half = events.size() / 2;
  for (size_t i = 0; i < half; i += 100) {
    grpc::ClientContext context;
    v1::ProjectMessagesRequest batch;
    for (size_t j = i; j < std::min(half, i + 100); ++j) {
      *batch.add_messages() = Message(kApp, events[j].id, events[j].payload, events[j].at);
    }
    v1::ProjectMessagesResponse answers;
    ASSERT_TRUE(v1::GiftWallService::NewStub(server.Channel())
                    ->ProjectMessages(&context, batch, &answers)
                    .ok());
  }
  // A bug or a hand-made fix has drifted a third of the walls.
  db.Exec("UPDATE user_gift_wall SET gift_count = gift_count + 100 WHERE user_id % 3 = 0");

  // The relay: the second half as new events, then redeliveries of everything, until stopped.
  std::atomic<bool> stop{false};
  std::atomic<size_t> next{half};
  std::vector<std::thread> relays;
  for (int t = 0; t < 4; ++t) {
    relays.emplace_back([&, t] {
      for (size_t i = next++; i < events.size(); i = next++) DeliverUntilAcked(server, events[i]);
      std::mt19937 rng(static_cast<unsigned>(t));
      while (!stop) DeliverUntilAcked(server, events[rng() % events.size()]);
    });
  }
  {
    grpc::ClientContext context;
    v1::RebuildGiftWallRequest request;
    request.set_app_code(kApp);
    std::unique_ptr<grpc::ClientReader<v1::RebuildGiftWallProgress>> stream =
        Admin(server)->RebuildGiftWall(&context, request);
    v1::RebuildGiftWallProgress progress;
    ASSERT_TRUE(stream->Read(&progress)) << stream->Finish().error_message();
    context.TryCancel();
    while (stream->Read(&progress)) {
    }
    EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  // Verify (read-only) finds the drift gone once the rebuild has gone through every user.
  int64_t drifted = -1;
  for (int i = 0; i < 600 && drifted != 0; ++i) {
    grpc::ClientContext context;
    v1::VerifyGiftWallRequest request;
    request.set_app_code(kApp);
    v1::VerifyGiftWallResponse report;
    ASSERT_TRUE(Admin(server)->VerifyGiftWall(&context, request, &report).ok());
    drifted = report.drifted();
    if (drifted != 0) absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_EQ(drifted, 0) << "the rebuild stopped with its client";
  stop = true;
  for (std::thread& t : relays) t.join();
  ExpectExactWall(db, server, events);
}

TEST(Faults, DatabaseRestartUnderLoadIsUnavailableThenRecoversWithoutAServerRestart) {
  PrivateMariaDb mariadb;
  mariadb.Start();
  setenv("GIFTWALL_TEST_MYSQL_URL", mariadb.server_url().c_str(), 1);
  testing::TestDatabase db;
  const std::vector<OutboxEvent> events = MakeEvents(1200, 6);
  WriteOutbox(db, events);
  ServerProcess server(db.url(), {"--enable_admin", "--catchup_interval=0",
                                  "--db_connect_timeout=1s", "--db_acquire_timeout=1s"});
  ASSERT_TRUE(server.WaitReady()) << server.log();
  const pid_t server_pid = server.pid();

  std::atomic<size_t> next{0};
  std::atomic<int> unavailable{0}, other_errors{0};
  std::vector<std::thread> relays;
  for (int t = 0; t < 6; ++t) {
    relays.emplace_back([&] {
      for (size_t i = next++; i < events.size(); i = next++) {
        for (;;) {  // the relay redelivers until acked
          grpc::Status s = Project(server, events[i]);
          if (s.ok()) break;
          if (s.error_code() == grpc::StatusCode::UNAVAILABLE) {
            ++unavailable;
          } else if (s.error_code() != grpc::StatusCode::ABORTED) {
            if (other_errors++ < 3) ADD_FAILURE() << s.error_code() << " " << s.error_message();
          }
          absl::SleepFor(absl::Milliseconds(50));
        }
      }
    });
  }
  while (next < 300) absl::SleepFor(absl::Milliseconds(5));
  mariadb.Stop();
  absl::SleepFor(absl::Seconds(3));
  EXPECT_NE(server.Health("readiness"), "SERVING") << "readiness follows the database";
  mariadb.Start();
  db.Reconnect();  // the test's own session died with the server, like every other
  for (std::thread& t : relays) t.join();
  EXPECT_GT(unavailable, 0) << "calls while the database was down answer UNAVAILABLE";
  EXPECT_EQ(other_errors, 0);
  EXPECT_EQ(server.pid(), server_pid);
  EXPECT_TRUE(server.WaitReady());
  // Reconnected by the pool on its own: the same server process serves and verifies.
  ExpectExactWall(db, server, events);
}

// A database that stops answering without closing anything (SIGSTOP) turns readiness off
// within a probe period or two, not after the calls' 15 s socket timeouts; it comes back alone.
TEST(Faults, AFrozenDatabaseTurnsReadinessOffWithinTheProbePeriod) {
  PrivateMariaDb mariadb;
  mariadb.Start();
  setenv("GIFTWALL_TEST_MYSQL_URL", mariadb.server_url().c_str(), 1);
  testing::TestDatabase db;
  ServerProcess server(db.url(), {"--catchup_interval=0"});
  ASSERT_TRUE(server.WaitReady()) << server.log();

  mariadb.Freeze();
  const absl::Time frozen = absl::Now();
  std::string readiness = "SERVING";
  while (readiness == "SERVING" && absl::Now() - frozen < absl::Seconds(30)) {
    absl::SleepFor(absl::Milliseconds(100));
    readiness = server.Health("readiness");
  }
  const absl::Duration took = absl::Now() - frozen;
  EXPECT_EQ(readiness, "NOT_SERVING");
  // Probes every 2 s, each bounded by 2 s: about 4 s. Before, a probe waited out the 15 s
  // socket timeout. 10 s leaves a slow machine room.
  if (testing::kWallClockBoundsHold) {
    EXPECT_LT(took, absl::Seconds(10)) << "readiness went off after " << took;
  }
  EXPECT_EQ(server.Health(""), "SERVING") << "liveness does not follow the database";

  mariadb.Thaw();
  EXPECT_TRUE(server.WaitReady()) << server.log();
}

// A node that takes no writes (a replica promoted the wrong way round, a fenced node, a Group
// Replication secondary) cannot serve this server: readiness goes off while it is read-only, and
// a write there is UNAVAILABLE (1290), not INTERNAL; both come back once it takes writes.
TEST(Faults, AReadOnlyDatabaseTurnsReadinessOffAndWritesAreUnavailable) {
  PrivateMariaDb mariadb;
  mariadb.Start();
  setenv("GIFTWALL_TEST_MYSQL_URL", mariadb.server_url().c_str(), 1);
  testing::TestDatabase db;
  // A user without SUPER: read_only binds it (root would write through it).
  mariadb.Exec(absl::StrCat("CREATE USER app@'%' IDENTIFIED BY 'pw'; GRANT ALL ON `",
                            db.endpoint().database, "`.* TO app@'%'"));
  const std::string url =
      absl::StrCat("mysql://app:pw@127.0.0.1:", mariadb.port(), "/", db.endpoint().database);
  ServerProcess server(url, {"--catchup_interval=0"});
  ASSERT_TRUE(server.WaitReady()) << server.log();

  mariadb.Exec("SET GLOBAL read_only = 1");
  std::string readiness = "SERVING";
  for (int i = 0; i < 100 && readiness == "SERVING"; ++i) {
    absl::SleepFor(absl::Milliseconds(100));
    readiness = server.Health("readiness");
  }
  EXPECT_EQ(readiness, "NOT_SERVING");
  OutboxEvent event;
  event.id = "R1";
  event.payload = testing::GiftPayloadJson(7, "rose", 1);
  event.at = kT0;
  const grpc::Status refused = Project(server, event);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE) << refused.error_message();
  EXPECT_THAT(server.log(), ::testing::HasSubstr("not ready: the database is read-only"));

  mariadb.Exec("SET GLOBAL read_only = 0");
  EXPECT_TRUE(server.WaitReady()) << server.log();
  const grpc::Status projected = Project(server, event);
  EXPECT_TRUE(projected.ok()) << projected.error_message();
}

// A call to a frozen database fails as soon as its statement limit (plus a second's margin for
// the server's own limit to speak first) and the connect timeout say, not after a longer socket
// timeout; and once the database is back, the same event projects.
TEST(Faults, CallsToAFrozenDatabaseFailWithinTheStatementLimit) {
  PrivateMariaDb mariadb;
  mariadb.Start();
  setenv("GIFTWALL_TEST_MYSQL_URL", mariadb.server_url().c_str(), 1);
  testing::TestDatabase db;
  ServerProcess server(db.url(), {"--catchup_interval=0", "--db_statement_timeout=3s"});
  ASSERT_TRUE(server.WaitReady()) << server.log();
  const OutboxEvent e = MakeEvents(1, 11).front();
  ASSERT_TRUE(Project(server, e).ok());  // the pool holds a session

  mariadb.Freeze();
  const absl::Time frozen = absl::Now();
  const grpc::Status status = Project(server, MakeEvents(2, 12).back());
  const absl::Duration took = absl::Now() - frozen;
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
  // By design 3 s + 1 s for the statement, then up to the 3 s connect timeout for a fresh session
  // to record the failure on: 7 s. The socket timeout used to be the limit + 5 s: 11 s.
  if (testing::kWallClockBoundsHold) {
    EXPECT_LT(took, absl::Seconds(9.5)) << "the call failed after " << took;
  }
  mariadb.Thaw();
  ASSERT_TRUE(server.WaitReady()) << server.log();
  DeliverUntilAcked(server, MakeEvents(2, 12).back());
}

}  // namespace
}  // namespace giftwall
