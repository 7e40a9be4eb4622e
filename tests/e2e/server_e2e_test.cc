// The real binaries against a real MariaDB: giftwall-server on a free port, driven by the
// giftwall client, by a generated stub, and by a client that knows nothing but reflection.
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <future>
#include <map>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "giftwall/v1/admin.grpc.pb.h"
#include "giftwall/v1/giftwall.grpc.pb.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "server/domain/page_token.h"
#include "server/transport/admin_service.h"
#include "tests/e2e/reflection_client.h"
#include "tests/e2e/server_process.h"
#include "tests/support/test_database.h"
#include "tests/support/timing.h"

namespace giftwall {
namespace {

using ::testing::HasSubstr;
using testing::Message;
using testing::RunCommand;
using testing::ServerProcess;

class ServerE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    db_ = new testing::TestDatabase();
    // No background scan: the tests that scan run their own server (or RunCatchUp), and a scan of
    // the suite's shared outbox would race them for their apps' leases and events.
    server_ = new ServerProcess(db_->url(), {"--catchup_interval=0"});
    ASSERT_TRUE(server_->WaitReady()) << server_->log();
  }
  static void TearDownTestSuite() {
    delete server_;
    delete db_;
  }

  static grpc::Status Project(const v1::WalletOutboxMessage& message,
                              v1::ProjectMessageResponse* response = nullptr,
                              const ServerProcess* server = nullptr) {
    v1::ProjectMessageResponse ignored;
    if (response == nullptr) response = &ignored;
    auto stub = v1::GiftWallService::NewStub((server ? server : server_)->Channel());
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1::ProjectMessageRequest request;
    *request.mutable_message() = message;
    return stub->ProjectMessage(&context, request, response);
  }

  // `bytes` sent as the request of `method` ("/package.Service/Method"), whatever it is.
  static grpc::Status RawCall(const std::shared_ptr<grpc::Channel>& channel,
                              const std::string& method, const std::string& bytes) {
    grpc::Slice slice(bytes);
    grpc::ByteBuffer request(&slice, 1);
    grpc::ByteBuffer response;
    grpc::GenericStub stub(channel);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    std::promise<grpc::Status> done;
    stub.UnaryCall(&context, method, grpc::StubOptions(), &request, &response,
                   [&done](grpc::Status status) { done.set_value(std::move(status)); });
    return done.get_future().get();
  }

  static grpc::Status Wall(const v1::GetGiftWallRequest& request, v1::GetGiftWallResponse* page) {
    auto stub = v1::GiftWallService::NewStub(server_->Channel());
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    return stub->GetGiftWall(&context, request, page);
  }

  std::string Client(const std::vector<std::string>& args, int* exit_code = nullptr) {
    std::vector<std::string> argv = {GIFTWALL_CLIENT_BIN,
                                     absl::StrCat("--server=", server_->address())};
    argv.insert(argv.end(), args.begin(), args.end());
    std::string output;
    const int code = RunCommand(argv, &output);
    if (exit_code != nullptr) *exit_code = code;
    return output;
  }

  static testing::TestDatabase* db_;
  static ServerProcess* server_;
};

testing::TestDatabase* ServerE2eTest::db_ = nullptr;
ServerProcess* ServerE2eTest::server_ = nullptr;

// What `BINARY --version` says after the binary's name.
std::string VersionOf(const std::string& binary) {
  std::string output;
  EXPECT_EQ(RunCommand({binary, "--version"}, &output), 0) << output;
  const std::string name = binary.substr(binary.rfind('/') + 1);
  EXPECT_TRUE(absl::StartsWith(output, name + " ")) << output;
  return std::string(
      absl::StripSuffix(output.substr(std::min(output.size(), name.size() + 1)), "\n"));
}

// Both binaries say the one version the build stamped (scripts/check-image-version checks it
// where there is no .git), as giftwall_build_info does
// (ServerE2eTest.MetricsCountCallsUnderGoGrpcPrometheusNamesAndTheProjection).
TEST(VersionFlag, BothBinariesSayTheBuildsVersion) {
  const std::string server = VersionOf(GIFTWALL_SERVER_BIN);
  EXPECT_FALSE(server.empty());
  EXPECT_EQ(server.find_first_of(" \n"), std::string::npos) << server;
  EXPECT_EQ(VersionOf(GIFTWALL_CLIENT_BIN), server);
}

// The `trace-id` the server returned in a call's trailing metadata.
std::string TraceIdOf(const grpc::ClientContext& context) {
  const auto& trailers = context.GetServerTrailingMetadata();
  auto it = trailers.find("trace-id");
  return it == trailers.end() ? "" : std::string(it->second.data(), it->second.size());
}

// A traceparent from the relay, for trace id `trace`.
void SendTrace(grpc::ClientContext* context, const std::string& trace) {
  context->AddMetadata("traceparent", absl::StrCat("00-", trace, "-00f067aa0ba902b7-01"));
}

// --log_format=json: every line of a real run is one JSON object with time, severity and
// message, and the lines a call causes (its access line, an audit line, its group commit's) carry
// its W3C trace id, which the call gets back in its trailing metadata.
TEST(JsonLogs, EveryLineParsesAndACallsLinesCarryItsTraceId) {
  testing::TestDatabase db;
  // GRPC_VERBOSITY=DEBUG: gRPC core's own lines, which come through the same log.
  ServerProcess server(
      db.url(),
      {"--log_format=json", "--catchup_interval=0", "--enable_admin", "--max_wall_gifts=1"},
      {"/usr/bin/env", "GRPC_VERBOSITY=DEBUG"});
  ASSERT_TRUE(server.WaitReady()) << server.log();
  auto stub = v1::GiftWallService::NewStub(server.Channel());
  const std::string projected = "4bf92f3577b34da6a3ce929d0e0e4736";
  const std::string refused = "0af7651916cd43dd8448eb211c80319c";
  const std::string capped = "b7ad6b7169203331b7ad6b7169203331";
  const std::string audited = "a3ce929d0e0e47364bf92f3577b34da6";
  const auto project = [&](const std::string& trace, const std::string& id,
                           const std::string& gift) {
    grpc::ClientContext context;
    SendTrace(&context, trace);
    v1::ProjectMessageRequest request;
    *request.mutable_message() =
        Message("logs", id,
                absl::StrCat(R"({"target_user_id":5,"gift_id":")", gift, R"(","gift_count":1})"));
    v1::ProjectMessageResponse response;
    EXPECT_TRUE(stub->ProjectMessage(&context, request, &response).ok());
    return TraceIdOf(context);
  };
  EXPECT_EQ(project(projected, "L1", "rose"), projected);
  EXPECT_EQ(project(capped, "L2", "lily"), capped) << "over the cap: a group line names it";
  {
    grpc::ClientContext context;
    SendTrace(&context, refused);
    v1::GetGiftWallRequest request;
    request.set_app_code("logs");
    v1::GetGiftWallResponse response;
    EXPECT_EQ(stub->GetGiftWall(&context, request, &response).error_code(),
              grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(TraceIdOf(context), refused);
  }
  {
    grpc::ClientContext context;
    v1::GetGiftWallRequest request;
    request.set_app_code("logs");
    request.set_user_id(5);
    v1::GetGiftWallResponse response;
    EXPECT_TRUE(stub->GetGiftWall(&context, request, &response).ok());
    EXPECT_THAT(TraceIdOf(context), ::testing::MatchesRegex("[0-9a-f]{32}"))
        << "a call without a traceparent starts a trace";
  }
  {
    auto admin = v1::ProjectionAdminService::NewStub(server.Channel());
    grpc::ClientContext context;
    SendTrace(&context, audited);
    v1::GetProjectionStatusRequest request;
    request.set_app_code("logs");
    v1::GetProjectionStatusResponse response;
    EXPECT_TRUE(admin->GetProjectionStatus(&context, request, &response).ok());
  }
  ASSERT_EQ(server.Terminate(), 0);

  // Each line with a trace id, by it.
  std::map<std::string, std::vector<google::protobuf::Struct>> by_trace;
  int lines = 0;
  int grpc_lines = 0;
  for (const absl::string_view line : absl::StrSplit(server.log(), '\n', absl::SkipEmpty())) {
    if (absl::StartsWith(line, "warning: ")) continue;  // the environment check, before logging
    google::protobuf::Struct json;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(std::string(line), &json).ok()) << line;
    ++lines;
    const auto& f = json.fields();
    ASSERT_TRUE(f.contains("time") && f.contains("severity") && f.contains("message")) << line;
    EXPECT_THAT(f.at("time").string_value(),
                ::testing::MatchesRegex("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\\.[0-9]{3}Z"));
    EXPECT_THAT(f.at("severity").string_value(),
                ::testing::AnyOf("INFO", "WARNING", "ERROR", "FATAL"));
    if (absl::StartsWith(f.at("message").string_value(), "grpc: ")) ++grpc_lines;
    if (f.contains("trace_id")) by_trace[f.at("trace_id").string_value()].push_back(json);
    if (f.contains("trace_ids")) {
      for (const auto& id : f.at("trace_ids").list_value().values()) {
        by_trace[id.string_value()].push_back(json);
      }
    }
  }
  EXPECT_GT(lines, 5);
  EXPECT_GT(grpc_lines, 0) << "gRPC core's lines come through as JSON";
  const auto message_of = [&](const std::string& trace, absl::string_view part) {
    for (const google::protobuf::Struct& json : by_trace[trace]) {
      if (absl::StrContains(json.fields().at("message").string_value(), part)) return json;
    }
    ADD_FAILURE() << "no line of trace " << trace << " says " << part;
    return google::protobuf::Struct();
  };
  const google::protobuf::Struct access = message_of(refused, "call refused: INVALID_ARGUMENT");
  EXPECT_EQ(access.fields().at("method").string_value(),
            "/giftwall.v1.GiftWallService/GetGiftWall");
  EXPECT_EQ(access.fields().at("app_code").string_value(), "logs");
  const google::protobuf::Struct cap = message_of(capped, "is at its cap of 1 gifts");
  EXPECT_EQ(cap.fields().at("traces").number_value(), 1);
  EXPECT_EQ(cap.fields().at("event_ids").list_value().values(0).string_value(), "L2");
  const google::protobuf::Struct audit = message_of(audited, "audit: caller=");
  EXPECT_EQ(audit.fields().at("method").string_value(),
            "/giftwall.v1.ProjectionAdminService/GetProjectionStatus");
  EXPECT_TRUE(by_trace[projected].empty()) << "a call that went well leaves no line";
}

TEST(MigrateCommand, AppliesMigrationsAndIsSafeToRunTwice) {
  testing::TestDatabase db(/*migrate=*/false);
  for (int run = 0; run < 2; ++run) {
    std::string output;
    EXPECT_EQ(RunCommand({GIFTWALL_SERVER_BIN, "migrate", absl::StrCat("--mysql_url=", db.url())},
                         &output),
              0)
        << output;
    EXPECT_THAT(output, ::testing::ContainsRegex(run == 0 ? "applied [1-9][0-9]* migration"
                                                          : "applied 0 migration"));
    // The configuration in force, in one line, by flag name (server_config_test checks that
    // every flag is there).
    EXPECT_THAT(output, ::testing::ContainsRegex("listen=0.0.0.0:50051 plaintext=false "
                                                 "tls_cert_file=\\(none\\) .* "
                                                 "payload_source=message .* mysql_url=mysql://"));
  }
  EXPECT_GT(db.QueryInt("SELECT COUNT(*) FROM giftwall_schema_migrations"), 0);
}

TEST(ServerConfig, InvalidConfigurationFailsAtStartWithOneClearLine) {
  std::string output;
  EXPECT_EQ(RunCommand({GIFTWALL_SERVER_BIN, "--mysql_url=postgres://x"}, &output), 2);
  EXPECT_THAT(output, HasSubstr("--mysql_url: mysql_url: must start with mysql://"));
  EXPECT_EQ(
      RunCommand({GIFTWALL_SERVER_BIN, "--mysql_url=mysql://u@h/d", "--listen=nope"}, &output), 2);
  EXPECT_THAT(output, HasSubstr("--listen: \"nope\" is not host:port"));
  EXPECT_EQ(RunCommand({GIFTWALL_SERVER_BIN, "--mysql_url=mysql://u@h/d", "--mysql_read_url=h/d"},
                       &output),
            2);
  EXPECT_THAT(output, HasSubstr("--mysql_read_url: mysql_url: must start with mysql://"));
  EXPECT_EQ(RunCommand({GIFTWALL_SERVER_BIN, "--mysql_url=mysql://u@h/d",
                        "--mysql_read_url=mysql://u@r/d", "--db_read_pool_size=2"},
                       &output),
            2);
  EXPECT_THAT(output, HasSubstr("--read_lanes: must stay below --db_read_pool_size (2)"));
  // The background pool must hold what it serves: two admin threads, a rebuild, the scan's reads,
  // the lane that projects and the heartbeat.
  EXPECT_EQ(RunCommand({GIFTWALL_SERVER_BIN, "--mysql_url=mysql://u@h/d", "--enable_admin",
                        "--db_background_pool_size=5"},
                       &output),
            2);
  EXPECT_THAT(output, HasSubstr("--db_background_pool_size: must be at least 6, got 5"));
}

// Period walls are kept in each app's zone: a server without the zone database refuses to start
// (DESIGN §2.15) rather than fold events as UTC.
TEST(ServerConfig, AMissingZoneDatabaseFailsAtStart) {
  std::string output;
  EXPECT_EQ(RunCommand({"env", "TZDIR=/nonexistent/zoneinfo", GIFTWALL_SERVER_BIN, "--plaintext",
                        "--mysql_url=mysql://u@h/d"},
                       &output),
            2);
  EXPECT_THAT(output, HasSubstr("the time zone database is missing"));
  EXPECT_THAT(output, HasSubstr("install tzdata"));
}

// The ConfigMap's way in: GIFTWALL_<FLAG> sets --<flag>, and a variable that names no flag (a
// typo that would leave its flag at the default) is reported.
TEST(ServerConfig, EnvironmentSetsFlagsAndReportsVariablesThatNameNone) {
  setenv("GIFTWALL_LISTEN", "nope", 1);
  setenv("GIFTWALL_MYSQL_URLL", "mysql://u@h/d", 1);
  std::string output;
  EXPECT_EQ(RunCommand({GIFTWALL_SERVER_BIN, "--mysql_url=mysql://u@h/d"}, &output), 2);
  unsetenv("GIFTWALL_LISTEN");
  unsetenv("GIFTWALL_MYSQL_URLL");
  EXPECT_THAT(output, HasSubstr("warning: GIFTWALL_MYSQL_URLL names no flag of giftwall-server"));
  EXPECT_THAT(output, HasSubstr("--listen: \"nope\" is not host:port"));
}

TEST_F(ServerE2eTest, ReflectionListsDescribesAndCallsEveryService) {
  testing::ReflectionClient reflection(server_->Channel());
  absl::StatusOr<std::vector<std::string>> services = reflection.ListServices();
  ASSERT_TRUE(services.ok()) << services.status();
  EXPECT_THAT(*services,
              ::testing::IsSupersetOf({"giftwall.v1.GiftWallService", "grpc.health.v1.Health",
                                       "grpc.reflection.v1alpha.ServerReflection"}));
  absl::StatusOr<std::vector<std::string>> methods =
      reflection.DescribeService("giftwall.v1.GiftWallService");
  ASSERT_TRUE(methods.ok()) << methods.status();
  EXPECT_THAT(*methods,
              ::testing::IsSupersetOf({"ProjectMessage", "ProjectMessages", "GetGiftWall"}));
  methods = reflection.DescribeService("grpc.health.v1.Health");
  ASSERT_TRUE(methods.ok()) << methods.status();
  EXPECT_THAT(*methods, ::testing::IsSupersetOf({"Check", "Watch"}));

  for (const char* service : {"", "readiness"}) {
    grpc::Status rpc;
    absl::StatusOr<std::string> health = reflection.CallUnary(
        "grpc.health.v1.Health", "Check", absl::StrCat(R"({"service":")", service, R"("})"), &rpc);
    ASSERT_TRUE(health.ok()) << health.status();
    ASSERT_TRUE(rpc.ok()) << rpc.error_message();
    EXPECT_EQ(*health, R"({"status":"SERVING"})") << service;
  }

  // Project and read through JSON alone, as grpcurl would.
  const std::string project =
      R"({"message":{"app_code":"refl","event_id":"R1",)"
      R"("event_type":"WalletGiftDebited","occurred_at_ms":"1700000000000",)"
      R"("payload_json":"{\"target_user_id\":5,\"gift_id\":\"rose\",)"
      R"(\"gift_count\":2}"}})";
  grpc::Status rpc;
  absl::StatusOr<std::string> out =
      reflection.CallUnary("giftwall.v1.GiftWallService", "ProjectMessage", project, &rpc);
  ASSERT_TRUE(out.ok() && rpc.ok()) << out.status() << rpc.error_message();
  EXPECT_THAT(*out, HasSubstr("PROJECTION_OUTCOME_PROJECTED"));
  out = reflection.CallUnary("giftwall.v1.GiftWallService", "ProjectMessage", project, &rpc);
  ASSERT_TRUE(out.ok() && rpc.ok());
  EXPECT_THAT(*out, HasSubstr("PROJECTION_OUTCOME_ALREADY_PROJECTED"));
  out = reflection.CallUnary("giftwall.v1.GiftWallService", "GetGiftWall",
                             R"({"app_code":"refl","user_id":"5"})", &rpc);
  ASSERT_TRUE(out.ok() && rpc.ok());
  EXPECT_THAT(*out, HasSubstr(R"("gift_id":"rose","gift_count":"2")"));
}

TEST_F(ServerE2eTest, ClientProjectsRedeliversAndShowsTheWall) {
  const std::vector<std::string> project = {
      "project", "--app_code=cli", "--event_id=C1",
      R"(--payload={"target_user_id":9,"gift_id":"rocket","gift_count":3})"};
  int code = -1;
  EXPECT_EQ(Client(project, &code), "PROJECTED\n");
  EXPECT_EQ(code, 0);
  EXPECT_EQ(Client(project), "ALREADY_PROJECTED\n");
  std::vector<std::string> second = project;
  second[2] = "--event_id=C2";
  EXPECT_EQ(Client(second), "PROJECTED\n");
  const std::string table = Client({"wall", "--app_code=cli", "--user_id=9"}, &code);
  EXPECT_EQ(code, 0) << table;
  EXPECT_THAT(table, ::testing::ContainsRegex("rocket +- +6 +0 +0 +- +- "));
  EXPECT_THAT(table, HasSubstr("distinct gifts: 1, received in all: 6, coins: 0"));
  EXPECT_EQ(Client({"health"}), "SERVING\n");
  // A failed call says why and exits non-zero.
  const std::string bad = Client({"wall", "--app_code=cli", "--user_id=0"}, &code);
  EXPECT_EQ(code, 1);
  EXPECT_THAT(bad, HasSubstr("INVALID_ARGUMENT: user_id must be > 0, got 0"));
}

// --json prints what grpcurl -emit-defaults prints for the same response: protobuf's JSON mapping,
// lowerCamel names, 64-bit integers as strings, enums by name, every field.
// --json_names=proto keeps the .proto's names.
TEST_F(ServerE2eTest, ClientJsonIsGrpcurls) {
  std::vector<std::string> project = {
      "project", "--app_code=cli-json", "--event_id=J1", "--json",
      R"(--payload={"target_user_id":9,"gift_id":"rocket","gift_count":3})"};
  int code = -1;
  EXPECT_EQ(Client(project, &code),
            "{\n \"outcome\": \"PROJECTION_OUTCOME_PROJECTED\",\n \"detail\": \"\"\n}\n");
  EXPECT_EQ(code, 0);
  const std::string wall = Client({"wall", "--app_code=cli-json", "--user_id=9", "--json"}, &code);
  EXPECT_EQ(code, 0) << wall;
  EXPECT_THAT(wall, HasSubstr(R"("giftId": "rocket")"));
  EXPECT_THAT(wall, HasSubstr(R"("giftCount": "3")"));
  EXPECT_THAT(wall, HasSubstr(R"("nextPageToken": "")")) << "a default is printed too";
  EXPECT_THAT(wall, ::testing::Not(HasSubstr("gift_count")));
  const std::string proto_names =
      Client({"wall", "--app_code=cli-json", "--user_id=9", "--json", "--json_names=proto"}, &code);
  EXPECT_THAT(proto_names, HasSubstr(R"("gift_count": "3")"));
  EXPECT_THAT(Client({"health", "--json_names=camel"}, &code),
              HasSubstr(R"(--json_names: "camel" is neither json nor proto)"));
  EXPECT_EQ(code, 2);
}

// The client reads GIFTWALL_CLI_*, never the server's GIFTWALL_*: run in a server's pod, it must
// not present the server's certificate (or call the server's address) as its own.
TEST_F(ServerE2eTest, ClientReadsItsOwnEnvironmentNotTheServers) {
  std::string output;
  EXPECT_EQ(RunCommand({"/usr/bin/env", absl::StrCat("GIFTWALL_CLI_SERVER=", server_->address()),
                        "GIFTWALL_SERVER=127.0.0.1:1", "GIFTWALL_LISTEN=127.0.0.1:1",
                        "GIFTWALL_TLS_CERT_FILE=/nonexistent/tls.crt",
                        "GIFTWALL_TLS_KEY_FILE=/nonexistent/tls.key",
                        "GIFTWALL_TLS_CA_FILE=/nonexistent/ca.crt", GIFTWALL_CLIENT_BIN, "health"},
                       &output),
            0)
      << output;
  EXPECT_EQ(output, "SERVING\n");
  EXPECT_EQ(RunCommand({"/usr/bin/env", "GIFTWALL_CLI_TLS_CA_FILE=/nonexistent/ca.crt",
                        GIFTWALL_CLIENT_BIN, "health"},
                       &output),
            2);
  EXPECT_THAT(output, HasSubstr("--tls_ca_file: cannot read /nonexistent/ca.crt"));
  EXPECT_EQ(RunCommand({"/usr/bin/env", "GIFTWALL_CLI_SEVRER=x", GIFTWALL_CLIENT_BIN,
                        absl::StrCat("--server=", server_->address()), "health"},
                       &output),
            0);
  EXPECT_THAT(output, HasSubstr("warning: GIFTWALL_CLI_SEVRER names no flag of giftwall"));
}

TEST_F(ServerE2eTest, ClientShowsCoinsSendersAndTheTopSender) {
  const auto project = [&](const std::string& id, int64_t sender, int64_t count, int64_t at) {
    return Client({"project", "--app_code=cli2", absl::StrCat("--event_id=", id),
                   absl::StrCat("--occurred_at_ms=", at),
                   absl::StrFormat(R"(--payload={"target_user_id":9,"gift_id":"rocket",)"
                                   R"("gift_count":%d,"sender_user_id":%d,"coin_amount":%d,)"
                                   R"("gift_name":"Rocket"})",
                                   count, sender, count * 1000)});
  };
  EXPECT_EQ(project("K1", 501, 2, 1'700'000'000'000), "PROJECTED\n");
  EXPECT_EQ(project("K2", 502, 1, 1'700'000'001'000), "PROJECTED\n");
  EXPECT_EQ(project("K3", 502, 1, 1'700'000'002'000), "PROJECTED\n");
  const std::string table = Client({"wall", "--app_code=cli2", "--user_id=9"});
  // Both senders sent 2; 501 got there first, so 501 is the 冠名.
  EXPECT_THAT(table, ::testing::ContainsRegex("rocket +Rocket +4 +4000 +2 +501 \\(2\\) +501 "));
  EXPECT_THAT(table, HasSubstr("coins: 4000"));
  const std::string senders =
      Client({"senders", "--app_code=cli2", "--user_id=9", "--gift_id=rocket"});
  EXPECT_THAT(senders,
              ::testing::ContainsRegex("SENDER[^\n]*\n501 +2 +2000 [^\n]*\n502 +2 +2000 "));
}

TEST_F(ServerE2eTest, ReflectionSeesCoinsSendersSortsAndSummary) {
  testing::ReflectionClient reflection(server_->Channel());
  grpc::Status rpc;
  auto call = [&](const std::string& method, const std::string& json) {
    absl::StatusOr<std::string> out =
        reflection.CallUnary("giftwall.v1.GiftWallService", method, json, &rpc);
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? *out : "";
  };
  // Three gifts: lily is the most counted, crown the richest, rose the first lit.
  const std::tuple<const char*, const char*, int, int, int, int64_t> events[] = {
      {"W1", "rose", 1, 10, 701, 1'700'000'000'000},
      {"W2", "lily", 5, 50, 702, 1'700'000'100'000},
      {"W3", "crown", 2, 9000, 703, 1'700'000'200'000},
      {"W4", "crown", 1, 1000, 704, 1'700'000'300'000}};
  for (const auto& [id, gift, count, coins, sender, at] : events) {
    const std::string payload = absl::StrFormat(
        R"({\"target_user_id\":11,\"gift_id\":\"%s\",\"gift_count\":%d,\"coin_amount\":%d,)"
        R"(\"sender_user_id\":%d})",
        gift, count, coins, sender);
    const std::string out =
        call("ProjectMessage", absl::StrFormat(R"({"message":{"app_code":"refl2","event_id":"%s",)"
                                               R"("event_type":"WalletGiftDebited",)"
                                               R"("occurred_at_ms":"%d","payload_json":"%s"}})",
                                               id, at, payload));
    ASSERT_TRUE(rpc.ok()) << rpc.error_message();
    EXPECT_THAT(out, HasSubstr("PROJECTION_OUTCOME_PROJECTED"));
  }
  const std::pair<const char*, std::vector<std::string>> sorts[] = {
      {"GIFT_WALL_SORT_COUNT_DESC", {"lily", "crown", "rose"}},
      {"GIFT_WALL_SORT_COINS_DESC", {"crown", "lily", "rose"}},
      {"GIFT_WALL_SORT_LAST_RECEIVED_DESC", {"crown", "lily", "rose"}},
      {"GIFT_WALL_SORT_FIRST_RECEIVED_ASC", {"rose", "lily", "crown"}}};
  for (const auto& [sort, want] : sorts) {
    std::vector<std::string> got;
    std::string token;
    do {
      const std::string out =
          call("GetGiftWall", absl::StrFormat(R"({"app_code":"refl2","user_id":"11","page_size":2,)"
                                              R"("sort":"%s","page_token":"%s"})",
                                              sort, token));
      ASSERT_TRUE(rpc.ok()) << rpc.error_message();
      std::vector<std::pair<size_t, std::string>> on_page;  // by position in the JSON
      for (const char* gift : {"rose", "lily", "crown"}) {
        const size_t pos = out.find(absl::StrCat(R"("gift_id":")", gift, R"(")"));
        if (pos != std::string::npos) on_page.emplace_back(pos, gift);
      }
      std::sort(on_page.begin(), on_page.end());
      for (const auto& [pos, gift] : on_page) got.push_back(gift);
      EXPECT_THAT(out, HasSubstr(R"("total_coins":"10060")")) << "the summary covers the wall";
      const size_t at = out.find(R"("next_page_token":")");
      token = at == std::string::npos ? "" : out.substr(at + 19, out.find('"', at + 19) - at - 19);
    } while (!token.empty());
    EXPECT_THAT(got, ::testing::ElementsAreArray(want)) << sort;
  }
  const std::string crown = call(
      "GetGiftWall",
      R"({"app_code":"refl2","user_id":"11","sort":"GIFT_WALL_SORT_COINS_DESC","page_size":1})");
  EXPECT_THAT(crown, HasSubstr(R"("sender_count":"2")"));
  EXPECT_THAT(crown,
              HasSubstr(R"("top_sender":{"user_id":"703","sent_count":"2","sent_coins":"9000")"));
  EXPECT_THAT(crown, HasSubstr(R"("first_sender_user_id":"703")"));
  const std::string senders =
      call("ListGiftWallSenders", R"({"app_code":"refl2","user_id":"11","gift_id":"crown"})");
  EXPECT_LT(senders.find(R"("user_id":"703")"), senders.find(R"("user_id":"704")"));

  // A token replayed with another sort or user is INVALID_ARGUMENT.
  const std::string first =
      call("GetGiftWall", R"({"app_code":"refl2","user_id":"11","page_size":1})");
  const size_t at = first.find(R"("next_page_token":")");
  ASSERT_NE(at, std::string::npos);
  const std::string token = first.substr(at + 19, first.find('"', at + 19) - at - 19);
  call("GetGiftWall", absl::StrFormat(R"({"app_code":"refl2","user_id":"11","page_token":"%s",)"
                                      R"("sort":"GIFT_WALL_SORT_COINS_DESC"})",
                                      token));
  EXPECT_EQ(rpc.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  call("GetGiftWall",
       absl::StrFormat(R"({"app_code":"refl2","user_id":"12","page_token":"%s"})", token));
  EXPECT_EQ(rpc.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(rpc.error_message(), HasSubstr("another wall or sort"));
}

// --payload_source=outbox: what is projected is the wallet's outbox row; a message that says
// another gift than its row is refused, one whose row is not there yet is to be redelivered.
TEST_F(ServerE2eTest, OutboxPayloadSourceProjectsTheRowAndRefusesForgeries) {
  ServerProcess server(db_->url(), {"--payload_source=outbox", "--catchup_interval=0"});
  ASSERT_TRUE(server.WaitReady()) << server.log();
  const std::string rose = R"({"target_user_id":31,"gift_id":"rose","gift_count":2})";
  db_->InsertOutbox("outboxmode", "O1", "WalletGiftDebited", rose, 1'700'000'000'000);
  db_->InsertOutbox("outboxmode", "O2", "WalletGiftDebited", rose, 1'700'000'000'000);
  db_->InsertOutbox("outboxmode", "O3", "WalletRecharged", rose, 1'700'000'000'000);
  const auto ledger_rows = [&] {
    return db_->QueryInt(
        "SELECT COUNT(*) FROM wallet_projection_events WHERE app_code = 'outboxmode'");
  };
  const auto project = [&](const std::string& id, const std::string& payload) {
    v1::ProjectMessageResponse response;
    grpc::Status status = Project(Message("OutboxMode", id, payload), &response, &server);
    return std::make_pair(status, response.outcome());
  };

  // The same gift, written another way (key order, spacing): projected, from the row.
  auto [status, outcome] =
      project("O1", R"({ "gift_count": 2, "gift_id": "rose", "target_user_id": 31 })");
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(outcome, v1::PROJECTION_OUTCOME_PROJECTED);
  EXPECT_EQ(db_->QueryInt("SELECT gift_count FROM user_gift_wall WHERE app_code = 'outboxmode' "
                          "AND user_id = 31"),
            2);

  // A forged count, a forged type, a row not there yet: nothing written.
  std::tie(status, outcome) =
      project("O2", R"({"target_user_id":31,"gift_id":"rose","gift_count":2000})");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(),
            "message.payload_json differs from the outbox row of this event: rejected");
  std::tie(status, outcome) = project("O3", rose);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("message.event_type differs"));
  std::tie(status, outcome) = project("O4", rose);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(status.error_message(), HasSubstr("has no outbox row \"O4\" yet"));
  EXPECT_EQ(ledger_rows(), 1);
  EXPECT_THAT(server.log(), HasSubstr("rejected a message whose payload_json differs from its "
                                      "outbox row: caller=(anyone) app_code=outboxmode "
                                      "event_id=O2"));

  // A batch with one forgery is refused whole.
  auto stub = v1::GiftWallService::NewStub(server.Channel());
  grpc::ClientContext context;
  v1::ProjectMessagesRequest batch;
  *batch.add_messages() = Message("outboxmode", "O2", rose);
  *batch.add_messages() =
      Message("outboxmode", "O2", R"({"target_user_id":31,"gift_id":"rose","gift_count":9})");
  v1::ProjectMessagesResponse results;
  status = stub->ProjectMessages(&context, batch, &results);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("messages[1].payload_json differs"));
  EXPECT_EQ(ledger_rows(), 1);
}

// The wallet owns wallet_outbox and its collation. Under a case-insensitive, PAD SPACE one the
// lookup of "e1" or "E1 " also returns the row of "E1": only the byte-identical row counts, so
// one real event is projected once, however its id is spelled.
TEST_F(ServerE2eTest, OutboxPayloadSourceTakesOnlyTheByteIdenticalRow) {
  testing::TestDatabase db;  // its own: the wallet's table is altered
  db.Exec(
      "ALTER TABLE wallet_outbox MODIFY app_code VARCHAR(64) CHARACTER SET utf8mb4 "
      "COLLATE utf8mb4_general_ci NOT NULL, MODIFY event_id VARCHAR(128) CHARACTER SET "
      "utf8mb4 COLLATE utf8mb4_general_ci NOT NULL");
  ServerProcess server(db.url(), {"--payload_source=outbox", "--catchup_interval=0"});
  ASSERT_TRUE(server.WaitReady()) << server.log();
  const std::string rose = R"({"target_user_id":32,"gift_id":"rose","gift_count":2})";
  db.InsertOutbox("collation", "E1", "WalletGiftDebited", rose, 1'700'000'000'000);

  v1::ProjectMessageResponse response;
  grpc::Status status = Project(Message("collation", "E1", rose), &response, &server);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.outcome(), v1::PROJECTION_OUTCOME_PROJECTED);
  for (const std::string id : {"e1", "E1 ", "e1  "}) {
    status = Project(Message("collation", id, rose), &response, &server);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << "\"" << id << "\"";
    EXPECT_THAT(status.error_message(), HasSubstr("has no outbox row"));
  }
  // The real id, redelivered, is answered from the ledger.
  status = Project(Message("collation", "E1", rose), &response, &server);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.outcome(), v1::PROJECTION_OUTCOME_ALREADY_PROJECTED);
  EXPECT_EQ(db.QueryInt("SELECT gift_count FROM user_gift_wall WHERE user_id = 32"), 2);
  EXPECT_EQ(db.QueryInt("SELECT COUNT(*) FROM wallet_projection_events"), 1);
}

// The wallet prunes old outbox rows. A redelivery of an event that is done or dead answers from
// the ledger, never "no outbox row yet" forever.
TEST_F(ServerE2eTest, OutboxPayloadSourceAnswersDoneAndDeadEventsFromTheLedger) {
  ServerProcess server(db_->url(), {"--payload_source=outbox", "--catchup_interval=0"});
  ASSERT_TRUE(server.WaitReady()) << server.log();
  const std::string rose = R"({"target_user_id":33,"gift_id":"rose","gift_count":1})";
  const std::string broken = R"({"target_user_id":33,"gift_id":"rose"})";
  db_->InsertOutbox("pruned", "P1", "WalletGiftDebited", rose, 1'700'000'000'000);
  db_->InsertOutbox("pruned", "P2", "WalletGiftDebited", broken, 1'700'000'000'000);
  v1::ProjectMessageResponse response;
  ASSERT_TRUE(Project(Message("pruned", "P1", rose), &response, &server).ok());
  EXPECT_EQ(response.outcome(), v1::PROJECTION_OUTCOME_PROJECTED);
  ASSERT_TRUE(Project(Message("pruned", "P2", broken), &response, &server).ok());
  ASSERT_EQ(response.outcome(), v1::PROJECTION_OUTCOME_DEAD);
  const std::string reason = response.detail();

  db_->Exec("DELETE FROM wallet_outbox WHERE app_code = 'pruned'");
  grpc::Status status = Project(Message("pruned", "P1", rose), &response, &server);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.outcome(), v1::PROJECTION_OUTCOME_ALREADY_PROJECTED);
  status = Project(Message("pruned", "P2", broken), &response, &server);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.outcome(), v1::PROJECTION_OUTCOME_DEAD);
  EXPECT_EQ(response.detail(), reason);
  EXPECT_EQ(db_->QueryInt("SELECT gift_count FROM user_gift_wall WHERE app_code = 'pruned' "
                          "AND user_id = 33"),
            1);
}

// A migration recorded dirty keeps the server NOT_SERVING on readiness, saying why, until an
// operator clears it with migrate --clear_dirty.
TEST_F(ServerE2eTest, ADirtyMigrationKeepsReadinessNotServingUntilCleared) {
  testing::TestDatabase db;
  db.Exec("UPDATE giftwall_schema_migrations SET dirty = 1 WHERE version = 1");
  ServerProcess server(db.url(), {"--catchup_interval=0"});
  std::string log;
  for (int i = 0; i < 100 && !absl::StrContains(log, "stopped part way"); ++i) {
    absl::SleepFor(absl::Milliseconds(100));
    log = server.log();
  }
  EXPECT_THAT(log, HasSubstr("not ready: migration 0001_projection_and_wall.sql stopped part way"));
  EXPECT_EQ(server.Health("readiness"), "NOT_SERVING");
  std::string output;
  EXPECT_EQ(
      RunCommand({GIFTWALL_SERVER_BIN, "migrate", absl::StrCat("--mysql_url=", db.url())}, &output),
      1);
  EXPECT_THAT(output, HasSubstr("--clear_dirty=1"));
  EXPECT_EQ(RunCommand({GIFTWALL_SERVER_BIN, "migrate", "--clear_dirty=1",
                        absl::StrCat("--mysql_url=", db.url())},
                       &output),
            0)
      << output;
  EXPECT_TRUE(server.WaitReady()) << server.log();
}

// A server whose binary is newer than the database's schema (a rolling update that ran ahead of
// its migration Job) is not ready, and says which version it needs, until the schema catches up.
TEST_F(ServerE2eTest, ReadinessWaitsForTheSchemaThisBinaryNeeds) {
  testing::TestDatabase db;
  db.Exec(
      "DELETE FROM giftwall_schema_migrations WHERE version = (SELECT v FROM (SELECT "
      "MAX(version) AS v FROM giftwall_schema_migrations) AS latest)");
  ServerProcess server(db.url(), {"--catchup_interval=0"});
  std::string log;
  for (int i = 0; i < 100 && !absl::StrContains(log, "this binary needs"); ++i) {
    absl::SleepFor(absl::Milliseconds(100));
    log = server.log();
  }
  EXPECT_THAT(log, ::testing::ContainsRegex(
                       "not ready: the database schema is at version [0-9]+, this binary needs "
                       "[0-9]+: run `giftwall-server migrate`"));
  EXPECT_EQ(server.Health("readiness"), "NOT_SERVING");
  std::string output;
  EXPECT_EQ(
      RunCommand({GIFTWALL_SERVER_BIN, "migrate", absl::StrCat("--mysql_url=", db.url())}, &output),
      0)
      << output;
  EXPECT_TRUE(server.WaitReady()) << server.log();
}

// The admin service is not reachable by accident: without --enable_admin it does not exist.
TEST_F(ServerE2eTest, AdminServiceIsServedOnlyWhenEnabled) {
  testing::ReflectionClient reflection(server_->Channel());
  absl::StatusOr<std::vector<std::string>> services = reflection.ListServices();
  ASSERT_TRUE(services.ok());
  EXPECT_THAT(*services, ::testing::Not(::testing::Contains("giftwall.v1.ProjectionAdminService")));
  int code = 0;
  const std::string out = Client({"admin", "status", "--app_code=cli"}, &code);
  EXPECT_EQ(code, 1);
  EXPECT_THAT(out, HasSubstr("UNIMPLEMENTED"));
  EXPECT_THAT(out, HasSubstr("--enable_admin"));
}

// Reflection is open to every caller, like health; --enable_reflection=false hides the API's
// shape, while health still answers (the health port never serves reflection).
TEST_F(ServerE2eTest, ReflectionCanBeTurnedOff) {
  const int health_port = process::FreePort();
  ServerProcess server(db_->url(), {"--enable_reflection=false", "--catchup_interval=0",
                                    absl::StrCat("--health_listen=127.0.0.1:", health_port)});
  ASSERT_TRUE(server.WaitReady()) << server.log();
  for (const std::string& address : {server.address(), absl::StrCat("127.0.0.1:", health_port)}) {
    testing::ReflectionClient reflection(
        grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
    absl::StatusOr<std::vector<std::string>> services = reflection.ListServices();
    EXPECT_FALSE(services.ok()) << address;
  }
}

TEST_F(ServerE2eTest, AdminCommandsVerifyRebuildAndRequeue) {
  ServerProcess admin(db_->url(), {"--enable_admin", "--catchup_interval=0"});
  ASSERT_TRUE(admin.WaitReady()) << admin.log();
  auto client = [&](std::vector<std::string> args, int* code) {
    std::vector<std::string> argv = {GIFTWALL_CLIENT_BIN,
                                     absl::StrCat("--server=", admin.address()), "--app_code=ops"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::string output;
    *code = RunCommand(argv, &output);
    return output;
  };
  for (int i = 0; i < 12; ++i) {
    const std::string payload = absl::StrFormat(
        R"({"target_user_id":%d,"gift_id":"g%d","gift_count":2,"sender_user_id":%d})", 1 + i % 3,
        i % 2, 50 + i % 4);
    db_->InsertOutbox("ops", absl::StrCat("O", i), "WalletGiftDebited", payload,
                      1'700'000'000'000 + i);
    v1::ProjectMessageResponse response;
    ASSERT_TRUE(Project(Message("ops", absl::StrCat("O", i), payload, 1'700'000'000'000 + i),
                        &response, &admin)
                    .ok());
  }
  ASSERT_TRUE(Project(Message("ops", "BAD", R"({"target_user_id":1})"), nullptr, &admin).ok());
  int code = -1;
  EXPECT_THAT(client({"admin", "status", "--json"}, &code), HasSubstr(R"("doneCount": "12")"));
  EXPECT_EQ(code, 0);
  EXPECT_THAT(client({"admin", "event", "--event_id=O3"}, &code), HasSubstr("done"));
  EXPECT_EQ(code, 0);
  client({"admin", "event", "--event_id=never"}, &code);
  EXPECT_EQ(code, 1);
  EXPECT_THAT(client({"admin", "dead"}, &code), HasSubstr("missing gift_id"));
  EXPECT_EQ(code, 0);
  client({"admin", "verify"}, &code);
  EXPECT_EQ(code, 0) << "no drift";

  db_->Exec("UPDATE user_gift_wall SET gift_count = gift_count + 5 WHERE app_code = 'ops'");
  const std::string drift = client({"admin", "verify"}, &code);
  EXPECT_EQ(code, 4) << drift;
  EXPECT_THAT(drift, HasSubstr("gift_count"));
  const std::string rebuild = client({"admin", "rebuild", "--json"}, &code);
  EXPECT_EQ(code, 0) << rebuild;
  EXPECT_THAT(rebuild, HasSubstr(R"("phase":"done","done":"3","total":"3")"));
  client({"admin", "verify"}, &code);
  EXPECT_EQ(code, 0) << "no drift after the rebuild";

  // A requeue needs ids or an error filter; a dry run changes nothing.
  client({"admin", "requeue"}, &code);
  EXPECT_NE(code, 0);
  EXPECT_THAT(client({"admin", "requeue", "--event_ids=BAD", "--dry_run"}, &code),
              HasSubstr("outbox row is gone"));
  EXPECT_EQ(admin.Terminate(), 0);
}

// An app's zone and period kinds (DESIGN §2.15): set through the API and the CLI, refused naming
// what is wrong, audited, and a second zone change before the first took effect refused.
TEST_F(ServerE2eTest, AppSettingsAreSetShownAndRefusedNamingWhatIsWrong) {
  ServerProcess admin(db_->url(), {"--enable_admin", "--catchup_interval=0",
                                   "--period_retention=month=3,week=2,day=5"});
  ASSERT_TRUE(admin.WaitReady()) << admin.log();
  auto stub = v1::ProjectionAdminService::NewStub(admin.Channel());
  auto set = [&](const std::string& zone, std::vector<std::string> kinds,
                 v1::SetAppSettingsResponse* response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    v1::SetAppSettingsRequest request;
    request.set_app_code("tz");
    request.set_time_zone(zone);
    for (const std::string& kind : kinds) request.add_period_kinds(kind);
    return stub->SetAppSettings(&context, request, response);
  };
  auto get = [&](v1::GetAppSettingsResponse* response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    v1::GetAppSettingsRequest request;
    request.set_app_code("tz");
    return stub->GetAppSettings(&context, request, response);
  };
  v1::GetAppSettingsResponse got;
  ASSERT_TRUE(get(&got).ok());
  EXPECT_FALSE(got.configured());

  v1::SetAppSettingsResponse response;
  grpc::Status status = set("Mars/Olympus", {"month"}, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("Mars/Olympus"));
  status = set("Asia/Shanghai", {"month", "fortnight"}, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("fortnight"));
  EXPECT_THAT(admin.log(), HasSubstr("method=SetAppSettings app_code=tz result=INVALID_ARGUMENT"));

  status = set("Asia/Shanghai", {"week", "month"}, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_TRUE(response.changed());
  EXPECT_TRUE(response.rebuild_needed());
  EXPECT_EQ(response.settings().time_zone(), "Asia/Shanghai");
  EXPECT_THAT(response.settings().period_kinds(), ::testing::ElementsAre("week", "month"));
  EXPECT_EQ(response.settings().changed_by(), "(anyone: no access policy)");
  EXPECT_EQ(response.settings().retention().at("month"), 3);
  EXPECT_EQ(response.settings().retention().at("week"), 2);
  // The same again changes nothing.
  ASSERT_TRUE(set("Asia/Shanghai", {"month", "week"}, &response).ok());
  EXPECT_FALSE(response.changed());
  EXPECT_FALSE(response.rebuild_needed());

  // A zone change takes effect at the end of each kind's current period; a second one before
  // then is refused.
  ASSERT_TRUE(set("Europe/London", {"week", "month"}, &response).ok());
  EXPECT_TRUE(response.changed());
  ASSERT_EQ(response.settings().time_zones_size(), 2);
  const v1::AppTimeZone& london = response.settings().time_zones(1);
  EXPECT_EQ(london.time_zone(), "Europe/London");
  EXPECT_GT(london.since_ms(), 0);
  EXPECT_GT(london.takes_effect_at_ms().at("week"), london.since_ms());
  EXPECT_GT(london.takes_effect_at_ms().at("month"), london.since_ms());
  status = set("America/New_York", {"week", "month"}, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(status.error_message(), HasSubstr("Europe/London"));

  ASSERT_TRUE(get(&got).ok());
  EXPECT_TRUE(got.configured());
  EXPECT_EQ(got.settings().time_zone(), "Europe/London");

  // The CLI shows them, and sets them.
  auto client = [&](std::vector<std::string> args, int* code) {
    std::vector<std::string> argv = {GIFTWALL_CLIENT_BIN,
                                     absl::StrCat("--server=", admin.address()), "--app_code=tz",
                                     "admin", "settings"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::string output;
    *code = RunCommand(argv, &output);
    return output;
  };
  int code = -1;
  std::string shown = client({}, &code);
  EXPECT_EQ(code, 0) << shown;
  EXPECT_THAT(shown, HasSubstr("Europe/London"));
  EXPECT_THAT(shown, HasSubstr("week,month"));
  EXPECT_THAT(shown, HasSubstr("month=3"));
  shown = client({"--time_zone=Europe/London", "--period_kinds=day,week,month"}, &code);
  EXPECT_EQ(code, 0) << shown;
  EXPECT_THAT(shown, HasSubstr("changed"));
  EXPECT_THAT(shown, HasSubstr("giftwall admin rebuild --app_code=tz"));
  shown = client({"--period_kinds=day"}, &code);
  EXPECT_NE(code, 0);
  EXPECT_THAT(shown, HasSubstr("--time_zone"));
  EXPECT_THAT(admin.log(), HasSubstr("settings: app tz keeps day,week,month in Europe/London"));
  EXPECT_EQ(admin.Terminate(), 0);
}

// GetGiftWall and ListGiftWallSenders of a period (DESIGN §2.15): the current one by the
// database's clock, a past one by key, each with its own 冠名; the answer names the period, a
// page token stays in it, and a kind the app does not keep is refused.
TEST_F(ServerE2eTest, Rule15_PeriodWallsAreReadByKindOrKeyWithTheirOwnTopSender) {
  ServerProcess server(db_->url(), {"--enable_admin", "--catchup_interval=0"});
  ASSERT_TRUE(server.WaitReady()) << server.log();
  int code = -1;
  std::string out;
  ASSERT_EQ(
      RunCommand({GIFTWALL_CLIENT_BIN, absl::StrCat("--server=", server.address()), "--app_code=pw",
                  "admin", "settings", "--time_zone=Asia/Shanghai", "--period_kinds=week,month"},
                 &out),
      0)
      << out;
  auto stub = v1::GiftWallService::NewStub(server.Channel());
  auto wall = [&](const std::string& period, const std::string& token, int page_size,
                  v1::GetGiftWallResponse* response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1::GetGiftWallRequest request;
    request.set_app_code("pw");
    request.set_user_id(1);
    request.set_period(period);
    request.set_page_token(token);
    request.set_page_size(page_size);
    response->Clear();
    return stub->GetGiftWall(&context, request, response);
  };
  auto senders = [&](const std::string& period, v1::ListGiftWallSendersResponse* response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1::ListGiftWallSendersRequest request;
    request.set_app_code("pw");
    request.set_user_id(1);
    request.set_gift_id("rose");
    request.set_period(period);
    response->Clear();
    return stub->ListGiftWallSenders(&context, request, response);
  };
  // The current month, as the server resolves it; the events are placed from its start.
  v1::GetGiftWallResponse page;
  ASSERT_TRUE(wall("month", "", 0, &page).ok());
  ASSERT_TRUE(page.has_period());
  EXPECT_EQ(page.period().kind(), "month");
  const v1::GiftWallPeriod this_month = page.period();
  EXPECT_TRUE(page.items().empty());
  const int64_t now_ms = absl::ToUnixMillis(absl::Now());
  EXPECT_LE(this_month.start_ms(), now_ms + 60'000);
  EXPECT_GT(this_month.end_ms(), now_ms - 60'000);
  const int64_t in_this_month = this_month.start_ms() + 1;
  const int64_t last_month = this_month.start_ms() - 86'400'000;  // a late event
  auto gift = [&](const std::string& id, const std::string& gift_id, int count, int sender,
                  int64_t at) {
    ASSERT_TRUE(Project(Message("pw", id,
                                absl::StrFormat(R"({"target_user_id":1,"gift_id":"%s",)"
                                                R"("gift_count":%d,"sender_user_id":%d})",
                                                gift_id, count, sender),
                                at),
                        nullptr, &server)
                    .ok());
  };
  gift("P1", "rose", 1, 10, in_this_month);
  gift("P2", "rose", 5, 20, last_month);
  gift("P3", "rose", 2, 30, in_this_month);
  gift("P4", "lily", 1, 10, in_this_month);
  gift("P5", "star", 1, 10, in_this_month);

  // All-time: rose 8, its 冠名 sender 20.
  ASSERT_TRUE(wall("", "", 0, &page).ok());
  EXPECT_FALSE(page.has_period());
  ASSERT_EQ(page.items_size(), 3);
  EXPECT_EQ(page.items(0).gift_id(), "rose");
  EXPECT_EQ(page.items(0).gift_count(), 8);
  EXPECT_EQ(page.items(0).top_sender().user_id(), 20);
  // This month: rose 3, its 冠名 sender 30.
  ASSERT_TRUE(wall("month", "", 0, &page).ok());
  EXPECT_EQ(page.period().key(), this_month.key());
  ASSERT_EQ(page.items_size(), 3);
  EXPECT_EQ(page.items(0).gift_count(), 3);
  EXPECT_EQ(page.items(0).top_sender().user_id(), 30);
  EXPECT_EQ(page.summary().total_gift_count(), 5);
  // Last month, by key: the late event alone.
  const std::string last_key = absl::FormatTime(
      "%Y-%m", absl::FromUnixMillis(last_month), *[] {
        static absl::TimeZone zone;
        absl::LoadTimeZone("Asia/Shanghai", &zone);
        return &zone;
      }());
  ASSERT_TRUE(wall("month:" + last_key, "", 0, &page).ok());
  EXPECT_EQ(page.period().key(), last_key);
  EXPECT_EQ(page.period().end_ms(), this_month.start_ms());
  ASSERT_EQ(page.items_size(), 1);
  EXPECT_EQ(page.items(0).gift_count(), 5);
  EXPECT_EQ(page.items(0).top_sender().user_id(), 20);

  // A page token stays in the period it was read from, and is refused for another.
  ASSERT_TRUE(wall("month", "", 1, &page).ok());
  ASSERT_FALSE(page.next_page_token().empty());
  const std::string token = page.next_page_token();
  ASSERT_TRUE(wall("month:" + this_month.key(), token, 1, &page).ok());
  EXPECT_EQ(page.items_size(), 1);
  grpc::Status status = wall("", token, 1, &page);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("page_token was issued for period"));
  status = wall("week", token, 1, &page);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  // Senders of a period.
  v1::ListGiftWallSendersResponse listed;
  ASSERT_TRUE(senders("month", &listed).ok());
  EXPECT_EQ(listed.period().key(), this_month.key());
  ASSERT_EQ(listed.senders_size(), 2);
  EXPECT_EQ(listed.senders(0).user_id(), 30);
  ASSERT_TRUE(senders("", &listed).ok());
  EXPECT_FALSE(listed.has_period());
  EXPECT_EQ(listed.senders_size(), 3);

  // What the app does not keep, and what names no period.
  status = wall("day", "", 0, &page);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("app pw keeps no day walls"));
  status = wall("month:2026-13", "", 0, &page);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("names no month"));
  status = senders("fortnight", &listed);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("unknown kind \"fortnight\""));

  // The CLI shows the period it read.
  out.clear();
  code = RunCommand({GIFTWALL_CLIENT_BIN, absl::StrCat("--server=", server.address()),
                     "--app_code=pw", "--user_id=1", "wall", "--period=month"},
                    &out);
  EXPECT_EQ(code, 0) << out;
  EXPECT_THAT(out, HasSubstr(absl::StrCat("month ", this_month.key())));
  EXPECT_EQ(server.Terminate(), 0);
}

// A server whose app keeps weeks in Asia/Shanghai, and what the tests of 冠名 over periods
// project into user 1's wall. Each test names its own app: the suite shares one database.
class SponsorE2eTest : public ServerE2eTest {
 protected:
  void Start(const std::string& app) {
    app_ = app;
    sponsor_server_ = std::make_unique<ServerProcess>(
        db_->url(), std::vector<std::string>{"--catchup_interval=0", "--enable_admin"});
    ASSERT_TRUE(sponsor_server_->WaitReady()) << sponsor_server_->log();
    std::string out;
    ASSERT_EQ(RunCommand({GIFTWALL_CLIENT_BIN, absl::StrCat("--server=", address()),
                          absl::StrCat("--app_code=", app_), "admin", "settings",
                          "--time_zone=Asia/Shanghai", "--period_kinds=week"},
                         &out),
              0)
        << out;
    stub_ = v1::GiftWallService::NewStub(sponsor_server_->Channel());
    v1::GetGiftWallRequest request;
    request.set_app_code(app_);
    request.set_user_id(1);
    request.set_period("week");
    v1::GetGiftWallResponse response;
    grpc::ClientContext context;
    ASSERT_TRUE(stub_->GetGiftWall(&context, request, &response).ok());
    this_week_ = response.period();
  }
  void TearDown() override {
    if (sponsor_server_ != nullptr) {
      EXPECT_EQ(sponsor_server_->Terminate(), 0);
    }
  }
  std::string address() const { return sponsor_server_->address(); }

  // `count` of `gift_id` from `sender` (0: none) to user 1, at `at_ms`; sent as 神秘人 if
  // `anonymous`.
  void Gift(const std::string& id, const std::string& gift_id, int count, int sender, int64_t at_ms,
            bool anonymous = false) {
    std::string payload =
        absl::StrFormat(R"({"target_user_id":1,"gift_id":"%s","gift_count":%d)", gift_id, count);
    if (sender != 0) absl::StrAppend(&payload, ",\"sender_user_id\":", sender);
    if (anonymous) absl::StrAppend(&payload, ",\"anonymous\":true");
    ASSERT_TRUE(
        Project(Message(app_, id, payload + "}", at_ms), nullptr, sponsor_server_.get()).ok())
        << id;
  }

  std::string app_;
  std::unique_ptr<ServerProcess> sponsor_server_;
  std::unique_ptr<v1::GiftWallService::Stub> stub_;
  v1::GiftWallPeriod this_week_;
};

// ListSponsorHistory after two periods: the 冠名 of each past week, newest first, each with the
// weeks it won the gift; the current week is not history; pages follow one another, bound to
// their request; gifts without a sender have no 冠名.
TEST_F(SponsorE2eTest, Rule15_TheSponsorHistoryAfterTwoPeriods) {
  Start("sh");
  const int64_t day_ms = 86'400'000;
  const int64_t last_week = this_week_.start_ms() - day_ms;
  const int64_t week_before = this_week_.start_ms() - 8 * day_ms;
  Gift("H1", "rose", 3, 10, week_before);
  Gift("H2", "rose", 1, 20, week_before + 1);
  Gift("H3", "lily", 2, 20, week_before + 2);
  Gift("H4", "star", 4, 0, week_before + 3);
  // Last week, 10 and 30 tie at 2: 10 reached it first.
  Gift("H5", "rose", 2, 10, last_week);
  Gift("H6", "rose", 2, 30, last_week + 1);
  Gift("H7", "rose", 5, 40, this_week_.start_ms() + 1);

  auto history = [&](const std::string& kind, const std::string& gift, int page_size,
                     const std::string& token, v1::ListSponsorHistoryResponse* response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1::ListSponsorHistoryRequest request;
    request.set_app_code(app_);
    request.set_user_id(1);
    request.set_period_kind(kind);
    request.set_gift_id(gift);
    request.set_page_size(page_size);
    request.set_page_token(token);
    response->Clear();
    return stub_->ListSponsorHistory(&context, request, response);
  };
  auto line = [](const v1::SponsorHistoryEntry& e) {
    return absl::StrCat(e.period().key(), " ", e.gift_id(), " ", e.sponsor().user_id(), "x",
                        e.sponsor().sent_count(), " won ", e.periods_won());
  };
  v1::ListSponsorHistoryResponse page;
  ASSERT_TRUE(history("week", "", 0, "", &page).ok());
  std::vector<std::string> all;
  for (const v1::SponsorHistoryEntry& e : page.entries()) all.push_back(line(e));
  ASSERT_EQ(all.size(), 3u) << absl::StrJoin(all, "\n");
  const v1::SponsorHistoryEntry& newest = page.entries(0);
  EXPECT_EQ(newest.period().kind(), "week");
  EXPECT_EQ(newest.period().end_ms(), this_week_.start_ms());
  const std::string last_key = newest.period().key();
  const std::string before_key = page.entries(1).period().key();
  EXPECT_LT(before_key, last_key);
  EXPECT_THAT(all, ::testing::ElementsAre(absl::StrCat(last_key, " rose 10x2 won 2"),
                                          absl::StrCat(before_key, " lily 20x2 won 1"),
                                          absl::StrCat(before_key, " rose 10x3 won 2")));
  EXPECT_TRUE(page.next_page_token().empty());

  // One gift, a page at a time.
  std::vector<std::string> paged;
  std::string token;
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(history("week", " rose ", 1, token, &page).ok());
    for (const v1::SponsorHistoryEntry& e : page.entries()) paged.push_back(line(e));
    token = page.next_page_token();
    if (token.empty()) break;
  }
  EXPECT_THAT(paged, ::testing::ElementsAre(all[0], all[2]));
  ASSERT_TRUE(history("week", "rose", 1, "", &page).ok());
  grpc::Status status = history("week", "lily", 1, page.next_page_token(), &page);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("another wall's history"));

  // A kind the app does not keep, and one that is no kind.
  status = history("month", "", 0, "", &page);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr(" keeps no month walls"));
  status = history("year", "", 0, "", &page);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("period_kind \"year\" is not one of"));

  // The CLI's table.
  std::string out;
  EXPECT_EQ(RunCommand({GIFTWALL_CLIENT_BIN, absl::StrCat("--server=", address()),
                        "--app_code=" + app_, "--user_id=1", "sponsors", "--period_kind=week"},
                       &out),
            0)
      << out;
  EXPECT_THAT(out, HasSubstr("PERIODS WON"));
  EXPECT_THAT(out, HasSubstr(absl::StrCat("week:", last_key)));
}

// GetSenderStanding: what the sender and the 冠名 sent, how many more the sender needs under the
// tie rule (level is not enough: the 冠名 reached the count first), and the rank; of a period
// and all-time, which differ.
TEST_F(SponsorE2eTest, Rule15_StandingAndTheCountNeededFollowTheTieRule) {
  Start("st");
  const int64_t start = this_week_.start_ms();
  Gift("S1", "rose", 5, 40, start + 1);
  Gift("S2", "rose", 3, 50, start + 2);
  Gift("S3", "rose", 5, 60, start + 3);
  Gift("S4", "rose", 6, 10, start - 86'400'000);  // last week: 冠名 all-time, not this week
  auto standing = [&](int64_t sender, const std::string& period,
                      v1::GetSenderStandingResponse* response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1::GetSenderStandingRequest request;
    request.set_app_code(app_);
    request.set_user_id(1);
    request.set_gift_id("rose");
    request.set_sender_user_id(sender);
    request.set_period(period);
    response->Clear();
    return stub_->GetSenderStanding(&context, request, response);
  };
  struct Want {
    int64_t sender;
    int64_t sent;
    int64_t needed;
    int64_t rank;
  };
  // This week: 40 and 60 sent 5 each, 40 first: 40 is 冠名; 60 needs 1 more, 50 needs 3.
  for (const Want& want : {Want{40, 5, 0, 1}, Want{60, 5, 1, 2}, Want{50, 3, 3, 3},
                           Want{70, 0, 6, 0}, Want{10, 0, 6, 0}}) {
    v1::GetSenderStandingResponse response;
    ASSERT_TRUE(standing(want.sender, "week", &response).ok());
    EXPECT_EQ(response.period().key(), this_week_.key());
    EXPECT_EQ(response.sender().user_id(), want.sender);
    EXPECT_EQ(response.sender().sent_count(), want.sent) << want.sender;
    EXPECT_EQ(response.sponsor().user_id(), 40);
    EXPECT_EQ(response.sponsor().sent_count(), 5);
    EXPECT_EQ(response.needed_to_sponsor(), want.needed) << want.sender;
    EXPECT_EQ(response.rank(), want.rank) << want.sender;
    EXPECT_FALSE(response.rank_beyond_limit());
  }
  // All-time: 10 sent 6 and is 冠名; 40 needs 2.
  v1::GetSenderStandingResponse response;
  ASSERT_TRUE(standing(40, "", &response).ok());
  EXPECT_FALSE(response.has_period());
  EXPECT_EQ(response.sponsor().user_id(), 10);
  EXPECT_EQ(response.needed_to_sponsor(), 2);
  EXPECT_EQ(response.rank(), 2);

  grpc::Status status = standing(0, "", &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("sender_user_id must be > 0"));
  status = standing(40, "month", &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr(" keeps no month walls"));

  std::string out;
  EXPECT_EQ(RunCommand({GIFTWALL_CLIENT_BIN, absl::StrCat("--server=", address()),
                        "--app_code=" + app_, "--user_id=1", "standing", "--gift_id=rose",
                        "--sender_user_id=60", "--period=week"},
                       &out),
            0)
      << out;
  EXPECT_THAT(out, HasSubstr("needed to take 冠名: 1"));
  EXPECT_THAT(out, HasSubstr("rank: 2"));
}

// Who sees whom (DESIGN §2.18). Sender 10 sent rose anonymously last week and lily openly; 20
// and 30 sent rose openly. Each read masks, for a viewer who is neither the wall's owner (1) nor
// that sender, a sender who sent that gift anonymously (ever, whatever the period read) or who
// opted out; the anonymous 冠名 stays 冠名; counts stay; page tokens do not depend on who looks.
TEST_F(SponsorE2eTest, Rule18_EachReadMasksTheSendersWhoHidFromAStrangerOnly) {
  Start("viewer");
  const int64_t start = this_week_.start_ms();
  const int64_t last_week = start - 86'400'000;
  Gift("V1", "rose", 3, 10, last_week, /*anonymous=*/true);
  Gift("V2", "rose", 2, 20, last_week + 1);
  Gift("V3", "rose", 1, 30, last_week + 2);
  Gift("V4", "rose", 2, 20, start + 1);
  Gift("V5", "lily", 1, 10, start + 2);
  Gift("V6", "rose", 1, 10, start + 3);  // openly, this week: still masked (the safe side)

  // "user" or "anonymous", with the count.
  const auto shown = [](const v1::GiftWallSender& s) {
    EXPECT_EQ(s.anonymous(), s.user_id() == 0);
    return absl::StrCat(s.anonymous() ? "anonymous" : absl::StrCat(s.user_id()), "x",
                        s.sent_count());
  };
  const auto wall = [&](int64_t viewer, const std::string& period) {
    grpc::ClientContext context;
    v1::GetGiftWallRequest request;
    request.set_app_code(app_);
    request.set_user_id(1);
    request.set_period(period);
    request.set_viewer_user_id(viewer);
    v1::GetGiftWallResponse response;
    const grpc::Status status = stub_->GetGiftWall(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    std::vector<std::string> items;
    for (const v1::GiftWallItem& item : response.items()) {
      EXPECT_EQ(item.first_sender_anonymous(), item.first_sender_user_id() == 0);
      items.push_back(absl::StrCat(
          item.gift_id(), " top ", shown(item.top_sender()), " first ",
          item.first_sender_anonymous() ? "anonymous" : absl::StrCat(item.first_sender_user_id())));
    }
    return items;
  };
  using ::testing::ElementsAre;
  // All-time rose: 20 and 10 sent 4 each, 20 reached 4 first: 20 is 冠名; 10 sent first.
  EXPECT_THAT(wall(0, ""), ElementsAre("rose top 20x4 first anonymous", "lily top 10x1 first 10"));
  EXPECT_THAT(wall(77, ""), ElementsAre("rose top 20x4 first anonymous", "lily top 10x1 first 10"));
  for (int64_t sees_all : {1, 10}) {
    EXPECT_THAT(wall(sees_all, ""), ElementsAre("rose top 20x4 first 10", "lily top 10x1 first 10"))
        << sees_all;
  }
  EXPECT_THAT(wall(0, "week:" + this_week_.key()),
              ElementsAre("rose top 20x2 first 20", "lily top 10x1 first 10"));

  const auto senders = [&](int64_t viewer, const std::string& period,
                           std::vector<std::string>* tokens) {
    std::vector<std::string> all;
    std::string token;
    for (int pages = 0; pages < 10; ++pages) {
      grpc::ClientContext context;
      v1::ListGiftWallSendersRequest request;
      request.set_app_code(app_);
      request.set_user_id(1);
      request.set_gift_id("rose");
      request.set_period(period);
      request.set_viewer_user_id(viewer);
      request.set_page_size(1);
      request.set_page_token(token);
      v1::ListGiftWallSendersResponse response;
      const grpc::Status status = stub_->ListGiftWallSenders(&context, request, &response);
      EXPECT_TRUE(status.ok()) << status.error_message();
      for (const v1::GiftWallSender& s : response.senders()) all.push_back(shown(s));
      token = response.next_page_token();
      if (token.empty()) break;
      if (tokens != nullptr) tokens->push_back(token);
    }
    return all;
  };
  std::vector<std::string> stranger_tokens, owner_tokens;
  EXPECT_THAT(senders(30, "", &stranger_tokens), ElementsAre("20x4", "anonymousx4", "30x1"));
  EXPECT_THAT(senders(1, "", &owner_tokens), ElementsAre("20x4", "10x4", "30x1"));
  // The tokens name no sender: the stranger's are the owner's, byte for byte.
  EXPECT_EQ(stranger_tokens, owner_tokens);
  // This week 10 sent rose openly, yet is masked: 10 sent it anonymously before.
  EXPECT_THAT(senders(0, "week:" + this_week_.key(), nullptr), ElementsAre("20x2", "anonymousx1"));

  // The 冠名 history: last week's rose 冠名 is 10, anonymous to a stranger, not skipped.
  const auto history = [&](int64_t viewer) {
    grpc::ClientContext context;
    v1::ListSponsorHistoryRequest request;
    request.set_app_code(app_);
    request.set_user_id(1);
    request.set_period_kind("week");
    request.set_viewer_user_id(viewer);
    v1::ListSponsorHistoryResponse response;
    EXPECT_TRUE(stub_->ListSponsorHistory(&context, request, &response).ok());
    std::vector<std::string> entries;
    for (const v1::SponsorHistoryEntry& e : response.entries()) {
      entries.push_back(absl::StrCat(e.gift_id(), " ", shown(e.sponsor())));
    }
    return entries;
  };
  EXPECT_THAT(history(0), ElementsAre("rose anonymousx3"));
  EXPECT_THAT(history(10), ElementsAre("rose 10x3"));

  const auto standing = [&](int64_t sender, int64_t viewer) {
    grpc::ClientContext context;
    v1::GetSenderStandingRequest request;
    request.set_app_code(app_);
    request.set_user_id(1);
    request.set_gift_id("rose");
    request.set_sender_user_id(sender);
    request.set_viewer_user_id(viewer);
    v1::GetSenderStandingResponse response;
    EXPECT_TRUE(stub_->GetSenderStanding(&context, request, &response).ok());
    return absl::StrCat(shown(response.sender()), " behind ", shown(response.sponsor()), " needs ",
                        response.needed_to_sponsor(), " rank ", response.rank());
  };
  // Asked about by name, 10 stands to a stranger as one who sent none: nothing links them to the
  // anonymous rows.
  EXPECT_EQ(standing(10, 0), "10x0 behind 20x4 needs 5 rank 0");
  EXPECT_EQ(standing(10, 10), "10x4 behind 20x4 needs 1 rank 2");
  EXPECT_EQ(standing(10, 1), "10x4 behind 20x4 needs 1 rank 2");

  // 20 opts out: retroactive, on every read, for everyone but the owner and 20; and back in.
  const auto set_hidden = [&](int64_t sender, bool hidden) {
    grpc::ClientContext context;
    v1::SetSenderPrivacyRequest request;
    request.set_app_code(app_);
    request.set_sender_user_id(sender);
    request.set_hidden(hidden);
    v1::SetSenderPrivacyResponse response;
    const grpc::Status status = stub_->SetSenderPrivacy(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response.changed();
  };
  EXPECT_TRUE(set_hidden(20, true));
  EXPECT_FALSE(set_hidden(20, true));
  EXPECT_THAT(wall(0, ""),
              ElementsAre("rose top anonymousx4 first anonymous", "lily top 10x1 first 10"));
  EXPECT_THAT(wall(20, ""), ElementsAre("rose top 20x4 first anonymous", "lily top 10x1 first 10"));
  EXPECT_THAT(senders(30, "", nullptr), ElementsAre("anonymousx4", "anonymousx4", "30x1"));
  EXPECT_EQ(standing(30, 0), "30x1 behind anonymousx4 needs 4 rank 3");
  EXPECT_EQ(standing(20, 0), "20x0 behind anonymousx4 needs 5 rank 0");
  EXPECT_TRUE(set_hidden(20, false));
  EXPECT_EQ(standing(30, 0), "30x1 behind 20x4 needs 4 rank 3");

  // Bad input: a negative viewer, a sender who is nobody.
  grpc::ClientContext context;
  v1::GetGiftWallRequest bad;
  bad.set_app_code(app_);
  bad.set_user_id(1);
  bad.set_viewer_user_id(-1);
  v1::GetGiftWallResponse response;
  const grpc::Status status = stub_->GetGiftWall(&context, bad, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(), "viewer_user_id must be >= 0, got -1");
  grpc::ClientContext privacy_context;
  v1::SetSenderPrivacyRequest nobody;
  nobody.set_app_code(app_);
  v1::SetSenderPrivacyResponse privacy_response;
  const grpc::Status refused = stub_->SetSenderPrivacy(&privacy_context, nobody, &privacy_response);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(refused.error_message(), "sender_user_id must be > 0, got 0");

  // The CLI shows a masked sender as anonymous, and sets privacy.
  std::string out;
  EXPECT_EQ(RunCommand({GIFTWALL_CLIENT_BIN, absl::StrCat("--server=", address()),
                        "--app_code=" + app_, "--user_id=1", "wall", "--viewer_user_id=77"},
                       &out),
            0)
      << out;
  EXPECT_THAT(out, ::testing::ContainsRegex("rose .* 20 \\(4\\) +anonymous"));
  EXPECT_EQ(RunCommand({GIFTWALL_CLIENT_BIN, absl::StrCat("--server=", address()),
                        "--app_code=" + app_, "privacy", "--sender_user_id=30"},
                       &out),
            0)
      << out;
  EXPECT_EQ(out, "sender 30 is hidden from strangers on viewer\n");
}

// The gift catalogue (DESIGN §2.16): the gift-config service writes it through PutGiftCatalog,
// readers list it in catalogue order, the CLI imports and shows it, every write is audited, and
// a bad item is refused naming the item and field, with nothing written.
// The sent wall (DESIGN §2.19): exact after the relay, the scan, a requeue and a rebuild, and
// after drift is repaired; a stranger sees only what was sent in the open; the sender's opt-out
// hides it all from strangers; an app that keeps none refuses to be read so.
TEST_F(ServerE2eTest, Rule19_TheSentWallIsExactOnEveryPathAndAStrangerSeesTheOpenPartOnly) {
  ServerProcess server(db_->url(), {"--enable_admin", "--catchup_interval=0"});
  ASSERT_TRUE(server.WaitReady()) << server.log();
  const std::string app = "sentwall";
  auto client = [&](std::vector<std::string> args, int* code) {
    std::vector<std::string> argv = {GIFTWALL_CLIENT_BIN,
                                     absl::StrCat("--server=", server.address()),
                                     absl::StrCat("--app_code=", app)};
    argv.insert(argv.end(), args.begin(), args.end());
    std::string output;
    *code = RunCommand(argv, &output);
    return output;
  };
  // Now, so that the events fall in the current month, which the app keeps a wall of.
  const int64_t kT0 = absl::ToUnixMillis(absl::Now()) - 60'000;
  const std::string month = absl::StrCat(
      "month:", absl::FormatTime("%Y-%m", absl::FromUnixMillis(kT0), absl::UTCTimeZone()));
  int64_t at = kT0;
  // Sender 9 to `receiver`, through the outbox (so that verify can fold it) and, if `relay`,
  // the relay.
  auto send = [&](const std::string& id, int64_t receiver, const std::string& gift, int count,
                  bool anonymous, bool relay) {
    std::string payload = absl::StrFormat(
        R"({"target_user_id":%d,"gift_id":"%s","gift_count":%d,"coin_amount":%d,"sender_user_id":9%s})",
        receiver, gift, count, count * 10, anonymous ? R"(,"anonymous":true)" : "");
    db_->InsertOutbox(app, id, "WalletGiftDebited", payload, ++at);
    if (relay) {
      ASSERT_TRUE(Project(Message(app, id, payload, at), nullptr, &server).ok()) << id;
    }
  };
  auto stub = v1::GiftWallService::NewStub(server.Channel());
  // "gift count coins receivers first last [anonymous]" per gift, as `viewer` sees 9's.
  auto sent = [&](int64_t viewer, grpc::Status* status = nullptr, const std::string& period = "") {
    std::vector<std::string> lines;
    v1::GetSentGiftsRequest request;
    request.set_app_code(app);
    request.set_sender_user_id(9);
    request.set_viewer_user_id(viewer);
    request.set_page_size(1);
    request.set_period(period);
    do {
      grpc::ClientContext context;
      v1::GetSentGiftsResponse page;
      const grpc::Status s = stub->GetSentGifts(&context, request, &page);
      if (status != nullptr) *status = s;
      if (!s.ok()) return lines;
      EXPECT_LE(page.gifts_size(), 1);
      EXPECT_EQ(page.has_period(), !period.empty());
      for (const v1::SentGift& g : page.gifts()) {
        lines.push_back(absl::StrCat(g.gift_id(), " ", g.sent_count(), " ", g.sent_coins(), " ",
                                     g.receiver_count(), " ", g.first_sent_at_ms() - kT0, " ",
                                     g.last_sent_at_ms() - kT0, g.anonymous() ? " anonymous" : ""));
      }
      request.set_page_token(page.next_page_token());
    } while (!request.page_token().empty());
    return lines;
  };
  auto receivers = [&](const std::string& gift, int64_t viewer, const std::string& period = "") {
    std::vector<std::string> lines;
    v1::ListSentGiftReceiversRequest request;
    request.set_app_code(app);
    request.set_sender_user_id(9);
    request.set_gift_id(gift);
    request.set_viewer_user_id(viewer);
    request.set_page_size(1);
    request.set_period(period);
    do {
      grpc::ClientContext context;
      v1::ListSentGiftReceiversResponse page;
      const grpc::Status s = stub->ListSentGiftReceivers(&context, request, &page);
      EXPECT_TRUE(s.ok()) << s.error_message();
      if (!s.ok()) return lines;
      for (const v1::SentGiftReceiver& r : page.receivers()) {
        lines.push_back(absl::StrCat(r.user_id(), " ", r.sent_count(), r.anonymous() ? " a" : ""));
      }
      request.set_page_token(page.next_page_token());
    } while (!request.page_token().empty());
    return lines;
  };
  using ::testing::ElementsAre;
  int code = -1;

  // Before the app keeps a sent wall: refused, naming the setting; its events still fold.
  send("S1", 1, "rose", 2, false, true);
  grpc::Status status;
  sent(9, &status);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(status.error_message(), HasSubstr("keep_sent_wall"));
  EXPECT_THAT(client({"admin", "settings", "--time_zone=UTC", "--period_kinds=day,month",
                      "--keep_sent_wall=true"},
                     &code),
              HasSubstr("RebuildGiftWall"));
  EXPECT_EQ(code, 0);
  EXPECT_THAT(client({"admin", "settings"}, &code), HasSubstr("kept\n"));
  // Readers see a change of settings within a second (the settings they cache).
  for (int i = 0; i < 100 && (sent(9, &status), !status.ok()); ++i)
    absl::SleepFor(absl::Milliseconds(50));
  EXPECT_TRUE(status.ok()) << status.error_message();
  // The relay, a bad payload that goes dead, and events the relay never delivered.
  send("S2", 2, "rose", 1, false, true);
  send("S3", 1, "rose", 3, false, true);
  send("S4", 3, "car", 1, true, true);
  send("S5", 2, "car", 1, false, false);
  send("S6", 4, "rose", 4, false, false);
  db_->InsertOutbox(app, "S7", "WalletGiftDebited", R"({"target_user_id":5,"gift_id":"rose"})",
                    ++at);
  client({"admin", "catch-up", "--until_done"}, &code);
  EXPECT_EQ(code, 0);
  // The wallet corrects S7's row; the operator requeues it.
  db_->Exec(absl::StrCat(
      "UPDATE wallet_outbox SET payload = "
      R"('{"target_user_id":5,"gift_id":"rose","gift_count":1,"coin_amount":10,"sender_user_id":9}')"
      " WHERE app_code = '",
      app, "' AND event_id = 'S7'"));
  EXPECT_THAT(client({"admin", "requeue", "--event_ids=S7"}, &code), HasSubstr("1"));
  EXPECT_EQ(code, 0);
  // What was folded before the sent wall was kept (S1) is missing until the rebuild: drift.
  EXPECT_THAT(client({"admin", "verify"}, &code), HasSubstr("sent"));
  EXPECT_EQ(code, 4);
  const std::string rebuild = client({"admin", "rebuild", "--json"}, &code);
  EXPECT_EQ(code, 0) << rebuild;
  client({"admin", "verify"}, &code);
  EXPECT_EQ(code, 0) << "no drift after the rebuild";

  // The sender sees every gift: rose 2+1+3+4+1 to receivers 1, 2, 4, 5; car to 3 (anonymously)
  // and 2; the same in the month all of it fell in.
  const std::vector<std::string> whole = {"car 2 20 2 4 5 anonymous", "rose 11 110 4 1 7"};
  EXPECT_EQ(sent(9), whole);
  EXPECT_EQ(sent(9, nullptr, month), whole);
  EXPECT_EQ(sent(9, nullptr, "month"), whole);
  EXPECT_THAT(receivers("car", 9), ElementsAre("2 1", "3 1 a"));
  EXPECT_THAT(receivers("car", 9, month), ElementsAre("2 1", "3 1 a"));
  EXPECT_THAT(receivers("rose", 9), ElementsAre("1 5", "2 1", "4 4", "5 1"));
  // A stranger, and nobody in particular, see the open part: what the walls show of 9 anyway.
  // Receiver 3's wall masks 9 for car, so car is what went to 2 alone, and 3 is no receiver.
  for (int64_t stranger : {0, 1, 3}) {
    for (const std::string& period : {std::string(), month}) {
      EXPECT_THAT(sent(stranger, nullptr, period),
                  ElementsAre("car 1 10 1 5 5", "rose 11 110 4 1 7"))
          << stranger << " " << period;
      EXPECT_THAT(receivers("car", stranger, period), ElementsAre("2 1")) << stranger;
      EXPECT_THAT(receivers("rose", stranger, period), ElementsAre("1 5", "2 1", "4 4", "5 1"));
    }
  }
  // An anonymous send to a wall that showed 9 for rose masks 9 there from then on: that wall
  // leaves rose's open part.
  send("S8", 4, "rose", 1, true, true);
  EXPECT_THAT(sent(5), ElementsAre("car 1 10 1 5 5", "rose 7 70 3 1 7"));
  EXPECT_THAT(receivers("rose", 5), ElementsAre("1 5", "2 1", "5 1"));
  EXPECT_THAT(sent(9), ElementsAre("car 2 20 2 4 5 anonymous", "rose 12 120 4 1 8 anonymous"));
  // The sender opts out: strangers see nothing, the sender everything.
  auto privacy = [&](bool hidden) {
    grpc::ClientContext context;
    v1::SetSenderPrivacyRequest request;
    request.set_app_code(app);
    request.set_sender_user_id(9);
    request.set_hidden(hidden);
    v1::SetSenderPrivacyResponse response;
    ASSERT_TRUE(stub->SetSenderPrivacy(&context, request, &response).ok());
  };
  privacy(true);
  EXPECT_TRUE(sent(5).empty());
  EXPECT_TRUE(receivers("rose", 5).empty());
  EXPECT_EQ(sent(9).size(), 2u);
  privacy(false);
  EXPECT_EQ(sent(5).size(), 2u);

  // Drift of every kind is found, named and repaired.
  db_->Exec(absl::StrCat("UPDATE user_gift_sent SET sent_count = sent_count + 5 WHERE app_code = '",
                         app, "' AND period_kind = '' AND gift_id = 'rose'"));
  db_->Exec(absl::StrCat("DELETE FROM user_gift_sent WHERE app_code = '", app,
                         "' AND period_kind = '' AND gift_id = 'car'"));
  db_->Exec(absl::StrCat(
      "INSERT INTO user_gift_sent (app_code, sender_user_id, gift_id, sent_count, sent_coins, "
      "receiver_count, first_sent_at_ms, last_sent_at_ms, anonymous, created_at_ms, "
      "updated_at_ms) VALUES ('",
      app, "', 77, 'ghost', 1, 1, 1, 1, 1, 0, 1, 1)"));
  const std::string drift = client({"admin", "verify", "--json"}, &code);
  EXPECT_EQ(code, 4) << drift;
  EXPECT_THAT(drift, HasSubstr(R"("drifted": "3")"));
  EXPECT_THAT(drift, HasSubstr(R"("field": "sent_count")"));
  EXPECT_THAT(drift, HasSubstr(R"("period": "sent")"));
  // A period's row drifts too, and is named by its period.
  db_->Exec(absl::StrCat("UPDATE user_gift_sent SET open_receiver_count = 9 WHERE app_code = '",
                         app, "' AND period_kind = 'month' AND gift_id = 'rose'"));
  EXPECT_THAT(client({"admin", "verify", "--json"}, &code),
              HasSubstr(absl::StrCat(R"("period": "sent )", month, R"(")")));
  const std::string repaired = client({"admin", "verify", "--repair", "--json"}, &code);
  EXPECT_THAT(repaired, HasSubstr(R"("sentRowsRepaired": "4")"));
  const std::string after_repair = client({"admin", "verify"}, &code);
  EXPECT_EQ(code, 0) << "no drift after the repair: " << after_repair;
  EXPECT_EQ(sent(9).size(), 2u);

  // A wall masks its sender by the all-time row, whichever period is read: 9 sent lily to 6
  // anonymously yesterday and openly today, so today's open part has no lily, and 6 is no
  // receiver of it to a stranger, though today's send alone was open.
  const int64_t yesterday = absl::ToUnixMillis(absl::Now()) - 86'400'000;
  const std::string today =
      absl::StrCat("day:", absl::FormatTime("%Y-%m-%d", absl::Now(), absl::UTCTimeZone()));
  for (const auto& [id, when, anonymous] : std::vector<std::tuple<std::string, int64_t, bool>>{
           {"S9", yesterday, true}, {"S10", at + 1, false}}) {
    const std::string payload = absl::StrFormat(
        R"({"target_user_id":6,"gift_id":"lily","gift_count":1,"sender_user_id":9%s})",
        anonymous ? R"(,"anonymous":true)" : "");
    db_->InsertOutbox(app, id, "WalletGiftDebited", payload, when);
    ASSERT_TRUE(Project(Message(app, id, payload, when), nullptr, &server).ok()) << id;
  }
  for (const std::string& period : {std::string(), today}) {
    for (const std::string& line : sent(5, nullptr, period)) {
      EXPECT_FALSE(absl::StartsWith(line, "lily")) << period << ": " << line;
    }
    EXPECT_TRUE(receivers("lily", 5, period).empty()) << period;
  }
  // The sender sees it all, and which of it was anonymous: all-time, and today (none).
  EXPECT_THAT(receivers("lily", 9), ElementsAre("6 2 a"));
  EXPECT_THAT(receivers("lily", 9, today), ElementsAre("6 1"));
  EXPECT_THAT(sent(9, nullptr, today), ::testing::Contains(::testing::StartsWith("lily 1 0 1")));
  client({"admin", "verify"}, &code);
  EXPECT_EQ(code, 0);

  // Bad input names what is wrong; the CLI prints the wall.
  {
    grpc::ClientContext context;
    v1::GetSentGiftsRequest request;
    request.set_app_code(app);
    v1::GetSentGiftsResponse response;
    status = stub->GetSentGifts(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(status.error_message(), HasSubstr("sender_user_id must be > 0"));
  }
  {
    grpc::ClientContext context;
    v1::GetSentGiftsRequest request;
    request.set_app_code(app);
    request.set_sender_user_id(8);
    request.set_page_token(
        domain::EncodeSentPageToken({app, 9, "", "car", 0, ""}));  // issued for another sender
    v1::GetSentGiftsResponse response;
    status = stub->GetSentGifts(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  }
  const std::string shown = client({"sent", "--user_id=9", "--viewer_user_id=9"}, &code);
  EXPECT_EQ(code, 0) << shown;
  EXPECT_THAT(shown, HasSubstr("car (anonymous)"));
  EXPECT_THAT(shown, HasSubstr("RECEIVERS"));
  EXPECT_THAT(client({"sent", "--user_id=9", "--gift_id=rose"}, &code), HasSubstr("RECEIVER"));
  EXPECT_EQ(code, 0);
  EXPECT_EQ(server.Terminate(), 0);
}

TEST_F(ServerE2eTest, Rule16_TheCatalogueIsWrittenListedImportedAndAudited) {
  auto stub = v1::GiftWallService::NewStub(server_->Channel());
  auto put = [&](const std::vector<std::tuple<std::string, int64_t, std::string>>& gifts,
                 bool replace, v1::PutGiftCatalogResponse* response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1::PutGiftCatalogRequest request;
    request.set_app_code(" Cat ");
    request.set_replace(replace);
    for (const auto& [id, price, status] : gifts) {
      v1::GiftCatalogItem* item = request.add_items();
      item->set_gift_id(id);
      item->set_name(absl::StrCat(id, " name"));
      item->set_price_coins(price);
      item->set_status(status);
      item->set_sort_order(price);
    }
    return stub->PutGiftCatalog(&context, request, response);
  };
  v1::PutGiftCatalogResponse written;
  ASSERT_TRUE(
      put({{"rose", 10, ""}, {"crown", 500, "retired"}, {"lily", 5, "on_sale"}}, false, &written)
          .ok());
  EXPECT_EQ(written.upserted(), 3);
  EXPECT_EQ(written.catalog_gifts(), 3);
  grpc::Status status = put({{"star", 1, ""}, {"moon", -1, ""}}, false, &written);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("items[1].price_coins must be >= 0, got -1"));

  grpc::ClientContext context;
  v1::ListGiftCatalogRequest request;
  request.set_app_code("cat");
  v1::ListGiftCatalogResponse listed;
  ASSERT_TRUE(stub->ListGiftCatalog(&context, request, &listed).ok());
  ASSERT_EQ(listed.items_size(), 3) << "nothing of the refused write was kept";
  EXPECT_EQ(listed.items(0).gift_id(), "lily");
  EXPECT_EQ(listed.items(1).gift_id(), "rose");
  EXPECT_EQ(listed.items(1).status(), "on_sale");
  EXPECT_EQ(listed.items(2).status(), "retired");
  EXPECT_THAT(server_->log(), HasSubstr("method=PutGiftCatalog app_code=cat result=OK"));
  EXPECT_THAT(server_->log(),
              HasSubstr("method=PutGiftCatalog app_code=cat result=INVALID_ARGUMENT"));

  // The CLI: a file replaces the catalogue, and the list shows it.
  const std::string file = ::testing::TempDir() + "/catalog.json";
  {
    std::ofstream out(file);
    out << R"({"items": [{"gift_id": "sun", "name": "太阳", "price_coins": 99, "series": "sky",)"
           R"( "sort_order": 1}, {"gift_id": "rose", "name": "Rose", "price_coins": 10}]})";
  }
  std::string out;
  ASSERT_EQ(
      RunCommand({GIFTWALL_CLIENT_BIN, absl::StrCat("--server=", server_->address()),
                  "--app_code=cat", "admin", "catalog", "import", "--file=" + file, "--replace"},
                 &out),
      0)
      << out;
  EXPECT_THAT(out, HasSubstr("wrote 2 gifts, removed 2; the catalogue of cat holds 2"));
  out.clear();
  ASSERT_EQ(RunCommand({GIFTWALL_CLIENT_BIN, absl::StrCat("--server=", server_->address()),
                        "--app_code=cat", "admin", "catalog", "list"},
                       &out),
            0)
      << out;
  EXPECT_THAT(out, HasSubstr("太阳"));
  EXPECT_LT(out.find("rose"), out.find("sun")) << out;
  EXPECT_THAT(out, HasSubstr("2 gifts"));
  // A page at a time, bound to its app.
  grpc::ClientContext first_context;
  request.set_page_size(1);
  ASSERT_TRUE(stub->ListGiftCatalog(&first_context, request, &listed).ok());
  ASSERT_EQ(listed.items_size(), 1);
  EXPECT_EQ(listed.items(0).gift_id(), "rose");
  ASSERT_FALSE(listed.next_page_token().empty());
  grpc::ClientContext next_context;
  request.set_page_token(listed.next_page_token());
  ASSERT_TRUE(stub->ListGiftCatalog(&next_context, request, &listed).ok());
  ASSERT_EQ(listed.items_size(), 1);
  EXPECT_EQ(listed.items(0).gift_id(), "sun");
  EXPECT_TRUE(listed.next_page_token().empty());
  grpc::ClientContext other_context;
  request.set_app_code("dog");
  status = stub->ListGiftCatalog(&other_context, request, &listed);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("another app's catalogue"));
}

// GetGiftWall against the catalogue (DESIGN §2.16): lit N of M, the unlit gifts, names from the
// catalogue, the catalogue order; and an app without a catalogue answers as before.
class CatalogueWallE2eTest : public ServerE2eTest {
 protected:
  // Writes `app`'s catalogue: 40 on-sale gifts g00..g39 in four series, in reverse catalogue
  // order (g39 first), and the retired "old".
  static void PutCatalogue(const std::string& app, const ServerProcess& server) {
    auto stub = v1::GiftWallService::NewStub(server.Channel());
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1::PutGiftCatalogRequest request;
    request.set_app_code(app);
    for (int i = 0; i < 40; ++i) {
      v1::GiftCatalogItem* item = request.add_items();
      item->set_gift_id(absl::StrFormat("g%02d", i));
      item->set_name(absl::StrFormat("Gift %d", i));
      item->set_icon(absl::StrFormat("https://cdn/g%02d.png", i));
      item->set_unlit_icon(absl::StrFormat("https://cdn/g%02d-grey.png", i));
      item->set_price_coins(i * 10);
      item->set_series(absl::StrCat("s", i % 4));
      item->set_tier(i < 20 ? "common" : "rare");
      item->set_sort_order(100 - i);
    }
    v1::GiftCatalogItem* old = request.add_items();
    old->set_gift_id("old");
    old->set_status("retired");
    v1::PutGiftCatalogResponse response;
    ASSERT_TRUE(stub->PutGiftCatalog(&context, request, &response).ok());
  }

  // User 5 of `app` receives g00..g11 (named "snapshot" by the events), the retired "old" and
  // "extra", which no catalogue has.
  static void Receive(const std::string& app) {
    for (int i = 0; i < 12; ++i) {
      ASSERT_TRUE(Project(Message(app, absl::StrCat("E", i),
                                  absl::StrFormat(R"({"target_user_id":5,"gift_id":"g%02d",)"
                                                  R"("gift_count":%d,"gift_name":"snapshot"})",
                                                  i, i + 1),
                                  1'700'000'000'000 + i))
                      .ok());
    }
    for (const std::string gift : {"old", "extra"}) {
      ASSERT_TRUE(
          Project(Message(app, gift,
                          absl::StrFormat(R"({"target_user_id":5,"gift_id":"%s","gift_count":1})",
                                          gift)))
              .ok());
    }
  }

  // Every page of user 5's wall.
  static std::vector<v1::GiftWallItem> ReadAll(const std::string& app, v1::GiftWallSort sort,
                                               bool include_unlit, int page_size,
                                               v1::GiftWallSummary* summary = nullptr) {
    std::vector<v1::GiftWallItem> items;
    v1::GetGiftWallRequest request;
    request.set_app_code(app);
    request.set_user_id(5);
    request.set_sort(sort);
    request.set_include_unlit(include_unlit);
    request.set_page_size(page_size);
    for (int pages = 0; pages < 100; ++pages) {
      v1::GetGiftWallResponse page;
      const grpc::Status status = Wall(request, &page);
      EXPECT_TRUE(status.ok()) << status.error_message();
      if (!status.ok()) break;
      if (summary != nullptr) *summary = page.summary();
      items.insert(items.end(), page.items().begin(), page.items().end());
      if (page.next_page_token().empty()) break;
      request.set_page_token(page.next_page_token());
    }
    return items;
  }
};

TEST_F(CatalogueWallE2eTest, Rule16_LitUnlitAndRetiredCountsAndSeriesTotals) {
  PutCatalogue("lit", *server_);
  Receive("lit");
  v1::GiftWallSummary summary;
  const std::vector<v1::GiftWallItem> all =
      ReadAll("lit", v1::GIFT_WALL_SORT_COUNT_DESC, true, 7, &summary);
  EXPECT_EQ(summary.distinct_gifts(), 14);
  EXPECT_EQ(summary.lit_gifts(), 12);
  EXPECT_EQ(summary.catalogue_gifts(), 40);
  EXPECT_EQ(summary.lit_retired_gifts(), 1);
  EXPECT_EQ(summary.lit_uncatalogued_gifts(), 1);
  ASSERT_EQ(summary.series_size(), 4);
  // Catalogue order runs from g39 down, so the series come as g39's (s3) first.
  EXPECT_EQ(summary.series(0).series(), "s3");
  for (const v1::GiftWallSeries& series : summary.series()) {
    EXPECT_EQ(series.lit_gifts(), 3) << series.series();
    EXPECT_EQ(series.catalogue_gifts(), 10) << series.series();
  }
  // 14 lit, then the 28 on-sale gifts the wall lacks.
  ASSERT_EQ(all.size(), 42u);
  for (size_t i = 0; i < 14; ++i) EXPECT_TRUE(all[i].lit()) << all[i].gift_id();
  EXPECT_EQ(all[0].gift_id(), "g11") << "the most received first";
  for (size_t i = 14; i < all.size(); ++i) {
    EXPECT_FALSE(all[i].lit());
    EXPECT_EQ(all[i].gift_count(), 0);
    EXPECT_EQ(all[i].gift_id(), absl::StrFormat("g%02d", 39 - (i - 14))) << "catalogue order";
  }
  EXPECT_EQ(all[14].gift_unlit_icon(), "https://cdn/g39-grey.png");
  EXPECT_EQ(all[14].price_coins(), 390);
  EXPECT_EQ(all[14].tier(), "rare");
}

TEST_F(CatalogueWallE2eTest, Rule16_CatalogueNameOverTheSnapshotAndTheCatalogueOrder) {
  PutCatalogue("named", *server_);
  Receive("named");
  const std::vector<v1::GiftWallItem> lit = ReadAll("named", v1::GIFT_WALL_SORT_CATALOG, false, 5);
  ASSERT_EQ(lit.size(), 14u);
  // The retired "old" (sort_order 0), g11 (89) .. g00 (100), then "extra", which the catalogue
  // lacks.
  EXPECT_EQ(lit[0].gift_id(), "old");
  EXPECT_EQ(lit[1].gift_id(), "g11");
  EXPECT_EQ(lit[12].gift_id(), "g00");
  EXPECT_EQ(lit[13].gift_id(), "extra");
  EXPECT_EQ(lit[1].gift_name(), "Gift 11") << "the catalogue's name, not the event's";
  EXPECT_EQ(lit[1].gift_icon(), "https://cdn/g11.png");
  EXPECT_EQ(lit[1].series(), "s3");
  EXPECT_EQ(lit[1].price_coins(), 110);
  EXPECT_EQ(lit[1].gift_count(), 12);
  EXPECT_TRUE(lit[13].lit());
  EXPECT_EQ(lit[13].series(), "") << "not in the catalogue";

  // Each existing sort, with the unlit gifts after the lit ones.
  for (v1::GiftWallSort sort :
       {v1::GIFT_WALL_SORT_COINS_DESC, v1::GIFT_WALL_SORT_LAST_RECEIVED_DESC,
        v1::GIFT_WALL_SORT_FIRST_RECEIVED_ASC, v1::GIFT_WALL_SORT_CATALOG}) {
    const std::vector<v1::GiftWallItem> all = ReadAll("named", sort, true, 9);
    ASSERT_EQ(all.size(), 42u) << sort;
    const std::vector<v1::GiftWallItem> without = ReadAll("named", sort, false, 9);
    for (size_t i = 0; i < all.size(); ++i) {
      EXPECT_EQ(all[i].lit(), i < 14) << sort << " " << i;
      if (i < 14) {
        EXPECT_EQ(all[i].gift_id(), without[i].gift_id()) << sort << " " << i;
      }
    }
  }

  // A token of a read with include_unlit is refused without it.
  v1::GetGiftWallRequest request;
  request.set_app_code("named");
  request.set_user_id(5);
  request.set_include_unlit(true);
  request.set_page_size(1);
  v1::GetGiftWallResponse page;
  ASSERT_TRUE(Wall(request, &page).ok());
  request.set_page_token(page.next_page_token());
  request.set_include_unlit(false);
  const grpc::Status status = Wall(request, &page);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("include_unlit"));

  // The CLI's summary.
  const std::string out = Client({"--app_code=named", "wall", "--user_id=5", "--include_unlit"});
  EXPECT_THAT(out, HasSubstr("lit 12 of 40"));
  EXPECT_THAT(out, HasSubstr("s3 3/10"));
  EXPECT_THAT(out, HasSubstr("unlit"));
}

TEST_F(CatalogueWallE2eTest, Rule16_AnAppWithoutACatalogueAnswersAsBefore) {
  Receive("bare");
  for (v1::GiftWallSort sort : {v1::GIFT_WALL_SORT_COUNT_DESC, v1::GIFT_WALL_SORT_CATALOG}) {
    v1::GiftWallSummary with_summary, without_summary;
    const std::vector<v1::GiftWallItem> with = ReadAll("bare", sort, true, 4, &with_summary);
    const std::vector<v1::GiftWallItem> without = ReadAll("bare", sort, false, 4, &without_summary);
    ASSERT_EQ(with.size(), 14u);
    ASSERT_EQ(without.size(), 14u);
    for (size_t i = 0; i < with.size(); ++i) {
      EXPECT_EQ(with[i].SerializeAsString(), without[i].SerializeAsString());
      EXPECT_TRUE(with[i].lit());
      EXPECT_EQ(with[i].series(), "");
      EXPECT_EQ(with[i].price_coins(), 0);
    }
    EXPECT_EQ(with[0].gift_name(), sort == v1::GIFT_WALL_SORT_CATALOG ? "" : "snapshot");
    EXPECT_EQ(with_summary.SerializeAsString(), without_summary.SerializeAsString());
    EXPECT_EQ(with_summary.distinct_gifts(), 14);
    EXPECT_EQ(with_summary.lit_gifts(), 0);
    EXPECT_EQ(with_summary.catalogue_gifts(), 0);
    EXPECT_EQ(with_summary.lit_uncatalogued_gifts(), 0);
    EXPECT_EQ(with_summary.series_size(), 0);
  }
}

// Replaces of the whole catalogue between two disjoint ones, while walls are read: every read
// sees one catalogue or the other, never parts of both. The server reads the catalogue for every
// group of walls (--catalog_cache_ttl=0), so the reads meet the writes.
TEST_F(CatalogueWallE2eTest, Rule16_AReplaceOfTheWholeCatalogueIsAtomicAgainstWallReads) {
  ServerProcess server(db_->url(), {"--catalog_cache_ttl=0", "--catchup_interval=0"});
  ASSERT_TRUE(server.WaitReady()) << server.log();
  ASSERT_TRUE(
      Project(Message("swap", "S1", R"({"target_user_id":5,"gift_id":"a0","gift_count":1})"),
              nullptr, &server)
          .ok());
  auto replace = [&](char letter) {
    auto stub = v1::GiftWallService::NewStub(server.Channel());
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    v1::PutGiftCatalogRequest request;
    request.set_app_code("swap");
    request.set_replace(true);
    for (int i = 0; i < 30; ++i) {
      v1::GiftCatalogItem* item = request.add_items();
      item->set_gift_id(absl::StrCat(std::string(1, letter), i));
      item->set_name(std::string(1, letter));
      item->set_series(std::string(1, letter));
    }
    v1::PutGiftCatalogResponse response;
    const grpc::Status status = stub->PutGiftCatalog(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
  };
  replace('a');
  std::atomic<bool> writing{true};
  std::thread writer([&] {
    for (int i = 0; i < 21; ++i) replace(i % 2 == 0 ? 'b' : 'a');  // ends on b
    writing = false;
  });
  std::atomic<int> reads{0}, seen_a{0}, seen_b{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 4; ++r) {
    readers.emplace_back([&] {
      auto stub = v1::GiftWallService::NewStub(server.Channel());
      while (writing) {
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
        v1::GetGiftWallRequest request;
        request.set_app_code("swap");
        request.set_user_id(5);
        request.set_include_unlit(true);
        request.set_page_size(200);
        v1::GetGiftWallResponse page;
        const grpc::Status status = stub->GetGiftWall(&context, request, &page);
        ASSERT_TRUE(status.ok()) << status.error_message();
        ++reads;
        const v1::GiftWallSummary& s = page.summary();
        ASSERT_EQ(s.catalogue_gifts(), 30);
        ASSERT_EQ(s.series_size(), 1);
        const std::string letter = s.series(0).series();
        (letter == "a" ? seen_a : seen_b)++;
        // a0 is lit under catalogue a, uncatalogued under b.
        EXPECT_EQ(s.lit_gifts(), letter == "a" ? 1 : 0);
        EXPECT_EQ(s.lit_uncatalogued_gifts(), letter == "a" ? 0 : 1);
        EXPECT_EQ(page.items_size(), letter == "a" ? 30 : 31);
        for (const v1::GiftWallItem& item : page.items()) {
          if (!item.series().empty()) {
            EXPECT_EQ(item.series(), letter) << item.gift_id();
          }
          if (!item.lit()) {
            EXPECT_EQ(item.gift_id().substr(0, 1), letter);
          }
        }
      }
    });
  }
  writer.join();
  for (std::thread& t : readers) t.join();
  EXPECT_GT(reads.load(), 0);
  EXPECT_EQ(seen_a.load() + seen_b.load(), reads.load());
  // Read for every group of walls: the last replace shows at once.
  v1::GetGiftWallRequest request;
  request.set_app_code("swap");
  request.set_user_id(5);
  v1::GetGiftWallResponse page;
  auto stub = v1::GiftWallService::NewStub(server.Channel());
  grpc::ClientContext context;
  ASSERT_TRUE(stub->GetGiftWall(&context, request, &page).ok());
  ASSERT_EQ(page.summary().series_size(), 1);
  EXPECT_EQ(page.summary().series(0).series(), "b");
  EXPECT_EQ(page.summary().lit_uncatalogued_gifts(), 1);
}

// Every admin call goes through one wrapper: a refusal for its arguments is audit-logged like any
// other answer. And answers that list events or users are bounded, counting the rest.
TEST_F(ServerE2eTest, AdminRefusalsAreAuditedAndListsAreCapped) {
  ServerProcess admin(db_->url(), {"--enable_admin", "--catchup_interval=0"});
  ASSERT_TRUE(admin.WaitReady()) << admin.log();
  auto stub = v1::ProjectionAdminService::NewStub(admin.Channel());
  auto context = [] {
    auto c = std::make_unique<grpc::ClientContext>();
    c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    return c;
  };
  // The code `method` of the admin stub answers `request`, sent for app "capped".
  auto code_of = [&](auto method, auto request, auto response) {
    request.set_app_code("capped");
    return ((*stub).*method)(context().get(), request, &response).error_code();
  };
  v1::ListDeadEventsRequest long_filter;
  long_filter.set_error_contains(std::string(2000, 'x'));
  EXPECT_EQ(code_of(&v1::ProjectionAdminService::Stub::ListDeadEvents, long_filter,
                    v1::ListDeadEventsResponse()),
            grpc::StatusCode::INVALID_ARGUMENT);
  v1::RunCatchUpRequest negative_limit;
  negative_limit.set_limit(-1);
  EXPECT_EQ(code_of(&v1::ProjectionAdminService::Stub::RunCatchUp, negative_limit,
                    v1::RunCatchUpResponse()),
            grpc::StatusCode::INVALID_ARGUMENT);
  v1::VerifyGiftWallRequest negative_user;
  negative_user.set_user_id(-1);
  EXPECT_EQ(code_of(&v1::ProjectionAdminService::Stub::VerifyGiftWall, negative_user,
                    v1::VerifyGiftWallResponse()),
            grpc::StatusCode::INVALID_ARGUMENT);
  for (const std::string method : {"ListDeadEvents", "RunCatchUp", "VerifyGiftWall"}) {
    EXPECT_THAT(admin.log(),
                HasSubstr(absl::StrCat("audit: caller=(anyone: no access policy) "
                                       "method=",
                                       method, " app_code=capped result=INVALID_ARGUMENT")));
  }

  // 105 dead events whose outbox rows are gone: the first 100 are listed, 5 counted.
  for (int i = 0; i < 105; ++i) {
    ASSERT_TRUE(
        Project(Message("capped", absl::StrCat("D", i), R"({"target_user_id":1})"), nullptr, &admin)
            .ok());
  }
  {
    v1::RequeueDeadEventsRequest request;
    request.set_app_code("capped");
    request.set_error_contains("missing gift_id");
    request.set_dry_run(true);
    v1::RequeueDeadEventsResponse response;
    const grpc::Status status = stub->RequeueDeadEvents(context().get(), request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.matched(), 105);
    EXPECT_EQ(response.skipped_size(), transport::kMaxSkippedListed);
    EXPECT_EQ(response.skipped_not_listed(), 5);
  }
  // 1,003 users with a done event whose outbox row is gone: unverifiable, 1,000 listed.
  db_->Exec(
      "INSERT INTO wallet_projection_events (projection_name, app_code, event_id, status, "
      "target_user_id, created_at_ms, updated_at_ms) SELECT 'user_gift_wall', 'capped', "
      "CONCAT('U', seq), 'done', seq, 1, 1 FROM seq_1_to_1003");
  {
    v1::VerifyGiftWallRequest request;
    request.set_app_code("capped");
    v1::VerifyGiftWallResponse response;
    const grpc::Status status = stub->VerifyGiftWall(context().get(), request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.unverifiable_users_size(), transport::kMaxUnverifiableListed);
    EXPECT_EQ(response.unverifiable_users(0), 1);
    EXPECT_EQ(response.unverifiable_not_listed(), 3);
  }
  int code = -1;
  std::vector<std::string> verify = {GIFTWALL_CLIENT_BIN,
                                     absl::StrCat("--server=", admin.address()),
                                     "--app_code=capped", "admin", "verify"};
  std::string output;
  code = RunCommand(verify, &output);
  EXPECT_THAT(output, HasSubstr("... and 983 more")) << code;
}

// Ids are bytes: an outbox row whose event_id is not UTF-8 goes dead through the scan, and every
// admin answer that names it can still be sent (escaped as text, exact as bytes).
TEST_F(ServerE2eTest, DeadEventsWhoseIdsAreNotUtf8AreListedLookedUpAndRequeued) {
  ServerProcess admin(db_->url(), {"--enable_admin", "--catchup_interval=0"});
  ASSERT_TRUE(admin.WaitReady()) << admin.log();
  const std::string id = "bin\xff\xfe";
  db_->InsertOutbox("bytes", id, "WalletGiftDebited",
                    R"({"target_user_id":1,"gift_id":"g","gift_count":1})", 1'700'000'000'000);
  auto stub = v1::ProjectionAdminService::NewStub(admin.Channel());
  auto deadline = [] { return std::chrono::system_clock::now() + std::chrono::seconds(30); };
  {
    grpc::ClientContext context;
    context.set_deadline(deadline());
    v1::RunCatchUpRequest request;
    request.set_app_code("bytes");
    v1::RunCatchUpResponse response;
    ASSERT_TRUE(stub->RunCatchUp(&context, request, &response).ok());
    EXPECT_EQ(response.dead(), 1);
  }
  {
    grpc::ClientContext context;
    context.set_deadline(deadline());
    v1::ListDeadEventsRequest request;
    request.set_app_code("bytes");
    v1::ListDeadEventsResponse response;
    const grpc::Status status = stub->ListDeadEvents(&context, request, &response);
    ASSERT_TRUE(status.ok()) << status.error_code() << " " << status.error_message();
    ASSERT_EQ(response.events_size(), 1);
    EXPECT_EQ(response.events(0).event_id(), R"(bin\xff\xfe)");
    EXPECT_EQ(response.events(0).raw_event_id(), id);
    EXPECT_EQ(response.events(0).last_error(), "invalid envelope: event_id is not valid UTF-8");
  }
  {
    grpc::ClientContext context;
    context.set_deadline(deadline());
    v1::GetEventStatusRequest request;
    request.set_app_code("bytes");
    request.set_raw_event_id(id);
    v1::GetEventStatusResponse response;
    const grpc::Status status = stub->GetEventStatus(&context, request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.status(), "dead");
  }
  for (bool by_filter : {true, false}) {
    grpc::ClientContext context;
    context.set_deadline(deadline());
    v1::RequeueDeadEventsRequest request;
    request.set_app_code("bytes");
    request.set_dry_run(true);
    if (by_filter) {
      request.set_error_contains("UTF-8");
    } else {
      request.add_raw_event_ids(id);
    }
    v1::RequeueDeadEventsResponse response;
    const grpc::Status status = stub->RequeueDeadEvents(&context, request, &response);
    ASSERT_TRUE(status.ok()) << status.error_code() << " " << status.error_message();
    EXPECT_EQ(response.matched(), 1);
    EXPECT_EQ(response.requeued(), 0);
    ASSERT_EQ(response.skipped_size(), 1);
    EXPECT_EQ(response.skipped(0).raw_event_id(), id);
    EXPECT_THAT(response.skipped(0).reason(), HasSubstr("would stay dead: invalid envelope"));
  }
  // The CLI shows the escaped id.
  std::string output;
  EXPECT_EQ(RunCommand({GIFTWALL_CLIENT_BIN, absl::StrCat("--server=", admin.address()),
                        "--app_code=bytes", "admin", "dead"},
                       &output),
            0)
      << output;
  EXPECT_THAT(output, HasSubstr(R"(bin\xff\xfe)"));
  EXPECT_EQ(admin.Terminate(), 0);
}

// The largest legal batch (500 messages of 64 KiB payloads) is taken; a request past it is
// INVALID_ARGUMENT, which the relay dead-letters, not a code it would retry.
TEST_F(ServerE2eTest, TheLargestLegalBatchFitsAndALargerRequestIsInvalidArgument) {
  auto stub = v1::GiftWallService::NewStub(server_->Channel());
  v1::ProjectMessagesRequest request;
  const std::string payload(64 * 1024, 'x');  // not JSON: each event goes dead, not the call
  for (int i = 0; i < 500; ++i) {
    *request.add_messages() = Message("big", absl::StrCat("L", i), payload);
  }
  v1::ProjectMessagesResponse response;
  {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    grpc::Status status = stub->ProjectMessages(&context, request, &response);
    ASSERT_TRUE(status.ok()) << status.error_code() << " " << status.error_message();
  }
  ASSERT_EQ(response.results_size(), 500);
  EXPECT_EQ(response.results(0).outcome(), v1::PROJECTION_OUTCOME_DEAD);
  // Past the legal size, yet under the receive limit (1 MiB above it): the handler answers.
  request.mutable_messages(0)->set_command_id(std::string(1536 * 1024, 'c'));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  grpc::Status status = stub->ProjectMessages(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
  EXPECT_THAT(status.error_message(), ::testing::HasSubstr("bytes, at most"));
}

// Connections are ended after --max_connection_age, so that a long-lived client (the relay)
// reconnects and spreads over replicas added since; calls go on without a failure.
TEST_F(ServerE2eTest, ConnectionsEndAfterMaxConnectionAgeAndClientsReconnect) {
  ServerProcess aging(db_->url(), {"--max_connection_age=1s", "--max_connection_age_grace=1s",
                                   "--catchup_interval=0"});
  ASSERT_TRUE(aging.WaitReady()) << aging.log();
  std::shared_ptr<grpc::Channel> channel = aging.Channel();
  auto health = grpc::health::v1::Health::NewStub(channel);
  auto check = [&] {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    grpc::health::v1::HealthCheckRequest request;
    grpc::health::v1::HealthCheckResponse response;
    return health->Check(&context, request, &response);
  };
  ASSERT_TRUE(check().ok());
  ASSERT_EQ(channel->GetState(false), GRPC_CHANNEL_READY);
  bool ended = false;
  for (int i = 0; i < 100 && !ended; ++i) {
    absl::SleepFor(absl::Milliseconds(100));
    ended = channel->GetState(false) != GRPC_CHANNEL_READY;
  }
  EXPECT_TRUE(ended) << "the server never ended the connection";
  EXPECT_TRUE(check().ok()) << "the client did not reconnect";
}

// Prometheus metrics on their own port: gRPC's under go-grpc-prometheus's names, pre-initialized
// for every method, and the projection's own.
TEST_F(ServerE2eTest, MetricsCountCallsUnderGoGrpcPrometheusNamesAndTheProjection) {
  const int metrics_port = process::FreePort();
  // The scan measures the apps it finds in the outbox.
  db_->InsertOutbox("metrics", "M0", "WalletGiftDebited",
                    R"({"target_user_id":7,"gift_id":"rose","gift_count":1})", 1'700'000'000'000);
  ServerProcess server(db_->url(), {absl::StrCat("--metrics_listen=127.0.0.1:", metrics_port),
                                    "--catchup_interval=100ms", "--catchup_min_age=0s",
                                    "--catchup_status_every=100ms",
                                    // Its app only: other tests leave events in the shared outbox
                                    // (refused forgeries, say), which would count here too.
                                    "--catchup_app_codes=metrics"});
  ASSERT_TRUE(server.WaitReady()) << server.log();
  v1::ProjectMessageResponse response;
  ASSERT_TRUE(Project(Message("metrics", "M1",
                              R"({"target_user_id":7,"gift_id":"rose",)"
                              R"("gift_count":1})"),
                      &response, &server)
                  .ok());
  ASSERT_EQ(response.outcome(), v1::PROJECTION_OUTCOME_PROJECTED);
  ASSERT_FALSE(Project(Message("metrics", "", "{}"), nullptr, &server).ok());
  std::string metrics;
  // Slow machines and sanitizer builds: up to 60 s for the scan to project M0 and report.
  for (int i = 0; i < 600; ++i) {
    metrics = testing::HttpGet(metrics_port, "/metrics");
    if (absl::StrContains(metrics, "giftwall_projection_lag_seconds{app_code=\"metrics\"}") &&
        absl::StrContains(
            metrics, R"(giftwall_projection_events_total{outcome="projected",source="scan"} 1)") &&
        absl::StrContains(metrics,
                          R"(giftwall_projection_unprojected_events{app_code="metrics"} 0)")) {
      break;
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
  const std::string unary = R"(grpc_service="giftwall.v1.GiftWallService",grpc_type="unary"})";
  for (const std::string& line :
       {absl::StrCat(R"(grpc_server_started_total{grpc_method="ProjectMessage",)", unary, " 2"),
        absl::StrCat(R"(grpc_server_handled_total{grpc_code="OK",grpc_method="ProjectMessage",)",
                     unary, " 1"),
        absl::StrCat(R"(grpc_server_handled_total{grpc_code="InvalidArgument",)",
                     R"(grpc_method="ProjectMessage",)", unary, " 1"),
        // Pre-initialized: a method nobody called, a code nobody got.
        absl::StrCat(R"(grpc_server_handled_total{grpc_code="Unavailable",)",
                     R"(grpc_method="ListGiftWallSenders",)", unary, " 0"),
        std::string(R"(grpc_server_started_total{grpc_method="Check",)"
                    R"(grpc_service="grpc.health.v1.Health",grpc_type="unary"})"),
        absl::StrCat(R"(grpc_server_msg_received_total{grpc_method="ProjectMessage",)", unary,
                     " 2"),
        absl::StrCat(R"(grpc_server_handling_seconds_count{grpc_method="ProjectMessage",)", unary,
                     " 2"),
        std::string(R"(giftwall_projection_events_total{outcome="projected",source="relay"} 1)"),
        std::string(R"(giftwall_projection_events_total{outcome="projected",source="scan"} 1)"),
        std::string("giftwall_projection_group_events_count "),
        std::string(R"(giftwall_projection_unprojected_events{app_code="metrics"} 0)"),
        std::string(R"(giftwall_db_pool_sessions{pool="primary",state="in_use"})"),
        // The scan's sessions come from a pool of their own.
        std::string(R"(giftwall_db_pool_max_sessions{pool="background"} 6)"),
        std::string(R"(giftwall_queue_depth{queue="background_projection"} 0)"),
        std::string(R"(giftwall_queue_depth{queue="projection"} 0)"),
        absl::StrCat(R"(giftwall_build_info{version=")", VersionOf(GIFTWALL_SERVER_BIN), "\"} 1"),
        // As the Prometheus client libraries name them.
        std::string("\nprocess_cpu_seconds_total "),
        std::string("\nprocess_resident_memory_bytes "), std::string("\nprocess_open_fds "),
        std::string("\nprocess_max_fds "), std::string("\nprocess_start_time_seconds ")}) {
    EXPECT_TRUE(absl::StrContains(metrics, line)) << "no series " << line;
  }
  if (HasFailure()) ADD_FAILURE() << "the server's log:\n" << server.log();
}

// Metrics keep series only for the methods the server serves: calls to paths it does not serve
// count under one fixed series, so that no caller can grow /metrics or the server's memory.
TEST_F(ServerE2eTest, CallsToUnknownMethodsDoNotGrowTheMetrics) {
  const int metrics_port = process::FreePort();
  ServerProcess server(db_->url(), {"--catchup_interval=0",
                                    absl::StrCat("--metrics_listen=127.0.0.1:", metrics_port)});
  ASSERT_TRUE(server.WaitReady()) << server.log();
  const std::shared_ptr<grpc::Channel> channel = server.Channel();
  auto call = [&](const std::string& method) { return RawCall(channel, method, ""); };
  const auto unknown = [](int i) { return absl::StrCat("/x.Y/", std::string(4000, 'a'), i); };
  ASSERT_EQ(call(unknown(-1)).error_code(), grpc::StatusCode::UNIMPLEMENTED);
  const size_t metrics_before = testing::HttpGet(metrics_port, "/metrics").size();
  const double rss_before = process::StatusMib(server.pid(), "VmRSS");
  ASSERT_GT(metrics_before, 0u);
  ASSERT_GT(rss_before, 0);
  for (int i = 0; i < 5000; ++i) {
    ASSERT_EQ(call(unknown(i)).error_code(), grpc::StatusCode::UNIMPLEMENTED) << i;
  }
  const std::string metrics = testing::HttpGet(metrics_port, "/metrics");
  EXPECT_LT(metrics.size(), metrics_before + 4096) << "from " << metrics_before;
  if (testing::kMemoryBoundsHold) {
    EXPECT_LT(process::StatusMib(server.pid(), "VmRSS"), rss_before + 8) << "MiB";
  }
  EXPECT_THAT(metrics, ::testing::Not(HasSubstr("aaaa")));
  EXPECT_THAT(metrics, HasSubstr(R"(grpc_method="unknown")"));
}

// Bytes on the wire that are not the method's request: gRPC itself would answer UNIMPLEMENTED with
// no message; the server answers INVALID_ARGUMENT naming the request's type, and does nothing.
TEST_F(ServerE2eTest, UndecodableRequestsAreInvalidArgumentNamingTheRequestType) {
  auto raw_call = [](const std::string& method, const std::string& bytes) {
    return RawCall(server_->Channel(), method, bytes);
  };
  v1::ProjectMessageRequest not_utf8;
  *not_utf8.mutable_message() =
      Message("undecodable", "E\xff", R"({"target_user_id":1,"gift_id":"g","gift_count":1})");
  std::string valid;
  ASSERT_TRUE(not_utf8.SerializeToString(&valid));  // protobuf writes it, and logs the field
  const std::string truncated = valid.substr(0, valid.size() - 3);
  for (const std::string& bytes : {valid, truncated, std::string("\xff\xff\xff\xff", 4)}) {
    const grpc::Status status = raw_call("/giftwall.v1.GiftWallService/ProjectMessage", bytes);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
    EXPECT_THAT(status.error_message(),
                HasSubstr("cannot be decoded as giftwall.v1.ProjectMessageRequest"));
  }
  const grpc::Status wall =
      raw_call("/giftwall.v1.GiftWallService/GetGiftWall", std::string("\x0a\x05zz", 3));
  EXPECT_EQ(wall.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << wall.error_message();
  EXPECT_THAT(wall.error_message(), HasSubstr("giftwall.v1.GetGiftWallRequest"));
  // A method that does not exist is still UNIMPLEMENTED.
  EXPECT_EQ(raw_call("/giftwall.v1.GiftWallService/NoSuchMethod", "").error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_EQ(db_->QueryInt("SELECT COUNT(*) FROM wallet_projection_events WHERE app_code = "
                          "'undecodable'"),
            0);
}

TEST_F(ServerE2eTest, BadInputGetsWhatTheContractSays) {
  v1::ProjectMessageResponse response;
  // A malformed envelope: INVALID_ARGUMENT naming the field, nothing written.
  grpc::Status status = Project(Message("bad", "  ", R"({})"), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(), "message.event_id is required (it is blank)");
  status = Project(Message("bad", "B0", R"({})", 0), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("message.occurred_at_ms must be > 0"));
  status = Project(Message("Bad App!", "B0", R"({})"), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("message.app_code"));
  EXPECT_EQ(db_->QueryInt("SELECT COUNT(*) FROM wallet_projection_events WHERE app_code = 'bad' "
                          "AND event_id = 'B0'"),
            0);

  // Another event type: IGNORED, no ledger row.
  v1::WalletOutboxMessage other = Message("bad", "B1", R"({"target_user_id":1})");
  other.set_event_type("WalletRecharged");
  ASSERT_TRUE(Project(other, &response).ok());
  EXPECT_EQ(response.outcome(), v1::PROJECTION_OUTCOME_IGNORED);
  EXPECT_EQ(db_->QueryInt("SELECT COUNT(*) FROM wallet_projection_events WHERE event_id = 'B1'"),
            0);
  // The type is looked at first, alone or in a batch: another type is IGNORED whatever its
  // envelope, even an empty one.
  v1::ProjectMessageRequest empty;
  empty.mutable_message();
  {
    grpc::ClientContext context;
    ASSERT_TRUE(v1::GiftWallService::NewStub(server_->Channel())
                    ->ProjectMessage(&context, empty, &response)
                    .ok());
    EXPECT_EQ(response.outcome(), v1::PROJECTION_OUTCOME_IGNORED);
  }
  {
    v1::WalletOutboxMessage bad_envelope = Message("Bad App!", "  ", "{}", 0);
    bad_envelope.set_event_type("WalletRecharged");
    v1::ProjectMessagesRequest batch;
    *batch.add_messages() = bad_envelope;
    *batch.add_messages() = Message("bad", "B2", R"({"target_user_id":1,"gift_id":"x"})");
    v1::ProjectMessagesResponse results;
    grpc::ClientContext context;
    ASSERT_TRUE(v1::GiftWallService::NewStub(server_->Channel())
                    ->ProjectMessages(&context, batch, &results)
                    .ok());
    ASSERT_EQ(results.results_size(), 2);
    EXPECT_EQ(results.results(0).outcome(), v1::PROJECTION_OUTCOME_IGNORED);
    EXPECT_EQ(results.results(1).outcome(), v1::PROJECTION_OUTCOME_DEAD);
  }

  // A malformed or incomplete payload: OK, DEAD with the reason, ledger dead, wall untouched.
  for (const char* payload : {R"({"target_user_id":1,"gift_id":"x"})", R"({not json)"}) {
    const std::string id = absl::StrCat("B-", std::hash<std::string>()(payload));
    ASSERT_TRUE(Project(Message("bad", id, payload), &response).ok());
    EXPECT_EQ(response.outcome(), v1::PROJECTION_OUTCOME_DEAD);
    EXPECT_THAT(response.detail(), HasSubstr("invalid gift payload"));
    EXPECT_EQ(db_->QueryString(absl::StrCat(
                  "SELECT status FROM wallet_projection_events WHERE event_id = '", id, "'")),
              "dead");
  }
  EXPECT_EQ(db_->QueryInt("SELECT COUNT(*) FROM user_gift_wall WHERE app_code = 'bad'"), 0);

  // A forged page token.
  v1::GetGiftWallRequest request;
  request.set_app_code("bad");
  request.set_user_id(1);
  request.set_page_token("Zm9yZ2Vk");
  v1::GetGiftWallResponse page;
  status = Wall(request, &page);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("page_token"));
  // A gift id longer than any gift's: INVALID_ARGUMENT, as in a payload.
  auto stub = v1::GiftWallService::NewStub(server_->Channel());
  grpc::ClientContext context;
  v1::ListGiftWallSendersRequest senders;
  senders.set_app_code("bad");
  senders.set_user_id(1);
  senders.set_gift_id(std::string(1 << 20, 'g'));
  v1::ListGiftWallSendersResponse senders_page;
  status = stub->ListGiftWallSenders(&context, senders, &senders_page);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(), "gift_id is 1048576 bytes, at most 64 allowed");
}

// DESIGN §3's bounds: a batch of at most 500 messages, checked whole before anything is
// written; GetGiftWall's page size defaulted at 50 and clamped at 200.
TEST_F(ServerE2eTest, BatchesAndPagesKeepTheirBounds) {
  auto stub = v1::GiftWallService::NewStub(server_->Channel());
  auto send = [&](const v1::ProjectMessagesRequest& batch, v1::ProjectMessagesResponse* results) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    return stub->ProjectMessages(&context, batch, results);
  };
  v1::ProjectMessagesRequest batch;
  for (int i = 0; i < 250; ++i) {
    *batch.add_messages() = Message("pages", absl::StrCat("P", i),
                                    testing::GiftPayloadJson(77, absl::StrCat("gift", i), 1));
  }
  v1::ProjectMessagesResponse results;
  ASSERT_TRUE(send(batch, &results).ok());
  ASSERT_EQ(results.results_size(), 250);

  // One malformed envelope anywhere rejects the batch, naming it, and nothing is written.
  v1::ProjectMessagesRequest mixed;
  *mixed.add_messages() = Message("pages", "M0", testing::GiftPayloadJson(78, "rose", 1));
  *mixed.add_messages() = Message("pages", "   ", testing::GiftPayloadJson(78, "rose", 1));
  *mixed.add_messages() = Message("pages", "M2", testing::GiftPayloadJson(78, "rose", 1));
  grpc::Status status = send(mixed, &results);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("messages[1].event_id"));
  EXPECT_EQ(db_->QueryInt("SELECT COUNT(*) FROM wallet_projection_events WHERE app_code = 'pages' "
                          "AND event_id IN ('M0', 'M2')"),
            0);

  // More than 500 messages: refused whole.
  v1::ProjectMessagesRequest too_many;
  for (int i = 0; i < 501; ++i) {
    *too_many.add_messages() =
        Message("pages", absl::StrCat("T", i), testing::GiftPayloadJson(79, "rose", 1));
  }
  status = send(too_many, &results);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("messages has 501 entries, at most 500 allowed"));
  EXPECT_EQ(db_->QueryInt("SELECT COUNT(*) FROM wallet_projection_events WHERE app_code = 'pages' "
                          "AND target_user_id = 79"),
            0);

  v1::GetGiftWallRequest request;
  request.set_app_code("pages");
  request.set_user_id(77);
  v1::GetGiftWallResponse page;
  ASSERT_TRUE(Wall(request, &page).ok());
  EXPECT_EQ(page.items_size(), 50) << "page_size 0: the default";
  request.set_page_size(1000);
  page.Clear();
  ASSERT_TRUE(Wall(request, &page).ok());
  EXPECT_EQ(page.items_size(), 200) << "clamped at the maximum";
  request.set_page_size(-1);
  status = Wall(request, &page);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("page_size"));
}

TEST_F(ServerE2eTest, TwentyConcurrentDeliveriesOfOneEventCountOnce) {
  const v1::WalletOutboxMessage message =
      Message("conc", "X1", R"({"target_user_id":3,"gift_id":"crown","gift_count":7})");
  std::atomic<int> ok{0}, projected{0};
  std::vector<std::thread> callers;
  for (int i = 0; i < 20; ++i) {
    callers.emplace_back([&] {
      v1::ProjectMessageResponse response;
      grpc::Status status = Project(message, &response);
      EXPECT_TRUE(status.ok()) << status.error_code() << " " << status.error_message();
      if (!status.ok()) return;
      ++ok;
      if (response.outcome() == v1::PROJECTION_OUTCOME_PROJECTED) ++projected;
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(ok, 20);
  EXPECT_EQ(projected, 1);
  EXPECT_EQ(db_->QueryInt("SELECT gift_count FROM user_gift_wall WHERE app_code = 'conc'"), 7);
}

TEST_F(ServerE2eTest, PagesThrough25GiftsTenAtATime) {
  for (int i = 0; i < 25; ++i) {
    v1::ProjectMessageResponse response;
    const std::string payload = absl::StrFormat(
        R"({"target_user_id":4,"gift_id":"gift-%02d","gift_count":%d})", i, 1 + i % 3);
    ASSERT_TRUE(Project(Message("page", absl::StrCat("P", i), payload), &response).ok());
  }
  for (auto sort : {v1::GIFT_WALL_SORT_UNSPECIFIED, v1::GIFT_WALL_SORT_LAST_RECEIVED_DESC}) {
    v1::GetGiftWallRequest request;
    request.set_app_code("page");
    request.set_user_id(4);
    request.set_page_size(10);
    request.set_sort(sort);
    std::vector<size_t> sizes;
    std::set<std::string> seen;
    for (;;) {
      v1::GetGiftWallResponse page;
      grpc::Status status = Wall(request, &page);
      ASSERT_TRUE(status.ok()) << status.error_message();
      sizes.push_back(static_cast<size_t>(page.items_size()));
      for (const auto& item : page.items()) {
        EXPECT_TRUE(seen.insert(item.gift_id()).second) << item.gift_id();
      }
      EXPECT_EQ(page.summary().distinct_gifts(), 25);
      if (page.next_page_token().empty()) break;
      request.set_page_token(page.next_page_token());
    }
    EXPECT_THAT(sizes, ::testing::ElementsAre(10, 10, 5));
    EXPECT_EQ(seen.size(), 25u);
  }
}

TEST_F(ServerE2eTest, TwoServerProcessesOnOneDatabaseCountEachEventOnce) {
  ServerProcess second(db_->url());
  ASSERT_TRUE(second.WaitReady()) << second.log();
  std::atomic<int> failures{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 8; ++t) {
    callers.emplace_back([&, t] {
      for (int i = 0; i < 100; ++i) {
        const int event = (i * 7 + t * 13) % 100;
        v1::ProjectMessageResponse response;
        const std::string payload =
            absl::StrFormat(R"({"target_user_id":%d,"gift_id":"g%d","gift_count":%d})",
                            1 + event % 4, event % 3, 1 + event % 5);
        grpc::Status status = Project(Message("multi", absl::StrCat("M", event), payload),
                                      &response, t % 2 == 0 ? server_ : &second);
        if (!status.ok() && failures++ < 3) ADD_FAILURE() << status.error_message();
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(failures, 0);
  int64_t expected = 0;
  for (int event = 0; event < 100; ++event) expected += 1 + event % 5;
  EXPECT_EQ(db_->QueryInt("SELECT SUM(gift_count) FROM user_gift_wall WHERE app_code = 'multi'"),
            expected);
  EXPECT_EQ(second.Terminate(), 0);
}

TEST_F(ServerE2eTest, SigtermTurnsReadinessOffFinishesCallsAndExitsZero) {
  ServerProcess server(db_->url(), {"--drain_delay=1500ms"});
  ASSERT_TRUE(server.WaitReady()) << server.log();
  std::atomic<bool> stop{false};
  std::atomic<int> projected{0};
  std::thread load([&] {
    for (int i = 0; !stop; ++i) {
      v1::ProjectMessageResponse response;
      const std::string payload = R"({"target_user_id":6,"gift_id":"bye","gift_count":1})";
      if (Project(Message("term", absl::StrCat("T", i), payload), &response, &server).ok() &&
          response.outcome() == v1::PROJECTION_OUTCOME_PROJECTED) {
        ++projected;
      }
    }
  });
  absl::SleepFor(absl::Milliseconds(300));
  std::thread terminate([&] { EXPECT_EQ(server.Terminate(), 0) << server.log(); });
  // During the drain delay the process still serves, but reports itself not ready.
  bool saw_not_serving = false;
  for (int i = 0; i < 20 && !saw_not_serving; ++i) {
    saw_not_serving = server.Health("readiness") == "NOT_SERVING";
    absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_TRUE(saw_not_serving);
  terminate.join();
  stop = true;
  load.join();
  // Every call the server answered PROJECTED is on the wall: nothing lost in the shutdown.
  EXPECT_EQ(db_->QueryInt("SELECT COALESCE(SUM(gift_count), 0) FROM user_gift_wall WHERE "
                          "app_code = 'term'"),
            projected.load());
  EXPECT_GT(projected, 0);
  EXPECT_THAT(server.log(), HasSubstr("stopped"));
}

// A SIGTERM under load, with callers that watch readiness as OPERATIONS recommends (client-side
// health checking on `readiness`): they stop sending to the server as soon as it is not ready, so
// every call is answered OK (committed, and on the wall) or UNAVAILABLE (retry), never CANCELLED.
TEST_F(ServerE2eTest, SigtermUnderLoadAnswersEveryCallOkOrUnavailable) {
  std::map<grpc::StatusCode, int> codes;
  int64_t projected = 0;
  for (int round = 0; round < 3; ++round) {
    ServerProcess server(db_->url(), {"--drain_delay=500ms", "--shutdown_grace=2s"});
    ASSERT_TRUE(server.WaitReady()) << server.log();
    grpc::ChannelArguments args;
    args.SetServiceConfigJSON(testing::kRecommendedServiceConfig);
    auto stub = v1::GiftWallService::NewStub(
        grpc::CreateCustomChannel(server.address(), grpc::InsecureChannelCredentials(), args));
    std::atomic<bool> stop{false};
    absl::Mutex mu;
    std::vector<std::thread> callers;
    for (int t = 0; t < 16; ++t) {
      callers.emplace_back([&, t] {
        for (int i = 0; !stop; ++i) {
          grpc::ClientContext context;
          context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
          v1::ProjectMessageRequest request;
          *request.mutable_message() =
              Message("sigterm", absl::StrCat(round, "-", t, "-", i),
                      R"({"target_user_id":8,"gift_id":"g","gift_count":1})");
          v1::ProjectMessageResponse response;
          const grpc::Status status = stub->ProjectMessage(&context, request, &response);
          absl::MutexLock lock(&mu);
          ++codes[status.error_code()];
          if (status.ok() && response.outcome() == v1::PROJECTION_OUTCOME_PROJECTED) ++projected;
        }
      });
    }
    absl::SleepFor(absl::Milliseconds(500));
    EXPECT_EQ(server.Terminate(), 0) << server.log();
    stop = true;
    for (std::thread& caller : callers) caller.join();
  }
  for (const auto& [code, count] : codes) {
    EXPECT_TRUE(code == grpc::StatusCode::OK || code == grpc::StatusCode::UNAVAILABLE)
        << count << " call(s) answered code " << code;
  }
  EXPECT_GT(codes[grpc::StatusCode::OK], 0);
  EXPECT_EQ(db_->QueryInt("SELECT COALESCE(SUM(gift_count), 0) FROM user_gift_wall WHERE "
                          "app_code = 'sigterm'"),
            projected);
}

}  // namespace
}  // namespace giftwall
