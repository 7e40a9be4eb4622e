#include "server/storage/mysql_url.h"

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

}  // namespace
}  // namespace giftwall::storage
