#include "server/storage/sql_script.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace giftwall::storage {
namespace {

using ::testing::ElementsAre;

TEST(SplitSqlStatements, SplitsAtSemicolons) {
  EXPECT_THAT(SplitSqlStatements("CREATE TABLE a (x INT);\n\nCREATE TABLE b (y INT);"),
              ElementsAre("CREATE TABLE a (x INT)", "CREATE TABLE b (y INT)"));
}

TEST(SplitSqlStatements, IgnoresSemicolonsInQuotesAndComments) {
  EXPECT_THAT(
      SplitSqlStatements("-- a; comment\nINSERT INTO t VALUES ('a;b', \"c;d\", `e;f`);\n"
                         "/* x; y */ SELECT 'it''s; fine', 'back\\'slash;';"
                         "# hash; comment\nSELECT 2"),
      ElementsAre("-- a; comment\nINSERT INTO t VALUES ('a;b', \"c;d\", `e;f`)",
                  "/* x; y */ SELECT 'it''s; fine', 'back\\'slash;'", "# hash; comment\nSELECT 2"));
}

TEST(SplitSqlStatements, DropsEmptyAndCommentOnlyStatements) {
  EXPECT_THAT(SplitSqlStatements(";;  \n-- only a comment\n; /* and this */ ;"), ElementsAre());
  EXPECT_THAT(SplitSqlStatements("SELECT 1;\n-- trailing comment\n"), ElementsAre("SELECT 1"));
}

TEST(SplitSqlStatements, SplitsTheRealMigrationsIntoCreateStatements) {
  // Every statement of a migration file is one the connector can run by itself.
  for (const std::string& stmt :
       SplitSqlStatements("CREATE TABLE x (a INT); ALTER TABLE x ADD b INT")) {
    EXPECT_EQ(stmt.find(';'), std::string::npos);
  }
}

}  // namespace
}  // namespace giftwall::storage
