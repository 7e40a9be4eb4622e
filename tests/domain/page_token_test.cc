#include "server/domain/page_token.h"

#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/escaping.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace giftwall::domain {
namespace {

// `body` with the checksum the encoder appends (FNV-1a, 32 bits, little-endian).
std::string WithChecksum(std::string body) {
  uint32_t hash = 2166136261u;
  for (unsigned char c : body) {
    hash ^= c;
    hash *= 16777619u;
  }
  for (int shift = 0; shift < 32; shift += 8) body.push_back(static_cast<char>(hash >> shift));
  return body;
}

GiftWallPageToken Sample() {
  return GiftWallPageToken{WallSort::kLastReceivedDesc, "demo", 42, -1234567890123,
                           "rose \xe2\x9c\xbf",         ""};
}

TEST(GiftWallPageToken, RoundTrips) {
  const GiftWallPageToken in = Sample();
  const std::string encoded = EncodeGiftWallPageToken(in);
  absl::StatusOr<GiftWallPageToken> out =
      DecodeGiftWallPageToken(encoded, "demo", 42, WallSort::kLastReceivedDesc, false);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->sort, in.sort);
  EXPECT_EQ(out->app_code, in.app_code);
  EXPECT_EQ(out->user_id, in.user_id);
  EXPECT_EQ(out->sort_value, in.sort_value);
  EXPECT_EQ(out->gift_id, in.gift_id);
}

// With include_unlit the token says whether its cursor is among the unlit gifts, and is bound to
// include_unlit both ways; without it, tokens are as they were before the catalogue.
TEST(GiftWallPageToken, Rule16_CarriesTheUnlitSectionAndIsBoundToIncludeUnlit) {
  for (bool unlit : {false, true}) {
    GiftWallPageToken in = Sample();
    in.sort = WallSort::kCatalog;
    in.include_unlit = true;
    in.unlit = unlit;
    in.period = "week:2026-W49";
    const std::string encoded = EncodeGiftWallPageToken(in);
    absl::StatusOr<GiftWallPageToken> out =
        DecodeGiftWallPageToken(encoded, "demo", 42, WallSort::kCatalog, true);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_TRUE(out->include_unlit);
    EXPECT_EQ(out->unlit, unlit);
    EXPECT_EQ(out->sort_value, in.sort_value);
    EXPECT_EQ(out->gift_id, in.gift_id);
    EXPECT_EQ(out->period, in.period);
    out = DecodeGiftWallPageToken(encoded, "demo", 42, WallSort::kCatalog, false);
    ASSERT_FALSE(out.ok());
    EXPECT_THAT(std::string(out.status().message()), testing::HasSubstr("include_unlit"));
  }
  EXPECT_FALSE(DecodeGiftWallPageToken(EncodeGiftWallPageToken(Sample()), "demo", 42,
                                       WallSort::kLastReceivedDesc, true)
                   .ok());
}

// A period's page carries the period; an all-time token reads as tokens did before periods
// (encoded without it), so tokens issued by the previous release still page.
TEST(GiftWallPageToken, CarriesItsPeriodAndAllTimeTokensKeepTheirFormer) {
  GiftWallPageToken in = Sample();
  in.period = "month:2026-12";
  absl::StatusOr<GiftWallPageToken> out = DecodeGiftWallPageToken(
      EncodeGiftWallPageToken(in), "demo", 42, WallSort::kLastReceivedDesc, false);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->period, "month:2026-12");
  EXPECT_EQ(out->gift_id, in.gift_id);
  // What the release before periods issued for Sample() (no period field).
  EXPECT_EQ(EncodeGiftWallPageToken(Sample()), "AQEBBGRlbW9UlZPYn-5HCHJvc2Ug4py_Ox65Pw");
  out = DecodeGiftWallPageToken("AQEBBGRlbW9UlZPYn-5HCHJvc2Ug4py_Ox65Pw", "demo", 42,
                                WallSort::kLastReceivedDesc, false);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->period, "");

  // An empty period written out is another spelling of the token without it: refused.
  std::string raw;
  ASSERT_TRUE(absl::WebSafeBase64Unescape("AQEBBGRlbW9UlZPYn-5HCHJvc2Ug4py_Ox65Pw", &raw));
  raw.resize(raw.size() - 4);  // the checksum
  raw.push_back('\0');         // a period of length 0
  EXPECT_FALSE(DecodeGiftWallPageToken(absl::WebSafeBase64Escape(WithChecksum(raw)), "demo", 42,
                                       WallSort::kLastReceivedDesc, false)
                   .ok());

  SenderPageToken sender{"demo", 42, "rose", {9, 1700000000000, 2}, "week:2026-W53"};
  absl::StatusOr<SenderPageToken> back =
      DecodeSenderPageToken(EncodeSenderPageToken(sender), "demo", 42, "rose");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->period, "week:2026-W53");
  EXPECT_EQ(back->cursor.tied_shown, 2);
  // A token of the release before the viewer (kind 2: its cursor named the last sender) is
  // refused, asking for the first page.
  std::string by_id;
  ASSERT_TRUE(absl::WebSafeBase64Unescape(EncodeSenderPageToken(sender), &by_id));
  by_id.resize(by_id.size() - 4);  // the checksum
  by_id[1] = 2;                    // the kind, after the version
  const absl::StatusOr<SenderPageToken> old =
      DecodeSenderPageToken(absl::WebSafeBase64Escape(WithChecksum(by_id)), "demo", 42, "rose");
  EXPECT_EQ(old.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(old.status().message()), ::testing::HasSubstr("from an older server"));
  // A cursor never skips fewer than one sender, nor more than a tie can hold.
  for (int64_t tied : {int64_t{0}, kMaxTiedShown + 1}) {
    sender.cursor.tied_shown = tied;
    EXPECT_FALSE(DecodeSenderPageToken(EncodeSenderPageToken(sender), "demo", 42, "rose").ok())
        << tied;
  }
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
    absl::StatusOr<GiftWallPageToken> out =
        DecodeGiftWallPageToken(encoded, app, user, sort, false);
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
          absl::WebSafeBase64Escape(tampered), "demo", 42, WallSort::kLastReceivedDesc, false);
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
        DecodeGiftWallPageToken(junk, "demo", 42, WallSort::kLastReceivedDesc, false);
    ASSERT_FALSE(out.ok()) << junk;
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(out.status().message().find("page_token"), absl::string_view::npos);
  }
}

}  // namespace
}  // namespace giftwall::domain

namespace giftwall::domain {
namespace {

// `body` as a token: its FNV-1a checksum appended (little-endian), then web-safe base64, as
// page_token.cc writes it.
std::string TokenOf(std::string body) {
  uint32_t hash = 2166136261u;
  for (unsigned char c : body) {
    hash ^= c;
    hash *= 16777619u;
  }
  for (int shift = 0; shift < 32; shift += 8) body.push_back(static_cast<char>(hash >> shift));
  return absl::WebSafeBase64Escape(body);
}

// Found by fuzz/page_token_fuzzer: the base64 decoder skips white space and ignores the unused
// bits of the last character, so a token changed in those ways decoded as if it were intact.
TEST(GiftWallPageToken, RejectsEveryOtherSpellingOfItsText) {
  const std::string encoded = EncodeGiftWallPageToken(Sample());
  ASSERT_NE(encoded.size() % 4, 0u) << "the last character must have unused bits";
  std::vector<std::string> respelled = {" " + encoded, encoded + "\n",
                                        encoded.substr(0, 4) + " " + encoded.substr(4),
                                        encoded + std::string(4 - encoded.size() % 4, '=')};
  for (char c : std::string("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")) {
    if (c == encoded.back()) continue;
    respelled.push_back(encoded.substr(0, encoded.size() - 1) + c);
  }
  for (const std::string& token : respelled) {
    absl::StatusOr<GiftWallPageToken> out =
        DecodeGiftWallPageToken(token, "demo", 42, WallSort::kLastReceivedDesc, false);
    ASSERT_FALSE(out.ok()) << token;
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  }
}

// Found by fuzz/page_token_fuzzer: a number written in more bytes than it needs, or with bits
// beyond 64, decoded (the extra bits dropped), so one cursor had many tokens.
TEST(SponsorHistoryPageToken, RoundTripsAndIsBoundToWallKindAndGift) {
  const SponsorHistoryPageToken in{"demo", 42, "week", "", "2026-W49", "rose"};
  const std::string encoded = EncodeSponsorHistoryPageToken(in);
  absl::StatusOr<SponsorHistoryPageToken> out =
      DecodeSponsorHistoryPageToken(encoded, "demo", 42, "week", "");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->period_key, "2026-W49");
  EXPECT_EQ(out->gift_id, "rose");
  for (const auto& [app, user, kind, gift] :
       std::vector<std::tuple<std::string, int64_t, std::string, std::string>>{
           {"other", 42, "week", ""},
           {"demo", 43, "week", ""},
           {"demo", 42, "month", ""},
           {"demo", 42, "week", "rose"}}) {
    absl::StatusOr<SponsorHistoryPageToken> wrong =
        DecodeSponsorHistoryPageToken(encoded, app, user, kind, gift);
    EXPECT_EQ(wrong.status().code(), absl::StatusCode::kInvalidArgument) << app << user << kind;
    EXPECT_THAT(std::string(wrong.status().message()),
                ::testing::HasSubstr("issued for another wall's history"));
  }
  // Another kind of token is not a history token.
  EXPECT_EQ(DecodeSponsorHistoryPageToken(EncodeGiftWallPageToken(Sample()), "demo", 42, "week", "")
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SentPageToken, Rule19_RoundTripsAndIsBoundToItsSenderAndGift) {
  const SentPageToken gifts{"demo", 9, "", "rose", 0, "month:2026-12"};
  absl::StatusOr<SentPageToken> out =
      DecodeSentPageToken(EncodeSentPageToken(gifts), "demo", 9, "");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->after_gift, "rose");
  EXPECT_EQ(out->period, "month:2026-12");
  const SentPageToken receivers{"demo", 9, "rose", "", 42, ""};
  out = DecodeSentPageToken(EncodeSentPageToken(receivers), "demo", 9, "rose");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->after_receiver, 42);
  // Bound to the app, the sender and the gift; another kind of token is refused.
  EXPECT_THAT(
      std::string(
          DecodeSentPageToken(EncodeSentPageToken(gifts), "demo", 10, "").status().message()),
      ::testing::HasSubstr("another sent wall"));
  EXPECT_FALSE(DecodeSentPageToken(EncodeSentPageToken(receivers), "demo", 9, "lily").ok());
  EXPECT_FALSE(DecodeSentPageToken(EncodeSentPageToken(gifts), "other", 9, "").ok());
  EXPECT_FALSE(
      DecodeSentPageToken(EncodeCatalogPageToken({"demo", 1, "rose"}), "demo", 9, "").ok());
}

TEST(CatalogPageToken, RoundTripsAndIsBoundToItsApp) {
  const std::string encoded = EncodeCatalogPageToken({"demo", -3, "rose"});
  absl::StatusOr<CatalogPageToken> out = DecodeCatalogPageToken(encoded, "demo");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->sort_order, -3);
  EXPECT_EQ(out->gift_id, "rose");
  EXPECT_THAT(std::string(DecodeCatalogPageToken(encoded, "other").status().message()),
              ::testing::HasSubstr("issued for another app's catalogue"));
  EXPECT_EQ(DecodeCatalogPageToken(EncodeGiftWallPageToken(Sample()), "demo").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(DeadEventPageToken, RejectsNumbersNotWrittenInTheirShortestForm) {
  using std::string_literals::operator""s;
  const std::string shortest = "\x01\x03"s + "\x04" + "demo" + "\x00"s + "\x02" + "E1";
  ASSERT_TRUE(DecodeDeadEventPageToken(TokenOf(shortest), "demo", "").ok());
  const std::string overlong = "\x01\x03"s + "\x84\x00"s + "demo" + "\x00"s + "\x02" + "E1";
  absl::StatusOr<DeadEventPageToken> out = DecodeDeadEventPageToken(TokenOf(overlong), "demo", "");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(GiftWallPageToken, RejectsNumbersBeyond64Bits) {
  using std::string_literals::operator""s;
  // sort 0, app_code "demo", user_id as a 10-byte varint, sort_value 0, gift_id "g".
  auto body = [](char last_user_id_byte) {
    return "\x01\x01\x00"s + "\x04" + "demo" + std::string(9, '\xff') + last_user_id_byte +
           "\x00"s + "\x01" + "g";
  };
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();  // zigzag of 2^64 - 1
  ASSERT_TRUE(
      DecodeGiftWallPageToken(TokenOf(body('\x01')), "demo", kMin, WallSort::kCountDesc, false)
          .ok());
  absl::StatusOr<GiftWallPageToken> out =
      DecodeGiftWallPageToken(TokenOf(body('\x03')), "demo", kMin, WallSort::kCountDesc, false);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace giftwall::domain
