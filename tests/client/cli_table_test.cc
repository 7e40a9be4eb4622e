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
