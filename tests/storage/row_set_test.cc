#include "server/storage/row_set.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/storage/columns.h"

namespace giftwall::storage {
namespace {

enum TestColumn { kNumber, kWord, kId };
constexpr RowColumn kTestColumns[] = {
    {kNumber, "j_number", "BIGINT"},
    {kWord, "j_word", "VARCHAR(16) CHARACTER SET utf8mb4"},
    {kId, "j_id", "VARCHAR(64) CHARACTER SET ascii"},
};
static_assert(InPositionOrder(kTestColumns));

constexpr RowColumn kOneColumn[] = {{0, "j_word", "VARCHAR(16) CHARACTER SET utf8mb4"}};

TEST(RowSet, RowsOfIntegersTextAndHexBytes) {
  RowSet rows(kTestColumns);
  EXPECT_TRUE(rows.empty());
  rows.Row()
      .Int(kNumber, -9223372036854775807 - 1)
      .Text(kWord, "a\"b\\c\n")
      .Bytes(kId, std::string("E1 \xff", 4));
  rows.Row().Int(kNumber, 7).Text(kWord, "玫瑰").Bytes(kId, "");
  EXPECT_EQ(rows.rows(), 2u);
  EXPECT_EQ(rows.Json(), R"([[-9223372036854775808,"a\"b\\c\u000a","453120ff"],[7,"玫瑰",""]])");
}

TEST(RowSet, TextThatIsNotUtf8BecomesReplacementCharacters) {
  RowSet rows(kOneColumn);
  rows.Row().Text(0, "ok\xc3(");
  EXPECT_EQ(rows.Json(), "[[\"ok\uFFFD(\"]]");
}

TEST(RowSet, NoRowsIsAnEmptyArray) {
  RowSet rows(kTestColumns);
  EXPECT_EQ(rows.Json(), "[]");
}

TEST(RowSet, TheValuesAreKeptInOrderForThePlaceholders) {
  RowSet rows(kTestColumns);
  rows.Row().Int(kNumber, 7).Text(kWord, "ok\xc3(").Bytes(kId, "E1");
  ASSERT_EQ(rows.values().size(), 3u);
  EXPECT_EQ(std::get<int64_t>(rows.values()[0]), 7);
  EXPECT_EQ(std::get<std::string>(rows.values()[1]), "ok\uFFFD(");
  EXPECT_EQ(std::get<std::string>(rows.values()[2]), "4531");
}

TEST(RowSet, JsonTableReadsTheColumnsWhereTheRowsWriteThem) {
  EXPECT_EQ(JsonTableSql(kTestColumns),
            "JSON_TABLE(?, '$[*]' COLUMNS (j_number BIGINT PATH '$[0]', j_word VARCHAR(16) "
            "CHARACTER SET utf8mb4 PATH '$[1]', j_id VARCHAR(64) CHARACTER SET ascii PATH "
            "'$[2]')) AS jt");
  EXPECT_EQ(JsonTableSql(absl::MakeConstSpan(kTestColumns).first(1)),
            "JSON_TABLE(?, '$[*]' COLUMNS (j_number BIGINT PATH '$[0]')) AS jt");
}

TEST(RowSet, ValuesCastTheFirstRowToTheColumnsTypesAndDropThePadding) {
  EXPECT_EQ(ValuesTableSql(kTestColumns, 2),
            "(SELECT * FROM (SELECT CAST(? AS SIGNED) AS j_number, CAST(? AS CHAR CHARACTER SET "
            "utf8mb4) AS j_word, CAST(? AS CHAR CHARACTER SET ascii) AS j_id\n"
            "UNION ALL SELECT ?, ?, ?) AS v WHERE v.j_number IS NOT NULL) AS jt");
}

TEST(RowSet, SetsArePaddedToAFewSizes) {
  EXPECT_EQ(PaddedRows(0), 1u);
  EXPECT_EQ(PaddedRows(1), 1u);
  EXPECT_EQ(PaddedRows(2), 4u);
  EXPECT_EQ(PaddedRows(17), 64u);
  EXPECT_EQ(PaddedRows(500), 1024u);
  EXPECT_EQ(PaddedRows(4096), 4096u);
  EXPECT_EQ(PaddedRows(4097), 5120u);
  EXPECT_EQ(PaddedRows(5000), 5120u);
}

TEST(RowSet, ALargeSetRunsInPartsEachAtMostTwiceItsRowsAndWithinTheLargestPart) {
  const auto parts = [](size_t rows, bool whole, size_t max_part = 4096) {
    std::string out;
    for (const RowsChunk& c : RowsChunks(rows, whole, max_part)) {
      absl::StrAppend(&out, out.empty() ? "" : " ", c.begin, "+", c.rows, "/", c.padded);
    }
    return out;
  };
  EXPECT_EQ(parts(0, false), "0+0/1");
  EXPECT_EQ(parts(1, false), "0+1/1");
  EXPECT_EQ(parts(3, false), "0+3/4");
  EXPECT_EQ(parts(15, false), "0+15/16");
  EXPECT_EQ(parts(100, false), "0+64/64 64+36/64");
  EXPECT_EQ(parts(500, false), "0+256/256 256+244/256");
  EXPECT_EQ(parts(17, false), "0+16/16 16+1/1");
  EXPECT_EQ(parts(5000, false), "0+4096/4096 4096+904/1024");
  // Parts no larger than a statement's placeholders allow (a group's wall deltas of three
  // period kinds: 3,072 rows of 23 columns).
  EXPECT_EQ(parts(3072, false, 1024), "0+1024/1024 1024+1024/1024 2048+1024/1024");
  EXPECT_EQ(parts(1500, false, 1024), "0+1024/1024 1024+256/256 1280+220/256");
  // A statement that reads the set as a whole: one part, padded.
  EXPECT_EQ(parts(100, true), "0+100/256");
  for (size_t max_part : {size_t{64}, size_t{1024}, size_t{4096}}) {
    for (size_t rows = 1; rows < 3000; ++rows) {
      size_t next = 0;
      for (const RowsChunk& c : RowsChunks(rows, false, max_part)) {
        EXPECT_EQ(c.begin, next);
        EXPECT_LE(c.padded, 2 * c.rows) << rows;
        EXPECT_LE(c.padded, max_part) << rows;
        EXPECT_EQ(PaddedRows(c.padded), c.padded);
        next += c.rows;
      }
      EXPECT_EQ(next, rows);
    }
  }
}

TEST(RowSet, AStatementHasOneTextPerPathAndPaddedSize) {
  const RowsSql sql(kTestColumns, "SELECT jt.j_number FROM {rows} WHERE jt.j_id <> ?");
  EXPECT_EQ(sql.Text(RowsPath::kJsonTable, 1), sql.Text(RowsPath::kJsonTable, 900));
  EXPECT_TRUE(absl::StartsWith(sql.Text(RowsPath::kJsonTable, 1),
                               "SELECT jt.j_number FROM JSON_TABLE(?, "));
  EXPECT_EQ(&sql.Text(RowsPath::kValues, 2), &sql.Text(RowsPath::kValues, 4));
  EXPECT_NE(sql.Text(RowsPath::kValues, 4), sql.Text(RowsPath::kValues, 5));
  EXPECT_EQ(sql.Text(RowsPath::kValues, 3),
            absl::StrCat("SELECT jt.j_number FROM ", ValuesTableSql(kTestColumns, 4),
                         " WHERE jt.j_id <> ?"));
}

TEST(RowSet, RowsPathsByName) {
  RowsPath path = RowsPath::kAuto;
  for (RowsPath p : {RowsPath::kAuto, RowsPath::kJsonTable, RowsPath::kValues}) {
    EXPECT_TRUE(ParseRowsPath(RowsPathName(p), &path));
    EXPECT_EQ(path, p);
  }
  EXPECT_FALSE(ParseRowsPath("VALUES", &path));
  EXPECT_FALSE(ParseRowsPath("", &path));
}

TEST(RowSet, ASelectListNamesItsColumnsInOrder) {
  constexpr ResultColumn kColumns[] = {{0, "w.user_id"}, {1, "w.gift_id"}};
  static_assert(InPositionOrder(kColumns));
  EXPECT_EQ(SelectList(kColumns), "w.user_id, w.gift_id");
}

TEST(RowSet, ATableOutOfPositionOrderIsCaught) {
  constexpr ResultColumn kSwapped[] = {{1, "w.gift_id"}, {0, "w.user_id"}};
  EXPECT_FALSE(InPositionOrder(kSwapped));
}

TEST(RowSetDeathTest, AValueForAnotherColumnIsABug) {
  RowSet rows(kTestColumns);
  rows.Row().Int(kNumber, 1);
  EXPECT_DEATH(rows.Bytes(kId, "x"), "column 2 where j_word belongs");
}

TEST(RowSetDeathTest, ARowLeftShortIsABug) {
  RowSet rows(kTestColumns);
  rows.Row().Int(kNumber, 1).Text(kWord, "a");
  EXPECT_DEATH(rows.Row(), "row 1 ends before column j_id");
  EXPECT_DEATH(rows.Json(), "row 1 ends before column j_id");
  EXPECT_DEATH(rows.values(), "row 1 ends before column j_id");
}

}  // namespace
}  // namespace giftwall::storage
