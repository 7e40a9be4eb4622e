#include "server/storage/json_rows.h"

#include "gtest/gtest.h"

namespace giftwall::storage {
namespace {

TEST(JsonRows, RowsOfIntegersTextAndHexBytes) {
  JsonRows rows;
  EXPECT_TRUE(rows.empty());
  rows.Row().Int(-9223372036854775807 - 1).Text("a\"b\\c\n").Bytes(std::string("E1 \xff", 4));
  rows.Row().Int(7).Text("玫瑰").Bytes("");
  EXPECT_EQ(rows.rows(), 2u);
  EXPECT_EQ(rows.Finish(), R"([[-9223372036854775808,"a\"b\\c\u000a","453120ff"],[7,"玫瑰",""]])");
}

TEST(JsonRows, TextThatIsNotUtf8BecomesReplacementCharacters) {
  JsonRows rows;
  rows.Row().Text("ok\xc3(");
  EXPECT_EQ(rows.Finish(), "[[\"ok\uFFFD(\"]]");
}

TEST(JsonRows, NoRowsIsAnEmptyArray) {
  JsonRows rows;
  EXPECT_EQ(rows.Finish(), "[]");
}

}  // namespace
}  // namespace giftwall::storage
