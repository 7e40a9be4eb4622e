#include "server/storage/json_rows.h"

#include "gtest/gtest.h"
#include "server/storage/columns.h"

namespace giftwall::storage {
namespace {

enum TestColumn { kNumber, kWord, kId };
constexpr JsonColumn kTestColumns[] = {
    {kNumber, "j_number", "BIGINT"},
    {kWord, "j_word", "VARCHAR(16) CHARACTER SET utf8mb4"},
    {kId, "j_id", "VARCHAR(64) CHARACTER SET ascii"},
};
static_assert(InPositionOrder(kTestColumns));

constexpr JsonColumn kOneColumn[] = {{0, "j_word", "VARCHAR(16) CHARACTER SET utf8mb4"}};

TEST(JsonRows, RowsOfIntegersTextAndHexBytes) {
  JsonRows rows(kTestColumns);
  EXPECT_TRUE(rows.empty());
  rows.Row()
      .Int(kNumber, -9223372036854775807 - 1)
      .Text(kWord, "a\"b\\c\n")
      .Bytes(kId, std::string("E1 \xff", 4));
  rows.Row().Int(kNumber, 7).Text(kWord, "玫瑰").Bytes(kId, "");
  EXPECT_EQ(rows.rows(), 2u);
  EXPECT_EQ(rows.Finish(), R"([[-9223372036854775808,"a\"b\\c\u000a","453120ff"],[7,"玫瑰",""]])");
}

TEST(JsonRows, TextThatIsNotUtf8BecomesReplacementCharacters) {
  JsonRows rows(kOneColumn);
  rows.Row().Text(0, "ok\xc3(");
  EXPECT_EQ(rows.Finish(), "[[\"ok\uFFFD(\"]]");
}

TEST(JsonRows, NoRowsIsAnEmptyArray) {
  JsonRows rows(kTestColumns);
  EXPECT_EQ(rows.Finish(), "[]");
}

TEST(JsonRows, TheStatementReadsTheColumnsWhereTheRowsWriteThem) {
  EXPECT_EQ(JsonTableSql(kTestColumns),
            "JSON_TABLE(?, '$[*]' COLUMNS (j_number BIGINT PATH '$[0]', j_word VARCHAR(16) "
            "CHARACTER SET utf8mb4 PATH '$[1]', j_id VARCHAR(64) CHARACTER SET ascii PATH "
            "'$[2]')) AS jt");
  EXPECT_EQ(JsonTableSql(absl::MakeConstSpan(kTestColumns).first(1)),
            "JSON_TABLE(?, '$[*]' COLUMNS (j_number BIGINT PATH '$[0]')) AS jt");
}

TEST(JsonRows, ASelectListNamesItsColumnsInOrder) {
  constexpr ResultColumn kColumns[] = {{0, "w.user_id"}, {1, "w.gift_id"}};
  static_assert(InPositionOrder(kColumns));
  EXPECT_EQ(SelectList(kColumns), "w.user_id, w.gift_id");
}

TEST(JsonRows, ATableOutOfPositionOrderIsCaught) {
  constexpr ResultColumn kSwapped[] = {{1, "w.gift_id"}, {0, "w.user_id"}};
  EXPECT_FALSE(InPositionOrder(kSwapped));
}

TEST(JsonRowsDeathTest, AValueForAnotherColumnIsABug) {
  JsonRows rows(kTestColumns);
  rows.Row().Int(kNumber, 1);
  EXPECT_DEATH(rows.Bytes(kId, "x"), "column 2 where j_word belongs");
}

TEST(JsonRowsDeathTest, ARowLeftShortIsABug) {
  JsonRows rows(kTestColumns);
  rows.Row().Int(kNumber, 1).Text(kWord, "a");
  EXPECT_DEATH(rows.Row(), "row 1 ends before column j_id");
  EXPECT_DEATH(rows.Finish(), "row 1 ends before column j_id");
}

}  // namespace
}  // namespace giftwall::storage
