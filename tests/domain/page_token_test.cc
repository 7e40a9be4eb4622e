#include "server/domain/page_token.h"

#include <string>

#include "absl/strings/escaping.h"
#include "gtest/gtest.h"

namespace giftwall::domain {
namespace {

GiftWallPageToken Sample() {
  return GiftWallPageToken{WallSort::kLastReceivedDesc, "demo", 42, -1234567890123,
                           "rose \xe2\x9c\xbf"};
}

TEST(GiftWallPageToken, RoundTrips) {
  const GiftWallPageToken in = Sample();
  const std::string encoded = EncodeGiftWallPageToken(in);
  absl::StatusOr<GiftWallPageToken> out =
      DecodeGiftWallPageToken(encoded, "demo", 42, WallSort::kLastReceivedDesc);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->sort, in.sort);
  EXPECT_EQ(out->app_code, in.app_code);
  EXPECT_EQ(out->user_id, in.user_id);
  EXPECT_EQ(out->sort_value, in.sort_value);
  EXPECT_EQ(out->gift_id, in.gift_id);
}

TEST(GiftWallPageToken, IsUrlSafeText) {
  const std::string encoded = EncodeGiftWallPageToken(Sample());
  EXPECT_EQ(
      encoded.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
      std::string::npos)
      << encoded;
}

TEST(GiftWallPageToken, IsBoundToWallAndSort) {
  const std::string encoded = EncodeGiftWallPageToken(Sample());
  for (auto [app, user, sort] : {std::tuple{"other", 42, WallSort::kLastReceivedDesc},
                                 std::tuple{"demo", 43, WallSort::kLastReceivedDesc},
                                 std::tuple{"demo", 42, WallSort::kCountDesc}}) {
    absl::StatusOr<GiftWallPageToken> out = DecodeGiftWallPageToken(encoded, app, user, sort);
    ASSERT_FALSE(out.ok());
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(out.status().message().find("another wall or sort"), absl::string_view::npos);
  }
}

TEST(GiftWallPageToken, DetectsEveryFlippedBit) {
  std::string raw;
  ASSERT_TRUE(absl::WebSafeBase64Unescape(EncodeGiftWallPageToken(Sample()), &raw));
  for (size_t i = 0; i < raw.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string tampered = raw;
      tampered[i] = static_cast<char>(tampered[i] ^ (1 << bit));
      absl::StatusOr<GiftWallPageToken> out = DecodeGiftWallPageToken(
          absl::WebSafeBase64Escape(tampered), "demo", 42, WallSort::kLastReceivedDesc);
      ASSERT_FALSE(out.ok()) << "byte " << i << " bit " << bit;
      EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
    }
  }
}

TEST(GiftWallPageToken, RejectsGarbage) {
  for (const std::string& junk :
       {std::string("x"), std::string("!!!!"), std::string("AAAAAAAAAAAA"), std::string(5000, 'A'),
        absl::WebSafeBase64Escape("\x01\x01\x00\x00"), EncodeGiftWallPageToken(Sample()) + "A"}) {
    absl::StatusOr<GiftWallPageToken> out =
        DecodeGiftWallPageToken(junk, "demo", 42, WallSort::kLastReceivedDesc);
    ASSERT_FALSE(out.ok()) << junk;
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(out.status().message().find("page_token"), absl::string_view::npos);
  }
}

}  // namespace
}  // namespace giftwall::domain
