// On a real 3-node MariaDB Galera cluster (scripts/lib/galera.sh): leases hold across nodes (one
// scanner per app, one rebuild per app, migrations that take turns), a node killed and rejoined
// under relay load leaves every node exact, and a node cut from the primary component turns its
// server's readiness off. Slow (a cluster starts in about a minute): scripts/test --full.
#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "giftwall/v1/admin.grpc.pb.h"
#include "giftwall/v1/giftwall.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "server/storage/lease_store.h"
#include "server/storage/migrator.h"
#include "tests/e2e/galera_cluster.h"
#include "tests/e2e/server_process.h"
#include "tests/support/test_database.h"

namespace giftwall {
namespace {

using testing::GaleraCluster;
using ::testing::HasSubstr;
using testing::ServerProcess;

constexpr int64_t kT0 = 1'700'000'000'000;

class GaleraTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cluster_ = new GaleraCluster();
    cluster_->Start();  // a cluster that does not start fails the suite
    setenv("GIFTWALL_TEST_MYSQL_URL", cluster_->url(1, "mysql").c_str(), 1);
  }
  static void TearDownTestSuite() { delete cluster_; }

  // The relay: delivers until one of `servers` answers OK, trying the next on a retryable code.
  static void Deliver(const std::vector<const ServerProcess*>& servers, size_t first,
                      const std::string& app, const std::string& id, const std::string& payload) {
    for (int attempt = 0; attempt < 600; ++attempt) {
      const ServerProcess& server = *servers[(first + attempt) % servers.size()];
      auto stub = v1::GiftWallService::NewStub(server.Channel());
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
      v1::ProjectMessageRequest request;
      *request.mutable_message() = testing::Message(app, id, payload, kT0);
      v1::ProjectMessageResponse response;
      const grpc::Status s = stub->ProjectMessage(&context, request, &response);
      if (s.ok()) return;
      if (s.error_code() != grpc::StatusCode::UNAVAILABLE &&
          s.error_code() != grpc::StatusCode::ABORTED &&
          s.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) {
        ADD_FAILURE() << id << ": " << s.error_code() << " " << s.error_message();
        return;
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
    ADD_FAILURE() << id << " was never acked";
  }

  static GaleraCluster* cluster_;
};

GaleraCluster* GaleraTest::cluster_ = nullptr;

// `migrate` on two nodes at once, three times over: both runs exit 0 (one waits for the other's
// lease), and every node has the whole schema, clean.
TEST_F(GaleraTest, ConcurrentMigrationsOnTwoNodesBothSucceed) {
  for (int round = 0; round < 3; ++round) {
    const std::string database = absl::StrCat("gw_migrate_", round);
    cluster_->Query(1, absl::StrCat("CREATE DATABASE ", database,
                                    " CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"));
    std::string outputs[2];
    int codes[2];
    std::vector<std::thread> runs;
    for (int i = 0; i < 2; ++i) {
      runs.emplace_back([&, i] {
        codes[i] =
            testing::RunCommand({GIFTWALL_SERVER_BIN, "migrate",
                                 absl::StrCat("--mysql_url=", cluster_->url(1 + i, database))},
                                &outputs[i]);
      });
    }
    for (std::thread& t : runs) t.join();
    EXPECT_EQ(codes[0], 0) << outputs[0];
    EXPECT_EQ(codes[1], 0) << outputs[1];
    // Each run took the lease once, one after the other (statements already in effect are
    // passed over, so the schema alone would not show two runs at once).
    EXPECT_EQ(cluster_->Query(3, absl::StrCat("SELECT token FROM ", database,
                                              ".giftwall_leases WHERE name = 'migrate'")),
              "2");
    for (int n = 1; n <= 3; ++n) {
      EXPECT_EQ(
          cluster_->Query(n, absl::StrCat("SELECT CONCAT(MAX(version), '/', SUM(dirty)) FROM ",
                                          database, ".giftwall_schema_migrations")),
          absl::StrCat(storage::LatestEmbeddedVersion(), "/0"))
          << "node " << n << ", round " << round;
    }
  }
}

// Two servers, on two nodes, both running the scan: each app is scanned by one of them, the
// holder of its lease, and every event is projected once.
TEST_F(GaleraTest, OneServerScansEachAppWhateverNodeItUses) {
  testing::TestDatabase db;
  const std::vector<std::string> apps = {"ga", "gb", "gc", "gd"};
  for (const std::string& app : apps) {
    for (int i = 0; i < 10; ++i) {
      db.InsertOutbox(app, absl::StrCat(app, "-", i), "WalletGiftDebited",
                      testing::GiftPayloadJson(1 + i % 3, "rose", 1), kT0 + i);
    }
  }
  const std::vector<std::string> scan = {"--catchup_interval=300ms", "--catchup_min_age=0s",
                                         "--lease_duration=10s"};
  std::vector<std::string> flags1 = scan, flags2 = scan;
  flags1.push_back("--worker_id=one");
  flags2.push_back("--worker_id=two");
  ServerProcess one(cluster_->url(1, db.endpoint().database), flags1);
  ServerProcess two(cluster_->url(2, db.endpoint().database), flags2);
  ASSERT_TRUE(one.WaitReady()) << one.log();
  ASSERT_TRUE(two.WaitReady()) << two.log();
  const std::string done = absl::StrCat("SELECT COUNT(*) FROM ", db.endpoint().database,
                                        ".wallet_projection_events WHERE status = 'done'");
  for (int i = 0; i < 300 && cluster_->Query(3, done) != "40"; ++i) {
    absl::SleepFor(absl::Milliseconds(100));
  }
  ASSERT_EQ(cluster_->Query(3, done), "40");
  absl::SleepFor(absl::Seconds(2));  // more passes: a second scanner would show itself now
  for (const std::string& app : apps) {
    const std::string line = absl::StrCat("this replica scans app ", app, " ");
    const int scanners =
        (one.log().find(line) != std::string::npos) + (two.log().find(line) != std::string::npos);
    EXPECT_EQ(scanners, 1) << "app " << app;
    EXPECT_EQ(
        cluster_->Query(3, absl::StrCat("SELECT SUM(gift_count) FROM ", db.endpoint().database,
                                        ".user_gift_wall WHERE app_code = '", app, "'")),
        "10");
  }
}

// A rebuild of an app holds its lease on whatever node it runs: another, through a server on
// another node, is refused until it is done.
TEST_F(GaleraTest, ASecondRebuildOfAnAppIsRefusedThroughAnotherNode) {
  testing::TestDatabase db;
  absl::StatusOr<storage::MysqlEndpoint> node1 =
      storage::ParseMysqlUrl(cluster_->url(1, db.endpoint().database));
  ASSERT_TRUE(node1.ok());
  absl::StatusOr<std::unique_ptr<storage::LeaseKeeper>> elsewhere = storage::LeaseKeeper::Take(
      *node1, storage::SessionOptions{}, "rebuild/demo", "a rebuild on node 1", absl::Seconds(30));
  ASSERT_TRUE(elsewhere.ok()) << elsewhere.status();

  ServerProcess server(cluster_->url(2, db.endpoint().database),
                       {"--enable_admin", "--catchup_interval=0"});
  ASSERT_TRUE(server.WaitReady()) << server.log();
  auto rebuild = [&] {
    grpc::ClientContext context;
    v1::RebuildGiftWallRequest request;
    request.set_app_code("demo");
    auto stream =
        v1::ProjectionAdminService::NewStub(server.Channel())->RebuildGiftWall(&context, request);
    v1::RebuildGiftWallProgress progress;
    while (stream->Read(&progress)) {
    }
    return stream->Finish();
  };
  grpc::Status refused = rebuild();
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(refused.error_message(), HasSubstr("a rebuild of app_code demo is already running"));
  elsewhere->reset();
  // Released on node 1; node 2 applies that a moment later.
  grpc::Status done = rebuild();
  for (int i = 0; i < 50 && done.error_code() == grpc::StatusCode::FAILED_PRECONDITION; ++i) {
    absl::SleepFor(absl::Milliseconds(100));
    done = rebuild();
  }
  EXPECT_TRUE(done.ok()) << done.error_message();
}

// Relays deliver through servers on nodes 1 and 2, every event twice; node 2 is SIGKILLed part
// way and rejoins (an incremental state transfer) while they go on. Every node ends with every
// wall exact and every event done once.
TEST_F(GaleraTest, ANodeKilledAndRejoinedUnderRelayLoadLeavesEveryNodeExact) {
  testing::TestDatabase db;
  const std::string database = db.endpoint().database;
  ServerProcess one(cluster_->url(1, database), {"--catchup_interval=0"});
  ServerProcess two(cluster_->url(2, database), {"--catchup_interval=0"});
  ASSERT_TRUE(one.WaitReady()) << one.log();
  ASSERT_TRUE(two.WaitReady()) << two.log();
  constexpr int kEvents = 900;
  std::map<std::string, int64_t> expected;  // "user/gift" -> count
  std::vector<std::pair<std::string, std::string>> events;
  for (int i = 0; i < kEvents; ++i) {
    const int64_t user = 1 + i % 7, count = 1 + i % 3;
    const std::string gift = absl::StrCat("g", i % 5);
    events.emplace_back(absl::StrCat("K", i),
                        testing::GiftPayloadJson(user, gift, count, 100 + i % 11, 10));
    expected[absl::StrCat(user, "/", gift)] += count;
  }
  std::atomic<int> next{0}, acked{0};
  std::vector<std::thread> relays;
  for (int t = 0; t < 4; ++t) {
    relays.emplace_back([&, t] {
      for (int i = next++; i < kEvents; i = next++) {
        // Twice, through both servers: a duplicate storm across nodes.
        Deliver({&one, &two}, t, "demo", events[i].first, events[i].second);
        Deliver({&one, &two}, t + 1, "demo", events[i].first, events[i].second);
        ++acked;
      }
    });
  }
  while (acked < kEvents / 3) absl::SleepFor(absl::Milliseconds(20));
  cluster_->Kill(2);
  while (acked < kEvents / 2) absl::SleepFor(absl::Milliseconds(20));
  ASSERT_TRUE(cluster_->Rejoin(2));
  for (std::thread& t : relays) t.join();
  ASSERT_TRUE(two.WaitReady()) << "server two did not come back with its node: " << two.log();

  std::string want;
  for (const auto& [key, count] : expected) absl::StrAppend(&want, key, "=", count, ";");
  for (int n = 1; n <= 3; ++n) {
    cluster_->Query(n, "SET GLOBAL group_concat_max_len = 1048576");
    EXPECT_EQ(cluster_->Query(n, absl::StrCat("SELECT GROUP_CONCAT(CONCAT(user_id, '/', gift_id, "
                                              "'=', gift_count, ';') ORDER BY user_id, gift_id "
                                              "SEPARATOR '') FROM ",
                                              database, ".user_gift_wall")),
              want)
        << "node " << n;
    EXPECT_EQ(cluster_->Query(n, absl::StrCat("SELECT COUNT(*) FROM ", database,
                                              ".wallet_projection_events WHERE status = 'done'")),
              absl::StrCat(kEvents))
        << "node " << n;
  }
}

// A node cut from the others leaves the primary component: its server turns readiness off (the
// node answers only SHOW), and on again once the node is back and Synced.
TEST_F(GaleraTest, ANodeCutFromThePrimaryComponentTurnsItsServerUnready) {
  testing::TestDatabase db;
  ServerProcess server(cluster_->url(3, db.endpoint().database), {"--catchup_interval=0"});
  ASSERT_TRUE(server.WaitReady()) << server.log();
  cluster_->Isolate(3);
  std::string readiness = "SERVING";
  for (int i = 0; i < 300 && readiness == "SERVING"; ++i) {
    absl::SleepFor(absl::Milliseconds(100));
    readiness = server.Health("readiness");
  }
  EXPECT_EQ(readiness, "NOT_SERVING");
  EXPECT_EQ(server.Health(""), "SERVING") << "liveness does not follow the database";
  ASSERT_TRUE(cluster_->Unisolate(3));
  EXPECT_TRUE(server.WaitReady()) << server.log();
  EXPECT_THAT(server.log(), HasSubstr("not ready: the Galera node"));
}

}  // namespace
}  // namespace giftwall
