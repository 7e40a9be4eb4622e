// Transport security end to end: the real server over TLS and mutual TLS with certificates made
// at test time, a certificate renewed on disk and served without a restart, the plaintext health
// port for probes, and the client's TLS flags.
#include <signal.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "giftwall/v1/admin.grpc.pb.h"
#include "giftwall/v1/giftwall.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/e2e/reflection_client.h"
#include "tests/e2e/server_process.h"
#include "tests/e2e/test_pki.h"
#include "tests/support/test_database.h"
#include "tests/support/timing.h"

namespace giftwall {
namespace {

using ::testing::HasSubstr;
using testing::Identity;
using testing::ServerProcess;
using testing::TestPki;
using testing::TlsCallerCredentials;

// Health/Check of `service` at `address`: "SERVING", "NOT_SERVING", ..., or the failed call's
// code ("UNAVAILABLE").
std::string CheckHealth(const std::string& address,
                        std::shared_ptr<grpc::ChannelCredentials> credentials,
                        const std::string& service = "readiness") {
  grpc::ChannelArguments args;
  args.SetSslTargetNameOverride("localhost");
  auto stub = grpc::health::v1::Health::NewStub(
      grpc::CreateCustomChannel(address, std::move(credentials), args));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  const grpc::Status status = stub->Check(&context, request, &response);
  if (!status.ok()) {
    return absl::StatusCodeToString(static_cast<absl::StatusCode>(status.error_code()));
  }
  return grpc::health::v1::HealthCheckResponse::ServingStatus_Name(response.status());
}

class TlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { db_ = new testing::TestDatabase(); }
  static void TearDownTestSuite() { delete db_; }

  void SetUp() override {
    server_ca_ = pki_.MakeCa("server-ca");
    client_ca_ = pki_.MakeCa("client-ca");
    server_identity_ = pki_.Issue(server_ca_, "giftwall");
  }

  std::vector<std::string> TlsFlags() const {
    return {absl::StrCat("--tls_cert_file=", server_identity_.cert_file),
            absl::StrCat("--tls_key_file=", server_identity_.key_file)};
  }

  // Starts the server with `flags`, and waits until a caller trusting the server's CA (and
  // presenting `identity`) finds it ready.
  std::unique_ptr<ServerProcess> Start(const std::vector<std::string>& flags,
                                       const Identity& identity = {}) {
    auto server = std::make_unique<ServerProcess>(db_->url(), flags);
    server->UseCredentials(TlsCallerCredentials(server_ca_, identity), "localhost");
    EXPECT_TRUE(server->WaitReady()) << server->log();
    return server;
  }

  static testing::TestDatabase* db_;
  TestPki pki_;
  std::string server_ca_;
  std::string client_ca_;
  Identity server_identity_;
};

testing::TestDatabase* TlsTest::db_ = nullptr;

TEST_F(TlsTest, ServesCallersThatTrustItsCaAndNoOneInPlaintext) {
  auto server = Start(TlsFlags());
  EXPECT_EQ(CheckHealth(server->address(), TlsCallerCredentials(server_ca_)), "SERVING");
  const std::string other_ca = pki_.MakeCa("other-ca");
  EXPECT_EQ(CheckHealth(server->address(), TlsCallerCredentials(other_ca)), "UNAVAILABLE");
  EXPECT_EQ(CheckHealth(server->address(), grpc::InsecureChannelCredentials()), "UNAVAILABLE");
}

TEST_F(TlsTest, MutualTlsTakesOnlyCertificatesItsClientCaSignedAndStillValid) {
  std::vector<std::string> flags = TlsFlags();
  flags.push_back(absl::StrCat("--tls_client_ca_file=", client_ca_));
  const Identity relay = pki_.Issue(client_ca_, "relay");
  auto server = Start(flags, relay);
  EXPECT_EQ(CheckHealth(server->address(), TlsCallerCredentials(server_ca_, relay)), "SERVING");

  // No certificate; one from a CA the server does not take; one of its CA, expired.
  const Identity stranger = pki_.Issue(pki_.MakeCa("stranger-ca"), "stranger");
  const Identity expired = pki_.Issue(client_ca_, "expired", /*days=*/0);
  absl::SleepFor(absl::Seconds(2));
  for (const Identity& identity : {Identity{}, stranger, expired}) {
    EXPECT_EQ(CheckHealth(server->address(), TlsCallerCredentials(server_ca_, identity)),
              "UNAVAILABLE")
        << (identity.cert_file.empty() ? "no certificate" : identity.cert_file);
  }
}

TEST_F(TlsTest, OptionalClientAuthTakesCallersWithoutACertificateButNotABadOne) {
  std::vector<std::string> flags = TlsFlags();
  flags.push_back(absl::StrCat("--tls_client_ca_file=", client_ca_));
  flags.push_back("--tls_client_auth=optional");
  auto server = Start(flags);
  EXPECT_EQ(CheckHealth(server->address(), TlsCallerCredentials(server_ca_)), "SERVING");
  const Identity stranger = pki_.Issue(pki_.MakeCa("stranger-ca"), "stranger");
  EXPECT_EQ(CheckHealth(server->address(), TlsCallerCredentials(server_ca_, stranger)),
            "UNAVAILABLE");
}

// A certificate renewed on disk (here: by a new CA) is served without a restart.
TEST_F(TlsTest, ARenewedCertificateIsServedWithoutARestart) {
  std::vector<std::string> flags = TlsFlags();
  flags.push_back("--tls_refresh_interval=1s");
  auto server = Start(flags);
  const std::string renewed_ca = pki_.MakeCa("renewed-ca");
  const Identity renewed = pki_.Issue(renewed_ca, "giftwall-renewed");
  // As a Kubernetes secret volume does it: the new files appear at once, by rename.
  for (const auto& [from, to] : {std::pair(renewed.key_file, server_identity_.key_file),
                                 std::pair(renewed.cert_file, server_identity_.cert_file)}) {
    ASSERT_EQ(std::rename(from.c_str(), to.c_str()), 0) << from;
  }
  bool renewed_served = false;
  for (int i = 0; i < 100 && !renewed_served; ++i) {
    renewed_served = CheckHealth(server->address(), TlsCallerCredentials(renewed_ca)) == "SERVING";
    if (!renewed_served) absl::SleepFor(absl::Milliseconds(200));
  }
  EXPECT_TRUE(renewed_served) << server->log();
  EXPECT_EQ(kill(server->pid(), 0), 0) << "the same process";
  EXPECT_EQ(CheckHealth(server->address(), TlsCallerCredentials(server_ca_)), "UNAVAILABLE")
      << "the old certificate is gone";
}

// Kubernetes' gRPC probes cannot speak TLS: --health_listen serves them health, and nothing else.
TEST_F(TlsTest, TheHealthPortServesHealthInPlaintextAndNothingElse) {
  const int health_port = process::FreePort();
  std::vector<std::string> flags = TlsFlags();
  flags.push_back(absl::StrCat("--health_listen=127.0.0.1:", health_port));
  flags.push_back("--drain_delay=3s");
  auto server = Start(flags);
  const std::string health_address = absl::StrCat("127.0.0.1:", health_port);
  EXPECT_EQ(CheckHealth(health_address, grpc::InsecureChannelCredentials()), "SERVING");

  auto stub = v1::GiftWallService::NewStub(
      grpc::CreateChannel(health_address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  v1::GetGiftWallRequest request;
  request.set_app_code("tls");
  request.set_user_id(1);
  v1::GetGiftWallResponse response;
  EXPECT_EQ(stub->GetGiftWall(&context, request, &response).error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
  // Nor reflection (on by default on the main port): it would describe every service there.
  testing::ReflectionClient health_reflection(
      grpc::CreateChannel(health_address, grpc::InsecureChannelCredentials()));
  EXPECT_FALSE(health_reflection.ListServices().ok());

  // At SIGTERM readiness turns NOT_SERVING on both ports, while liveness still answers.
  ASSERT_EQ(kill(server->pid(), SIGTERM), 0);
  std::string readiness;
  for (int i = 0; i < 20 && readiness != "NOT_SERVING"; ++i) {
    absl::SleepFor(absl::Milliseconds(50));
    readiness = CheckHealth(health_address, grpc::InsecureChannelCredentials());
  }
  EXPECT_EQ(readiness, "NOT_SERVING");
  EXPECT_EQ(CheckHealth(server->address(), TlsCallerCredentials(server_ca_)), "NOT_SERVING");
  EXPECT_EQ(CheckHealth(health_address, grpc::InsecureChannelCredentials(), ""), "SERVING");
  EXPECT_EQ(server->Terminate(), 0) << server->log();
}

TEST_F(TlsTest, TheClientCallsOverTlsWithItsFlags) {
  std::vector<std::string> flags = TlsFlags();
  flags.push_back(absl::StrCat("--tls_client_ca_file=", client_ca_));
  const Identity operator_identity = pki_.Issue(client_ca_, "operator");
  auto server = Start(flags, operator_identity);
  std::string output;
  EXPECT_EQ(testing::RunCommand({GIFTWALL_CLIENT_BIN, absl::StrCat("--server=", server->address()),
                                 absl::StrCat("--tls_ca_file=", server_ca_),
                                 absl::StrCat("--tls_cert_file=", operator_identity.cert_file),
                                 absl::StrCat("--tls_key_file=", operator_identity.key_file),
                                 "--tls_server_name=localhost", "health"},
                                &output),
            0)
      << output;
  EXPECT_EQ(output, "SERVING\n");
  EXPECT_NE(
      testing::RunCommand(
          {GIFTWALL_CLIENT_BIN, absl::StrCat("--server=", server->address()), "health"}, &output),
      0);
  EXPECT_EQ(testing::RunCommand({GIFTWALL_CLIENT_BIN, "--tls_cert_file=/nonexistent",
                                 "--tls_key_file=/nonexistent", "health"},
                                &output),
            2);
  EXPECT_THAT(output, HasSubstr("--tls_cert_file: cannot read /nonexistent"));
}

// Who may call what: callers identified by certificate or bearer token, each with roles and
// apps, checked before anything is read or written.
class AccessPolicyTest : public TlsTest {
 protected:
  static constexpr char kReaderToken[] = "feed-token-7c1d";
  static constexpr char kBurstToken[] = "burst-token-19aa";
  static constexpr char kCatalogToken[] = "gift-config-token-5e0b";
  static constexpr char kPrivacyToken[] = "profile-token-91d4";
  static constexpr char kModeratorToken[] = "moderation-token-2a7f";

  void SetUp() override {
    TlsTest::SetUp();
    relay_ = pki_.Issue(client_ca_, "relay.wallet");
    oncall_ = pki_.Issue(client_ca_, "oncall.ops");
    stranger_ = pki_.Issue(client_ca_, "stranger");
    mesh_ = pki_.Issue(client_ca_, "mesh", 2, "URI:spiffe://wallet/feed,email:ops@wallet.example");
    policy_file_ = pki_.dir() + "/policy.json";
    WritePolicy(R"(["yoyo"])");
    std::vector<std::string> flags = TlsFlags();
    flags.insert(flags.end(),
                 {absl::StrCat("--tls_client_ca_file=", client_ca_), "--tls_client_auth=optional",
                  "--enable_admin", absl::StrCat("--access_policy_file=", policy_file_),
                  "--access_policy_refresh=200ms", "--catchup_interval=0",
                  absl::StrCat("--metrics_listen=127.0.0.1:", metrics_port_)});
    server_ = Start(flags);
  }

  // The reader's apps, as a JSON list.
  void WritePolicy(const std::string& reader_apps) {
    const std::string tmp = policy_file_ + ".tmp";
    std::ofstream(tmp) << absl::StrFormat(
        R"({"callers": [
             {"name": "relay", "certificate_names": ["relay.wallet"], "roles": ["relay"],
              "app_codes": ["yoyo", "chat"]},
             {"name": "oncall", "certificate_names": ["oncall.ops"], "roles": ["admin"],
              "app_codes": ["yoyo"]},
             {"name": "feed", "token_sha256": ["%s"], "roles": ["reader"], "app_codes": %s},
             {"name": "burst", "token_sha256": ["%s"], "roles": ["reader"], "app_codes": ["*"],
              "max_calls_per_second": 3},
             {"name": "gift-config", "token_sha256": ["%s"], "roles": ["catalog"],
              "app_codes": ["yoyo"]},
             {"name": "profile", "token_sha256": ["%s"], "roles": ["privacy"],
              "app_codes": ["yoyo"]},
             {"name": "moderation", "token_sha256": ["%s"], "roles": ["reader", "moderator"],
              "app_codes": ["yoyo"]},
             {"name": "mesh", "certificate_names": ["spiffe://wallet/feed"], "roles": ["reader"],
              "app_codes": ["*"]},
             {"name": "by-address", "certificate_names": ["127.0.0.1", "ops@wallet.example"],
              "roles": ["admin"], "app_codes": ["*"]}]})",
        Sha256Hex(kReaderToken), reader_apps, Sha256Hex(kBurstToken), Sha256Hex(kCatalogToken),
        Sha256Hex(kPrivacyToken), Sha256Hex(kModeratorToken));
    ASSERT_EQ(std::rename(tmp.c_str(), policy_file_.c_str()), 0);
  }

  static std::string Sha256Hex(const std::string& text) {
    std::string output;
    EXPECT_EQ(testing::RunCommand(
                  {"/bin/sh", "-c", absl::StrCat("printf %s '", text, "' | sha256sum")}, &output),
              0);
    return output.substr(0, 64);
  }

  std::shared_ptr<grpc::Channel> ChannelAs(const Identity& identity) const {
    grpc::ChannelArguments args;
    args.SetSslTargetNameOverride("localhost");
    return grpc::CreateCustomChannel(server_->address(), TlsCallerCredentials(server_ca_, identity),
                                     args);
  }

  grpc::Status Project(const Identity& identity, const std::string& token,
                       const std::vector<std::pair<std::string, std::string>>& app_and_ids) {
    auto stub = v1::GiftWallService::NewStub(ChannelAs(identity));
    grpc::ClientContext context;
    if (!token.empty()) context.AddMetadata("authorization", absl::StrCat("Bearer ", token));
    v1::ProjectMessagesRequest request;
    for (const auto& [app, id] : app_and_ids) {
      *request.add_messages() =
          testing::Message(app, id, R"({"target_user_id":5,"gift_id":"rose","gift_count":1})");
    }
    v1::ProjectMessagesResponse response;
    return stub->ProjectMessages(&context, request, &response);
  }

  grpc::Status ReadWall(const Identity& identity, const std::string& token,
                        const std::string& app) {
    auto stub = v1::GiftWallService::NewStub(ChannelAs(identity));
    grpc::ClientContext context;
    if (!token.empty()) context.AddMetadata("authorization", absl::StrCat("Bearer ", token));
    v1::GetGiftWallRequest request;
    request.set_app_code(app);
    request.set_user_id(5);
    v1::GetGiftWallResponse response;
    return stub->GetGiftWall(&context, request, &response);
  }

  grpc::Status Status(const Identity& identity, const std::string& app) {
    auto stub = v1::ProjectionAdminService::NewStub(ChannelAs(identity));
    grpc::ClientContext context;
    v1::GetProjectionStatusRequest request;
    request.set_app_code(app);
    v1::GetProjectionStatusResponse response;
    return stub->GetProjectionStatus(&context, request, &response);
  }

  int64_t LedgerRows(const std::string& event_id) {
    return db_->QueryInt(absl::StrCat(
        "SELECT COUNT(*) FROM wallet_projection_events WHERE event_id = '", event_id, "'"));
  }

  Identity relay_, oncall_, stranger_, mesh_;
  std::string policy_file_;
  const int metrics_port_ = process::FreePort();
  std::unique_ptr<ServerProcess> server_;
};

TEST_F(AccessPolicyTest, EachRoleCallsItsMethodsOnItsAppsAndNothingElse) {
  const Identity none;
  const auto code = [](const grpc::Status& s) { return s.error_code(); };
  // relay: projects on its apps; a batch with one other app is refused whole.
  EXPECT_EQ(code(Project(relay_, "", {{"yoyo", "A1"}, {"chat", "A2"}})), grpc::StatusCode::OK);
  EXPECT_EQ(code(Project(relay_, "", {{"yoyo", "A3"}, {"other", "A4"}})),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(LedgerRows("A3") + LedgerRows("A4"), 0);
  EXPECT_EQ(code(ReadWall(relay_, "", "yoyo")), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(code(Status(relay_, "yoyo")), grpc::StatusCode::PERMISSION_DENIED);
  // reader, by token: reads its app only, projects nothing.
  EXPECT_EQ(code(ReadWall(none, kReaderToken, "yoyo")), grpc::StatusCode::OK);
  const grpc::Status other_app = ReadWall(none, kReaderToken, "chat");
  EXPECT_EQ(code(other_app), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(other_app.error_message(), "caller \"feed\" may not touch app_code chat");
  EXPECT_EQ(code(Project(none, kReaderToken, {{"yoyo", "B1"}})),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(LedgerRows("B1"), 0);
  // nobody, or somebody the policy does not know: UNAUTHENTICATED, nothing written.
  EXPECT_EQ(code(ReadWall(none, "", "yoyo")), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(code(ReadWall(none, "feed-token-7c1e", "yoyo")), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(code(Project(stranger_, "", {{"yoyo", "C1"}})), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(LedgerRows("C1"), 0);
  // Health stays open to anyone who reaches the port.
  EXPECT_EQ(CheckHealth(server_->address(), TlsCallerCredentials(server_ca_)), "SERVING");
}

// Each role against each method: a caller may call its role's methods and no other.
TEST_F(AccessPolicyTest, EveryRoleAgainstEveryMethod) {
  struct Who {
    std::string name;
    Identity identity;
    std::string token;
  };
  const std::vector<Who> callers = {{"relay", relay_, ""},
                                    {"feed (reader)", Identity{}, kReaderToken},
                                    {"oncall", oncall_, ""},
                                    {"gift-config", Identity{}, kCatalogToken},
                                    {"profile", Identity{}, kPrivacyToken}};
  const auto call = [&](const Who& who, const std::string& method) {
    auto channel = ChannelAs(who.identity);
    grpc::ClientContext context;
    if (!who.token.empty()) context.AddMetadata("authorization", "Bearer " + who.token);
    if (method == "ProjectMessage") {
      v1::ProjectMessageRequest request;
      *request.mutable_message() = testing::Message(
          "yoyo", "M-" + who.name, R"({"target_user_id":6,"gift_id":"lily","gift_count":1})");
      v1::ProjectMessageResponse response;
      return v1::GiftWallService::NewStub(channel)->ProjectMessage(&context, request, &response);
    }
    if (method == "ListGiftWallSenders") {
      v1::ListGiftWallSendersRequest request;
      request.set_app_code("yoyo");
      request.set_user_id(6);
      request.set_gift_id("lily");
      v1::ListGiftWallSendersResponse response;
      return v1::GiftWallService::NewStub(channel)->ListGiftWallSenders(&context, request,
                                                                        &response);
    }
    if (method == "PutGiftCatalog") {
      v1::PutGiftCatalogRequest request;
      request.set_app_code("yoyo");
      request.add_items()->set_gift_id("lily-" + who.name);
      v1::PutGiftCatalogResponse response;
      return v1::GiftWallService::NewStub(channel)->PutGiftCatalog(&context, request, &response);
    }
    if (method == "ListGiftCatalog") {
      v1::ListGiftCatalogRequest request;
      request.set_app_code("yoyo");
      v1::ListGiftCatalogResponse response;
      return v1::GiftWallService::NewStub(channel)->ListGiftCatalog(&context, request, &response);
    }
    if (method == "SetSenderPrivacy") {
      v1::SetSenderPrivacyRequest request;
      request.set_app_code("yoyo");
      request.set_sender_user_id(who.name.size());
      request.set_hidden(true);
      v1::SetSenderPrivacyResponse response;
      return v1::GiftWallService::NewStub(channel)->SetSenderPrivacy(&context, request, &response);
    }
    if (method == "GetSentGifts") {
      v1::GetSentGiftsRequest request;
      request.set_app_code("yoyo");
      request.set_sender_user_id(6);
      v1::GetSentGiftsResponse response;
      const grpc::Status status =
          v1::GiftWallService::NewStub(channel)->GetSentGifts(&context, request, &response);
      // Let in, to be told that the app keeps no sent wall.
      return status.error_code() == grpc::StatusCode::FAILED_PRECONDITION ? grpc::Status::OK
                                                                          : status;
    }
    if (method == "RunCatchUp") {
      v1::RunCatchUpRequest request;
      request.set_app_code("yoyo");
      v1::RunCatchUpResponse response;
      return v1::ProjectionAdminService::NewStub(channel)->RunCatchUp(&context, request, &response);
    }
    if (method == "GetGiftWall") return ReadWall(who.identity, who.token, "yoyo");
    if (method == "ProjectMessages")
      return Project(who.identity, who.token, {{"yoyo", "N-" + who.name}});
    v1::GetProjectionStatusRequest request;
    request.set_app_code("yoyo");
    v1::GetProjectionStatusResponse response;
    return v1::ProjectionAdminService::NewStub(channel)->GetProjectionStatus(&context, request,
                                                                             &response);
  };
  const std::map<std::string, std::string> role_of = {
      {"ProjectMessage", "relay"},       {"ProjectMessages", "relay"},
      {"GetGiftWall", "feed (reader)"},  {"ListGiftWallSenders", "feed (reader)"},
      {"GetProjectionStatus", "oncall"}, {"RunCatchUp", "oncall"},
      {"PutGiftCatalog", "gift-config"}, {"ListGiftCatalog", "feed (reader)"},
      {"SetSenderPrivacy", "profile"},   {"GetSentGifts", "feed (reader)"}};
  for (const auto& [method, allowed] : role_of) {
    for (const Who& who : callers) {
      const grpc::Status status = call(who, method);
      EXPECT_EQ(status.error_code(),
                who.name == allowed ? grpc::StatusCode::OK : grpc::StatusCode::PERMISSION_DENIED)
          << who.name << " calling " << method << ": " << status.error_message();
    }
  }
  EXPECT_EQ(LedgerRows("M-relay") + LedgerRows("N-relay"), 2);
  EXPECT_EQ(LedgerRows("M-oncall") + LedgerRows("N-oncall") + LedgerRows("M-feed (reader)") +
                LedgerRows("M-gift-config"),
            0);
  // Only the catalogue's writer wrote the catalogue.
  EXPECT_EQ(db_->QueryString("SELECT GROUP_CONCAT(gift_id) FROM giftwall_gift_catalog WHERE "
                             "app_code = 'yoyo'"),
            "lily-gift-config");
  // Only the profile service set a sender's privacy.
  EXPECT_EQ(db_->QueryString("SELECT GROUP_CONCAT(CONCAT(sender_user_id, ' by ', updated_by)) "
                             "FROM giftwall_sender_privacy"),
            "7 by profile");
}

// The moderator role sees every sender as they are, whoever the request says is looking; a
// plain reader sees a sender who hid masked. Setting privacy is audited with what it set.
TEST_F(AccessPolicyTest, Rule18_AModeratorSeesEverySenderAndSettingPrivacyIsAudited) {
  auto gift = v1::GiftWallService::NewStub(ChannelAs(relay_));
  {
    grpc::ClientContext context;
    v1::ProjectMessageRequest request;
    *request.mutable_message() = testing::Message(
        "yoyo", "ANON1",
        R"({"target_user_id":5,"gift_id":"rose","gift_count":1,"sender_user_id":9,"anonymous":true})");
    v1::ProjectMessageResponse response;
    ASSERT_TRUE(gift->ProjectMessage(&context, request, &response).ok());
  }
  const auto top_sender_as = [&](const std::string& token, int64_t viewer) -> int64_t {
    auto stub = v1::GiftWallService::NewStub(ChannelAs(Identity{}));
    grpc::ClientContext context;
    context.AddMetadata("authorization", absl::StrCat("Bearer ", token));
    v1::GetGiftWallRequest request;
    request.set_app_code("yoyo");
    request.set_user_id(5);
    request.set_viewer_user_id(viewer);
    v1::GetGiftWallResponse response;
    const grpc::Status status = stub->GetGiftWall(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    if (!status.ok() || response.items_size() != 1) return -1;
    const v1::GiftWallSender& top = response.items(0).top_sender();
    EXPECT_EQ(top.anonymous(), top.user_id() == 0);
    EXPECT_EQ(top.sent_count(), 1);
    return top.user_id();
  };
  EXPECT_EQ(top_sender_as(kReaderToken, 0), 0);
  EXPECT_EQ(top_sender_as(kReaderToken, 77), 0);
  EXPECT_EQ(top_sender_as(kReaderToken, 9), 9);
  EXPECT_EQ(top_sender_as(kReaderToken, 5), 9);
  EXPECT_EQ(top_sender_as(kModeratorToken, 0), 9);
  EXPECT_EQ(top_sender_as(kModeratorToken, 77), 9);

  auto profile = v1::GiftWallService::NewStub(ChannelAs(Identity{}));
  grpc::ClientContext context;
  context.AddMetadata("authorization", absl::StrCat("Bearer ", kPrivacyToken));
  v1::SetSenderPrivacyRequest request;
  request.set_app_code("yoyo");
  request.set_sender_user_id(9);
  request.set_hidden(true);
  v1::SetSenderPrivacyResponse response;
  ASSERT_TRUE(profile->SetSenderPrivacy(&context, request, &response).ok());
  EXPECT_TRUE(response.changed());
  EXPECT_THAT(server_->log(), HasSubstr("audit: caller=profile method=SetSenderPrivacy "
                                        "app_code=yoyo sender_user_id=9 hidden=true result=OK"));
}

// Limits are per caller: "burst" may call 3 times a second, and nobody else is slowed by it.
TEST_F(AccessPolicyTest, ACallerPastItsRateGetsResourceExhaustedAndOthersDoNot) {
  // One connection, so that the calls come faster than 3 a second even on a slow machine.
  auto stub = v1::GiftWallService::NewStub(ChannelAs(Identity{}));
  int admitted = 0;
  grpc::Status refused;
  for (int i = 0; i < 50 && refused.ok(); ++i) {
    grpc::ClientContext context;
    context.AddMetadata("authorization", absl::StrCat("Bearer ", kBurstToken));
    v1::GetGiftWallRequest request;
    request.set_app_code("yoyo");
    request.set_user_id(5);
    v1::GetGiftWallResponse response;
    refused = stub->GetGiftWall(&context, request, &response);
    if (refused.ok()) ++admitted;
  }
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(refused.error_message(), HasSubstr("caller \"burst\" is past its 3 calls a second"));
  EXPECT_GE(admitted, 3);
  EXPECT_TRUE(ReadWall(Identity{}, kReaderToken, "yoyo").ok()) << "others are not slowed";
}

TEST_F(AccessPolicyTest, TheClientSendsItsTokenFromAFile) {
  const std::string token_file = pki_.dir() + "/token";
  std::ofstream(token_file) << kReaderToken << "\n";
  const std::vector<std::string> wall = {GIFTWALL_CLIENT_BIN,
                                         absl::StrCat("--server=", server_->address()),
                                         absl::StrCat("--tls_ca_file=", server_ca_),
                                         "--tls_server_name=localhost",
                                         "wall",
                                         "--app_code=yoyo",
                                         "--user_id=5"};
  std::string output;
  EXPECT_EQ(testing::RunCommand(wall, &output), 1);
  EXPECT_THAT(output, HasSubstr("UNAUTHENTICATED"));
  std::vector<std::string> with_token = wall;
  with_token.insert(with_token.begin() + 1, absl::StrCat("--token_file=", token_file));
  EXPECT_EQ(testing::RunCommand(with_token, &output), 0) << output;
  EXPECT_EQ(
      testing::RunCommand(
          {GIFTWALL_CLIENT_BIN, absl::StrCat("--token_file=", token_file), "health"}, &output),
      2);
  EXPECT_THAT(output, HasSubstr("--token_file: a token goes over TLS only"));
}

// Calls are counted by the policy's name for their caller, so the policy bounds the label set;
// a call from nobody it knows counts as "unidentified".
TEST_F(AccessPolicyTest, CallsAreCountedByCallerAndCode) {
  EXPECT_TRUE(ReadWall(Identity{}, kReaderToken, "yoyo").ok());
  EXPECT_TRUE(ReadWall(Identity{}, kReaderToken, "yoyo").ok());
  EXPECT_EQ(ReadWall(Identity{}, kReaderToken, "chat").error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Status(oncall_, "Bad App!").error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(CheckHealth(server_->address(), TlsCallerCredentials(server_ca_, stranger_)),
            "SERVING");
  const std::string metrics = testing::HttpGet(metrics_port_, "/metrics");
  for (const char* series :
       {R"(giftwall_caller_calls_total{caller="feed",code="OK"} 2)",
        R"(giftwall_caller_calls_total{caller="feed",code="PermissionDenied"} 1)",
        R"(giftwall_caller_calls_total{caller="oncall",code="InvalidArgument"} 1)",
        R"(giftwall_caller_calls_total{caller="unidentified",code="OK"} )"}) {
    EXPECT_TRUE(absl::StrContains(metrics, series)) << series;
  }
  EXPECT_FALSE(absl::StrContains(metrics, R"(caller="stranger")"));
}

TEST_F(AccessPolicyTest, AdminCallsAreAuditLoggedAndTokensNever) {
  EXPECT_TRUE(Status(oncall_, "yoyo").ok());
  EXPECT_EQ(Status(oncall_, "chat").error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Status(Identity{}, "yoyo").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  ReadWall(Identity{}, kReaderToken, "yoyo");
  const std::string log = server_->log();
  EXPECT_THAT(log,
              HasSubstr("audit: caller=oncall method=GetProjectionStatus app_code=yoyo result=OK"));
  EXPECT_THAT(log, HasSubstr("audit: caller=oncall method=GetProjectionStatus app_code=chat "
                             "result=PERMISSION_DENIED"));
  // A caller the policy does not know is refused before its request is read, by the TLS
  // credentials' processor: logged and counted there, never reaching the handler's audit.
  EXPECT_THAT(log, HasSubstr("refused before reading its request"));
  EXPECT_THAT(log, ::testing::Not(HasSubstr("audit: caller=(unidentified)")));
  EXPECT_THAT(log, ::testing::Not(HasSubstr(kReaderToken)));

  // Refused for its arguments: audit-logged too.
  EXPECT_EQ(Status(oncall_, "Bad App!").error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(server_->log(), HasSubstr("audit: caller=oncall method=GetProjectionStatus "
                                        "app_code=Bad App! result=INVALID_ARGUMENT"));
}

// A caller the policy does not know is refused from its certificate and metadata, before its
// request is read: eight parallel 30 MB requests (under the receive limit) leave the server's
// peak memory nearly where it was.
TEST_F(AccessPolicyTest, StrangersAreRefusedBeforeTheirRequestsAreRead) {
  const double peak_before = process::StatusMib(server_->pid(), "VmHWM");
  ASSERT_GT(peak_before, 0);
  v1::ProjectMessageRequest request;
  *request.mutable_message() = testing::Message("yoyo", "BIG", std::string(30 << 20, 'x'));
  std::vector<std::thread> callers;
  std::vector<grpc::Status> answers(8);
  for (size_t i = 0; i < answers.size(); ++i) {
    callers.emplace_back([&, i] {
      auto stub = v1::GiftWallService::NewStub(ChannelAs(stranger_));
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
      v1::ProjectMessageResponse response;
      answers[i] = stub->ProjectMessage(&context, request, &response);
    });
  }
  for (std::thread& t : callers) t.join();
  for (const grpc::Status& answer : answers) {
    EXPECT_EQ(answer.error_code(), grpc::StatusCode::UNAUTHENTICATED) << answer.error_message();
  }
  if (testing::kMemoryBoundsHold) {
    EXPECT_LT(process::StatusMib(server_->pid(), "VmHWM"), peak_before + 100) << "MiB";
  }
  // Its line comes from the processor, with a trace id of its own: no handler saw the call.
  EXPECT_THAT(server_->log(), ::testing::ContainsRegex(
                                  "refused before reading its request.*trace_id=\"[0-9a-f]{32}\""));
  // Health stays open to them, and a known caller's calls go on.
  EXPECT_EQ(CheckHealth(server_->address(), TlsCallerCredentials(server_ca_, stranger_)),
            "SERVING");
  EXPECT_TRUE(ReadWall(Identity{}, kReaderToken, "yoyo").ok());
  EXPECT_EQ(LedgerRows("BIG"), 0);
}

// certificate_names are DNS or URI names: every test certificate also carries IP 127.0.0.1, and
// mesh's an email address, which name nobody. A blank bearer token is no token.
TEST_F(AccessPolicyTest, OnlyDnsAndUriNamesIdentifyAndABlankTokenNobody) {
  EXPECT_TRUE(ReadWall(mesh_, "", "yoyo").ok()) << "by its URI name";
  EXPECT_EQ(Status(mesh_, "yoyo").error_code(), grpc::StatusCode::PERMISSION_DENIED)
      << "mesh, a reader: not by-address through its email name";
  EXPECT_EQ(Status(stranger_, "yoyo").error_code(), grpc::StatusCode::UNAUTHENTICATED)
      << "not by-address through its IP address";
  for (const std::string blank : {" ", "    "}) {
    EXPECT_EQ(ReadWall(Identity{}, blank, "yoyo").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  }
}

// A bearer token counts over TLS only: in plaintext anyone on the path could replay it.
TEST_F(AccessPolicyTest, ATokenInPlaintextIdentifiesNobody) {
  ServerProcess plaintext(
      db_->url(), {absl::StrCat("--access_policy_file=", policy_file_), "--catchup_interval=0"});
  ASSERT_TRUE(plaintext.WaitReady()) << plaintext.log();
  auto stub = v1::GiftWallService::NewStub(plaintext.Channel());
  grpc::ClientContext context;
  context.AddMetadata("authorization", absl::StrCat("Bearer ", kReaderToken));
  v1::GetGiftWallRequest request;
  request.set_app_code("yoyo");
  request.set_user_id(5);
  v1::GetGiftWallResponse response;
  EXPECT_EQ(stub->GetGiftWall(&context, request, &response).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
}

TEST_F(AccessPolicyTest, APolicyChangeTakesEffectWithoutARestartAndABadOneIsIgnored) {
  EXPECT_EQ(ReadWall(Identity{}, kReaderToken, "chat").error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  WritePolicy(R"(["yoyo", "chat"])");
  bool granted = false;
  for (int i = 0; i < 100 && !granted; ++i) {
    granted = ReadWall(Identity{}, kReaderToken, "chat").ok();
    if (!granted) absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_TRUE(granted) << server_->log();

  std::ofstream(policy_file_) << R"({"callers": [{"name": "x", "roles": ["nope"]}]})";
  bool reported = false;
  for (int i = 0; i < 100 && !reported; ++i) {
    reported = absl::StrContains(server_->log(), "the previous policy stays in force");
    if (!reported) absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_TRUE(reported) << server_->log();
  EXPECT_TRUE(ReadWall(Identity{}, kReaderToken, "chat").ok());
}

TEST(TlsConfig, TheServerServesTlsOrPlaintextWhenToldAndSaysWhatIsWrong) {
  TestPki pki;
  const std::string ca = pki.MakeCa("ca");
  const Identity identity = pki.Issue(ca, "giftwall");
  const std::string db = "--mysql_url=mysql://u@h/d";
  const std::string cert = absl::StrCat("--tls_cert_file=", identity.cert_file);
  const std::string key = absl::StrCat("--tls_key_file=", identity.key_file);
  struct Case {
    std::vector<std::string> flags;
    std::string error;
  };
  for (const Case& c : std::vector<Case>{
           {{db}, "--tls_cert_file: is required to serve: TLS with --tls_cert_file and"},
           {{db, "--plaintext", cert, key}, "--plaintext: conflicts with --tls_cert_file"},
           {{db, cert}, "--tls_key_file: is required with --tls_cert_file"},
           {{db, cert, absl::StrCat("--tls_key_file=", identity.cert_file)},
            "--tls_key_file: " + identity.cert_file + " holds no PEM private key block"},
           {{db, cert, key, "--tls_client_ca_file=/nonexistent"},
            "--tls_client_ca_file: cannot read /nonexistent"},
           {{db, cert, key, "--tls_client_auth=maybe"},
            "--tls_client_auth: must be require or optional"},
       }) {
    std::vector<std::string> args = {GIFTWALL_SERVER_BIN};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    std::string output;
    EXPECT_EQ(testing::RunCommand(args, &output), 2) << output;
    EXPECT_THAT(output, HasSubstr(c.error));
  }
}

}  // namespace
}  // namespace giftwall
