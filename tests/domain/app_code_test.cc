#include "server/domain/app_code.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace giftwall::domain {
namespace {

TEST(NormalizeAppCode, TrimsAndLowerCases) {
  EXPECT_EQ(*NormalizeAppCode("  Demo_App-1\t"), "demo_app-1");
  EXPECT_EQ(*NormalizeAppCode("x"), "x");
  EXPECT_EQ(*NormalizeAppCode(std::string(32, 'a')), std::string(32, 'a'));
}

TEST(NormalizeAppCode, RejectsWhatDoesNotMatchThePattern) {
  for (const char* bad : {"", "   ", "a b", "app!", "app.code", "caf\xc3\xa9", "a/b"}) {
    absl::StatusOr<std::string> code = NormalizeAppCode(bad);
    ASSERT_FALSE(code.ok()) << bad;
    EXPECT_EQ(code.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(code.status().message().find("app_code"), absl::string_view::npos) << code.status();
  }
}

TEST(NormalizeAppCode, RejectsMoreThan32Bytes) {
  absl::StatusOr<std::string> code = NormalizeAppCode(std::string(33, 'a'));
  ASSERT_FALSE(code.ok());
  EXPECT_EQ(code.status().message(), "app_code is 33 bytes, at most 32 allowed");
}

// The outbox's codes, as the wallet wrote them, go to the app the relay would project their rows
// under; a code that normalizes to nothing belongs to no app.
TEST(GroupOutboxAppCodes, EachCodeBelongsToTheAppItNormalizesTo) {
  const OutboxAppCodes codes =
      GroupOutboxAppCodes({"APP3X", "app3x", " App3x ", "demo", "BAD CODE", ""});
  ASSERT_EQ(codes.by_app.size(), 2u);
  EXPECT_THAT(codes.by_app.at("app3x"), ::testing::ElementsAre("APP3X", "app3x", " App3x "));
  EXPECT_THAT(codes.by_app.at("demo"), ::testing::ElementsAre("demo"));
  EXPECT_THAT(codes.invalid, ::testing::ElementsAre("BAD CODE", ""));
  EXPECT_THAT(codes.Of("app3x"), ::testing::ElementsAre("APP3X", "app3x", " App3x "));
  // An app with no rows in the outbox is looked for under its own code.
  EXPECT_THAT(codes.Of("quiet"), ::testing::ElementsAre("quiet"));
}

}  // namespace
}  // namespace giftwall::domain
