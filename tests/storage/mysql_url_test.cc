#include "server/storage/mysql_url.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace giftwall::storage {
namespace {

TEST(ParseMysqlUrl, ReadsEveryPart) {
  absl::StatusOr<MysqlEndpoint> ep = ParseMysqlUrl("mysql://app:s%40cret@db.local:3307/giftwall");
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_EQ(ep->user, "app");
  EXPECT_EQ(ep->password, "s@cret");
  EXPECT_EQ(ep->host, "db.local");
  EXPECT_EQ(ep->port, 3307);
  EXPECT_EQ(ep->database, "giftwall");
  EXPECT_EQ(ep->Describe(), "mysql://app@db.local:3307/giftwall");
}

TEST(ParseMysqlUrl, DefaultsAndVariants) {
  absl::StatusOr<MysqlEndpoint> ep = ParseMysqlUrl("mysql://root@127.0.0.1/db");
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_EQ(ep->port, 3306);
  EXPECT_EQ(ep->password, "");
  ep = ParseMysqlUrl("mysql://root:p:w@[::1]:3310/db");
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_EQ(ep->host, "::1");
  EXPECT_EQ(ep->port, 3310);
  EXPECT_EQ(ep->password, "p:w");
  ep = ParseMysqlUrl("mysql://root@localhost/db?socket=/run/mysqld/mysqld.sock");
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_EQ(ep->socket, "/run/mysqld/mysqld.sock");
}

TEST(ParseMysqlUrl, RejectsWhatIsNotAUrlOfTheForm) {
  for (const char* bad : {"", "postgres://u@h/db", "mysql://h/db", "mysql://u@h", "mysql://u@h/",
                          "mysql://@h/db", "mysql://u@h:port/db", "mysql://u@h:70000/db",
                          "mysql://u@h/db?ssl=1", "mysql://u%zz@h/db", "mysql://u@/db"}) {
    absl::StatusOr<MysqlEndpoint> ep = ParseMysqlUrl(bad);
    ASSERT_FALSE(ep.ok()) << bad;
    EXPECT_EQ(ep.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(ep.status().message().substr(0, 10), "mysql_url:") << ep.status();
  }
}

TEST(ParseMysqlUrl, TlsIsPreferredUnlessTheUrlSaysOtherwise) {
  absl::StatusOr<MysqlEndpoint> ep = ParseMysqlUrl("mysql://u@h/db");
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_EQ(ep->tls.mode, SslMode::kPreferred);
  EXPECT_FALSE(ep->tls.required());
  EXPECT_EQ(ep->Describe(), "mysql://u@h:3306/db");

  ep = ParseMysqlUrl(
      "mysql://u@h/db?ssl-mode=verify_identity&ssl-ca=/etc/ca%20dir/ca.pem"
      "&ssl-cert=/c.pem&ssl-key=/k.pem");
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_EQ(ep->tls.mode, SslMode::kVerifyIdentity);
  EXPECT_TRUE(ep->tls.required());
  EXPECT_EQ(ep->tls.ca_file, "/etc/ca dir/ca.pem");
  EXPECT_EQ(ep->tls.cert_file, "/c.pem");
  EXPECT_EQ(ep->tls.key_file, "/k.pem");
  EXPECT_EQ(ep->Describe(), "mysql://u@h:3306/db?ssl-mode=VERIFY_IDENTITY");

  ep = ParseMysqlUrl("mysql://u@h/db?ssl-mode=REQUIRED");
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_EQ(ep->tls.mode, SslMode::kRequired);
  EXPECT_TRUE(ep->tls.required());
  ep = ParseMysqlUrl("mysql://u@localhost/db?socket=/s.sock&ssl-mode=DISABLED");
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_EQ(ep->tls.mode, SslMode::kDisabled);
  EXPECT_EQ(ep->Describe(), "mysql://u@localhost/db?socket=/s.sock&ssl-mode=DISABLED");
}

// A TLS set-up the connector cannot give exactly, or that contradicts itself, is refused with a
// message naming it: never silently weakened.
TEST(ParseMysqlUrl, RefusesTlsThatCannotBeGivenAsAsked) {
  const std::pair<const char*, const char*> cases[] = {
      {"ssl-mode=VERIFY_CA&ssl-ca=/ca.pem", "VERIFY_CA cannot be given exactly"},
      {"ssl-mode=verify_ca", "VERIFY_CA cannot be given exactly"},
      {"ssl-mode=ON", "ssl-mode \"ON\" is not one of"},
      {"ssl-mode=VERIFY_IDENTITY", "needs ssl-ca"},
      {"ssl-ca=/ca.pem", "ssl-ca is used only by ssl-mode=VERIFY_IDENTITY, not PREFERRED"},
      {"ssl-mode=REQUIRED&ssl-ca=/ca.pem", "not REQUIRED"},
      {"ssl-mode=DISABLED&ssl-cert=/c.pem&ssl-key=/k.pem", "DISABLED takes no"},
      {"ssl-mode=REQUIRED&ssl-cert=/c.pem", "ssl-cert and ssl-key go together"},
      {"ssl-key=/k.pem", "ssl-cert and ssl-key go together"},
      {"ssl-ca=%zz", "bad percent-encoding in the ssl-ca"},
      {"sslmode=REQUIRED", "unknown parameter \"sslmode\""},
  };
  for (const auto& [params, want] : cases) {
    absl::StatusOr<MysqlEndpoint> ep = ParseMysqlUrl(absl::StrCat("mysql://u@h/db?", params));
    ASSERT_FALSE(ep.ok()) << params;
    EXPECT_EQ(ep.status().code(), absl::StatusCode::kInvalidArgument) << params;
    EXPECT_NE(ep.status().message().find(want), absl::string_view::npos)
        << params << ": " << ep.status();
  }
}

}  // namespace
}  // namespace giftwall::storage
