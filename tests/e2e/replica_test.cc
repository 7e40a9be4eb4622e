// --mysql_read_url against a real MariaDB replica of the primary (binlog, GTID), both private to
// this test: the wall reads go to the replica while it is usable, and to the primary (or
// UNAVAILABLE, if told so) while it lags past --read_replica_max_lag, its schema is behind, or it
// is down; never INTERNAL, and the pods stay ready.
#include <memory>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "giftwall/v1/giftwall.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "server/storage/migrator.h"
#include "tests/e2e/private_mariadb.h"
#include "tests/e2e/server_process.h"
#include "tests/support/process.h"
#include "tests/support/test_database.h"

namespace giftwall {
namespace {

using ::testing::HasSubstr;
using testing::PrivateMariaDb;
using testing::ServerProcess;

class ReplicaTest : public ::testing::Test {
 protected:
  ReplicaTest()
      : primary_({"--log-bin=primary-bin", "--server-id=1", "--binlog-format=ROW"}),
        replica_({"--server-id=2", "--read-only"}) {}

  void SetUp() override {
    primary_.Start();
    replica_.Start();
    replica_.Exec(
        absl::StrCat("CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = ", primary_.port(),
                     ", MASTER_USER = 'root', MASTER_USE_GTID = slave_pos; START SLAVE"));
    setenv("GIFTWALL_TEST_MYSQL_URL", primary_.server_url().c_str(), 1);
    db_ = std::make_unique<testing::TestDatabase>();
    // The schema reaches the replica as any write does.
    const std::string version = absl::StrCat(storage::LatestEmbeddedVersion());
    for (int i = 0; i < 300 && SchemaOnReplica() != version; ++i) {
      absl::SleepFor(absl::Milliseconds(100));
    }
    ASSERT_EQ(SchemaOnReplica(), version);
  }

  std::string SchemaOnReplica() {
    std::string output;
    testing::RunCommand({"/usr/bin/mariadb", "--no-defaults", "-h127.0.0.1",
                         absl::StrCat("-P", replica_.port()), "-uroot", "-N", "-e",
                         absl::StrCat("SELECT MAX(version) FROM `", db_->endpoint().database,
                                      "`.giftwall_schema_migrations")},
                        &output);
    return std::string(absl::StripTrailingAsciiWhitespace(output));
  }

  std::string ReplicaUrl() const {
    return absl::StrCat("mysql://root@127.0.0.1:", replica_.port(), "/", db_->endpoint().database);
  }

  static void Project(const ServerProcess& server, const std::string& id, int64_t count) {
    auto stub = v1::GiftWallService::NewStub(server.Channel());
    grpc::ClientContext context;
    v1::ProjectMessageRequest request;
    *request.mutable_message() =
        testing::Message("rep", id, testing::GiftPayloadJson(7, "rose", count, 70, 10));
    v1::ProjectMessageResponse response;
    const grpc::Status s = stub->ProjectMessage(&context, request, &response);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }

  // User 7's rose count as GetGiftWall answers it (-1 for no row), or the call's error.
  static grpc::Status Roses(const ServerProcess& server, int64_t* roses) {
    auto stub = v1::GiftWallService::NewStub(server.Channel());
    grpc::ClientContext context;
    v1::GetGiftWallRequest request;
    request.set_app_code("rep");
    request.set_user_id(7);
    v1::GetGiftWallResponse wall;
    const grpc::Status s = stub->GetGiftWall(&context, request, &wall);
    *roses = wall.items_size() == 1 ? wall.items(0).gift_count() : -1;
    return s;
  }

  static bool WaitForRoses(const ServerProcess& server, int64_t want) {
    int64_t roses = -2;
    for (int i = 0; i < 300; ++i) {
      if (Roses(server, &roses).ok() && roses == want) return true;
      absl::SleepFor(absl::Milliseconds(100));
    }
    ADD_FAILURE() << "the wall shows " << roses << " roses, not " << want;
    return false;
  }

  static bool WaitForLog(const ServerProcess& server, const std::string& line, int times = 1) {
    for (int i = 0; i < 300; ++i) {
      const std::string log = server.log();
      int seen = 0;
      for (size_t at = log.find(line); at != std::string::npos; at = log.find(line, at + 1)) {
        ++seen;
      }
      if (seen >= times) return true;
      absl::SleepFor(absl::Milliseconds(100));
    }
    ADD_FAILURE() << "no \"" << line << "\" (x" << times << ") in:\n" << server.log();
    return false;
  }

  PrivateMariaDb primary_;
  PrivateMariaDb replica_;
  std::unique_ptr<testing::TestDatabase> db_;
};

// The reads follow the replica while it keeps up; a replica whose SQL thread stops falls behind
// the heartbeat, and once past the bound the reads go to the primary; they come back once it has
// caught up. The lag is exported.
TEST_F(ReplicaTest, WallReadsGoToTheReplicaWhileItKeepsUpAndToThePrimaryWhenItLags) {
  const int metrics_port = process::FreePort();
  ServerProcess server(db_->url(), {absl::StrCat("--mysql_read_url=", ReplicaUrl()),
                                    "--read_replica_max_lag=5s", "--catchup_interval=0",
                                    absl::StrCat("--metrics_listen=127.0.0.1:", metrics_port)});
  ASSERT_TRUE(server.WaitReady()) << server.log();
  ASSERT_TRUE(WaitForLog(server, "read replica: in use"));
  Project(server, "E1", 2);
  ASSERT_TRUE(WaitForRoses(server, 2));

  replica_.Exec("STOP SLAVE SQL_THREAD");
  Project(server, "E2", 3);
  int64_t roses = 0;
  ASSERT_TRUE(Roses(server, &roses).ok());
  EXPECT_EQ(roses, 2) << "read from the primary: the replica has not applied E2";
  // Past the bound (5 s) the replica is left alone: the primary answers, and the log says why.
  ASSERT_TRUE(WaitForRoses(server, 5));
  EXPECT_THAT(server.log(), HasSubstr("read replica: not used, it trails the primary by"));
  std::string metrics = testing::HttpGet(metrics_port, "/metrics");
  EXPECT_THAT(metrics, HasSubstr("giftwall_read_replica_in_use 0"));
  EXPECT_THAT(metrics, HasSubstr("giftwall_read_replica_lag_seconds "));
  EXPECT_EQ(server.Health("readiness"), "SERVING");

  replica_.Exec("START SLAVE SQL_THREAD");
  ASSERT_TRUE(WaitForLog(server, "read replica: in use", 2));
  metrics = testing::HttpGet(metrics_port, "/metrics");
  EXPECT_THAT(metrics, HasSubstr("giftwall_read_replica_in_use 1"));
  ASSERT_TRUE(Roses(server, &roses).ok());
  EXPECT_EQ(roses, 5);
}

// A migration that has not reached the replica (its schema is behind this binary's) keeps the
// reads on the primary: the replica is never read with a schema the binary does not know.
TEST_F(ReplicaTest, AReplicaWhoseSchemaIsBehindIsNotRead) {
  replica_.Exec("STOP SLAVE");
  replica_.Exec(absl::StrCat(
      "DELETE FROM `", db_->endpoint().database,
      "`.giftwall_schema_migrations WHERE version = ", storage::LatestEmbeddedVersion()));
  ServerProcess server(db_->url(),
                       {absl::StrCat("--mysql_read_url=", ReplicaUrl()), "--catchup_interval=0"});
  ASSERT_TRUE(server.WaitReady()) << server.log();
  ASSERT_TRUE(WaitForLog(server, "read replica: not used, its schema is at version"));
  Project(server, "E1", 4);
  ASSERT_TRUE(WaitForRoses(server, 4)) << "the primary did not answer for the replica";
}

// A replica that is down: by default the primary answers; with --read_replica_fallback=unavailable
// the reads answer UNAVAILABLE (never INTERNAL). Either way the server stays ready.
TEST_F(ReplicaTest, AReplicaThatIsDownFallsBackOrIsUnavailableAsTold) {
  ServerProcess fallback(db_->url(),
                         {absl::StrCat("--mysql_read_url=", ReplicaUrl()), "--catchup_interval=0"});
  ServerProcess strict(db_->url(), {absl::StrCat("--mysql_read_url=", ReplicaUrl()),
                                    "--catchup_interval=0", "--read_replica_fallback=unavailable"});
  ASSERT_TRUE(fallback.WaitReady()) << fallback.log();
  ASSERT_TRUE(strict.WaitReady()) << strict.log();
  ASSERT_TRUE(WaitForLog(strict, "read replica: in use"));
  Project(fallback, "E1", 6);
  ASSERT_TRUE(WaitForRoses(strict, 6));

  replica_.Stop();
  ASSERT_TRUE(WaitForLog(strict, "read replica: not used, cannot reach it"));
  int64_t roses = 0;
  const grpc::Status refused = Roses(strict, &roses);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE) << refused.error_message();
  EXPECT_THAT(refused.error_message(), HasSubstr("the read replica is not used"));
  ASSERT_TRUE(WaitForRoses(fallback, 6));
  EXPECT_EQ(strict.Health("readiness"), "SERVING");
  EXPECT_EQ(fallback.Health("readiness"), "SERVING");
}

}  // namespace
}  // namespace giftwall
