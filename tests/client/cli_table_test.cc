#include <string>
#include <vector>

#include "client/cli.h"
#include "gtest/gtest.h"

namespace giftwall::client {
namespace {

TEST(DisplayWidth, WideCharactersTakeTwoColumns) {
  EXPECT_EQ(DisplayWidth("rose"), 4u);
  EXPECT_EQ(DisplayWidth("冠名"), 4u);
  EXPECT_EQ(DisplayWidth("TOP SENDER (冠名)"), 17u);
  EXPECT_EQ(DisplayWidth("café"), 4u);
  EXPECT_EQ(DisplayWidth("🌹"), 2u);
  EXPECT_EQ(DisplayWidth(""), 0u);
  EXPECT_EQ(DisplayWidth("🚀"), 2u);
  EXPECT_EQ(DisplayWidth("e\u0301"), 1u) << "a combining accent takes no column";
  EXPECT_EQ(DisplayWidth("\u2764\ufe0f"), DisplayWidth("\u2764"))
      << "a variation selector takes no column";
  EXPECT_EQ(DisplayWidth("ｒｏｓｅ"), 8u) << "full-width Latin";
  EXPECT_EQ(DisplayWidth("장미"), 4u) << "Hangul";
  // Bytes that are not UTF-8 take a column each, and never swallow the text after them.
  EXPECT_EQ(DisplayWidth("\xe5"
                         "AB"),
            3u);
  EXPECT_EQ(DisplayWidth("\xe5\x86"), 2u);
}

// Columns line up on a terminal whether a cell is ASCII or Chinese.
TEST(FormatTable, PadsCellsToTheWidthATerminalShows) {
  EXPECT_EQ(FormatTable({{"冠名", "SENT"}, {"42", "3"}, {"玫瑰花", "10"}}),
            "冠名    SENT\n"
            "42      3\n"
            "玫瑰花  10\n");
}

}  // namespace
}  // namespace giftwall::client
