#include "server/domain/app_code.h"

#include <string>

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

}  // namespace
}  // namespace giftwall::domain
