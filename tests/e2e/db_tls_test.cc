// TLS from the service to its database (--mysql_url's ssl-mode, ssl-ca, ssl-cert, ssl-key), on a
// private MariaDB with a certificate made at test time, for users that REQUIRE SSL or X509.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "giftwall/v1/giftwall.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "server/storage/mysql_url.h"
#include "server/storage/sql_connection.h"
#include "tests/e2e/private_mariadb.h"
#include "tests/e2e/server_process.h"
#include "tests/e2e/test_pki.h"
#include "tests/support/test_database.h"

namespace giftwall {
namespace {

using testing::PrivateMariaDb;
using testing::ServerProcess;
using testing::TestPki;

// Opens a session as `url` says; on success, the session's TLS cipher ("" for plaintext).
absl::StatusOr<std::string> Cipher(const std::string& url) {
  absl::StatusOr<storage::MysqlEndpoint> endpoint = storage::ParseMysqlUrl(url);
  if (!endpoint.ok()) return endpoint.status();
  absl::StatusOr<std::unique_ptr<storage::SqlConnection>> conn =
      storage::SqlConnection::Open(*endpoint, storage::SessionOptions{});
  if (!conn.ok()) return conn.status();
  std::string cipher;
  absl::Status s = (*conn)->Query("SHOW SESSION STATUS LIKE 'Ssl_cipher'", {},
                                  [&](const storage::SqlRow& row) { cipher = row.Str(1); });
  if (!s.ok()) return s;
  return cipher;
}

class DbTlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    pki_ = new TestPki();
    ca_ = new std::string(pki_->MakeCa("db-ca"));
    other_ca_ = new std::string(pki_->MakeCa("other-ca"));
    // The server's certificate names localhost and 127.0.0.1; the server listens on 127.0.0.2
    // too, an address its certificate does not name.
    const testing::Identity server = pki_->Issue(*ca_, "db");
    client_ = new testing::Identity(pki_->Issue(*ca_, "giftwall"));
    mariadb_ = new PrivateMariaDb(
        {absl::StrCat("--ssl-ca=", *ca_), absl::StrCat("--ssl-cert=", server.cert_file),
         absl::StrCat("--ssl-key=", server.key_file), "--bind-address=127.0.0.1,127.0.0.2"});
    mariadb_->Start();
    mariadb_->Exec(
        "CREATE DATABASE giftwall CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;"
        "CREATE USER tls@'%' IDENTIFIED BY 'pw' REQUIRE SSL;"
        "GRANT ALL ON giftwall.* TO tls@'%';"
        "CREATE USER x509@'%' IDENTIFIED BY 'pw' REQUIRE X509;"
        "GRANT ALL ON giftwall.* TO x509@'%';");
  }
  static void TearDownTestSuite() {
    delete mariadb_;
    delete client_;
    delete other_ca_;
    delete ca_;
    delete pki_;
  }

  static std::string Url(const std::string& user, const std::string& params,
                         const std::string& host = "127.0.0.1") {
    return absl::StrCat("mysql://", user, ":pw@", host, ":", mariadb_->port(), "/giftwall",
                        params.empty() ? "" : "?", params);
  }
  static std::string VerifiedParams() {
    return absl::StrCat("ssl-mode=VERIFY_IDENTITY&ssl-ca=", *ca_);
  }

  static TestPki* pki_;
  static std::string* ca_;
  static std::string* other_ca_;
  static testing::Identity* client_;
  static PrivateMariaDb* mariadb_;
};

TestPki* DbTlsTest::pki_ = nullptr;
std::string* DbTlsTest::ca_ = nullptr;
std::string* DbTlsTest::other_ca_ = nullptr;
testing::Identity* DbTlsTest::client_ = nullptr;
PrivateMariaDb* DbTlsTest::mariadb_ = nullptr;

TEST_F(DbTlsTest, APlaintextSessionIsRefusedByAUserThatRequiresSsl) {
  absl::StatusOr<std::string> cipher = Cipher(Url("tls", "ssl-mode=DISABLED"));
  ASSERT_FALSE(cipher.ok()) << "plaintext got through, cipher " << *cipher;
  EXPECT_EQ(cipher.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(absl::StrContains(cipher.status().message(), "1045")) << cipher.status();
}

TEST_F(DbTlsTest, EveryModeThatAsksForTlsGetsIt) {
  for (const std::string& params : {std::string(), std::string("ssl-mode=PREFERRED"),
                                    std::string("ssl-mode=REQUIRED"), VerifiedParams()}) {
    absl::StatusOr<std::string> cipher = Cipher(Url("tls", params));
    ASSERT_TRUE(cipher.ok()) << params << ": " << cipher.status();
    EXPECT_NE(*cipher, "") << params;
  }
}

TEST_F(DbTlsTest, VerifyIdentityRefusesAHostTheCertificateDoesNotName) {
  // The same server, reached by an address its certificate does not name.
  absl::StatusOr<std::string> cipher = Cipher(Url("tls", "ssl-mode=REQUIRED", "127.0.0.2"));
  ASSERT_TRUE(cipher.ok()) << "the address serves: " << cipher.status();
  cipher = Cipher(Url("tls", VerifiedParams(), "127.0.0.2"));
  ASSERT_FALSE(cipher.ok()) << "a certificate for 127.0.0.1 accepted for 127.0.0.2";
  EXPECT_EQ(cipher.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(absl::StrContains(cipher.status().message(), "mysql error 2026")) << cipher.status();
}

TEST_F(DbTlsTest, VerifyIdentityRefusesACertificateOfAnotherCa) {
  absl::StatusOr<std::string> cipher =
      Cipher(Url("tls", absl::StrCat("ssl-mode=VERIFY_IDENTITY&ssl-ca=", *other_ca_)));
  ASSERT_FALSE(cipher.ok()) << "a certificate of another CA accepted";
  EXPECT_EQ(cipher.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(absl::StrContains(cipher.status().message(), "mysql error 2026")) << cipher.status();
}

TEST_F(DbTlsTest, AClientCertificateIsShownToAUserThatRequiresOne) {
  absl::StatusOr<std::string> cipher = Cipher(Url("x509", VerifiedParams()));
  EXPECT_FALSE(cipher.ok()) << "REQUIRE X509 let a session in without a certificate";
  EXPECT_TRUE(absl::StrContains(cipher.status().message(), "mysql error 1045")) << cipher.status();
  cipher = Cipher(Url("x509", absl::StrCat(VerifiedParams(), "&ssl-cert=", client_->cert_file,
                                           "&ssl-key=", client_->key_file)));
  ASSERT_TRUE(cipher.ok()) << cipher.status();
  EXPECT_NE(*cipher, "");
}

// REQUIRED means TLS or no session, also when the server offers none (the connector alone would
// fall back to plaintext); PREFERRED then runs in plaintext.
TEST(DbTlsWithoutServerTls, RequiredRefusesAServerWithoutTlsAndPreferredFallsBack) {
  PrivateMariaDb mariadb;
  mariadb.Start();
  const std::string url = mariadb.server_url();
  absl::StatusOr<std::string> cipher = Cipher(absl::StrCat(url, "?ssl-mode=REQUIRED"));
  ASSERT_FALSE(cipher.ok()) << "REQUIRED ran in plaintext";
  EXPECT_EQ(cipher.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(
      absl::StrContains(cipher.status().message(), "needs TLS, and the server did not agree to it"))
      << cipher.status();
  cipher = Cipher(url);
  ASSERT_TRUE(cipher.ok()) << cipher.status();
  EXPECT_EQ(*cipher, "");
}

// The server opens every session (migrate, pools, readiness, scan locks) as --mysql_url says:
// as a user that REQUIRE SSL, over a verified certificate, it migrates, becomes ready and
// projects.
TEST_F(DbTlsTest, TheServerRunsOverVerifiedTlsAndRefusesVerifyCaAtStart) {
  std::string output;
  EXPECT_NE(testing::RunCommand({GIFTWALL_SERVER_BIN, "migrate",
                                 absl::StrCat("--mysql_url=", Url("tls", "ssl-mode=VERIFY_CA"))},
                                &output),
            0);
  EXPECT_TRUE(absl::StrContains(output, "VERIFY_CA cannot be given exactly")) << output;

  const std::string url = Url("tls", VerifiedParams());
  ASSERT_EQ(testing::RunCommand({GIFTWALL_SERVER_BIN, "migrate", absl::StrCat("--mysql_url=", url)},
                                &output),
            0)
      << output;
  ServerProcess server(url, {"--catchup_interval=1s"});
  ASSERT_TRUE(server.WaitReady()) << server.log();
  auto stub = v1::GiftWallService::NewStub(server.Channel());
  grpc::ClientContext context;
  v1::ProjectMessageRequest request;
  *request.mutable_message() =
      testing::Message("demo", "e1", testing::GiftPayloadJson(7, "rose", 2, 9, 10));
  v1::ProjectMessageResponse response;
  grpc::Status s = stub->ProjectMessage(&context, request, &response);
  ASSERT_TRUE(s.ok()) << s.error_message() << "\n" << server.log();
  EXPECT_EQ(response.outcome(), v1::PROJECTION_OUTCOME_PROJECTED);
}

}  // namespace
}  // namespace giftwall
