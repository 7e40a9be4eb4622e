#include "server/domain/gift_payload.h"

#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace giftwall::domain {
namespace {

// Names each generated test after its case.
struct CaseName {
  template <typename Case>
  std::string operator()(const testing::TestParamInfo<Case>& test) const {
    return std::string(test.param.name);
  }
};

using ::testing::HasSubstr;

// The required fields; `extra` is spliced in after them (later duplicates win).
std::string Payload(absl::string_view extra = "") {
  return std::string(R"({"target_user_id":9,"gift_id":"rose","gift_count":2)") +
         std::string(extra) + "}";
}

std::string Quoted(absl::string_view s) { return "\"" + std::string(s) + "\""; }

TEST(ParseGiftPayloadTest, ReadsEveryField) {
  absl::StatusOr<GiftPayload> p = ParseGiftPayload(
      R"({"target_user_id":9,"gift_id":"rose","gift_count":2,"sender_user_id":5,)"
      R"("coin_amount":300,"gift_name":"Rose","gift_icon":"https://x/rose.png","room_id":77})");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->target_user_id, 9);
  EXPECT_EQ(p->gift_id, "rose");
  EXPECT_EQ(p->gift_count, 2);
  EXPECT_EQ(p->sender_user_id, 5);
  EXPECT_TRUE(p->has_sender());
  EXPECT_EQ(p->coin_amount, 300);
  EXPECT_EQ(p->gift_name, "Rose");
  EXPECT_EQ(p->gift_icon, "https://x/rose.png");
  EXPECT_EQ(p->room_id, 77);
  EXPECT_FALSE(p->anonymous);
}

// The sender's 神秘人 choice: a JSON boolean, read as Go's encoding/json reads a bool field
// (tests/domain/go_json_differential_test.cc holds both sides to it).
TEST(ParseGiftPayloadTest, AnonymousIsAGoBool) {
  for (const auto& [extra, want] :
       std::vector<std::pair<std::string, bool>>{{R"(,"anonymous":true)", true},
                                                 {R"(,"Anonymous":true)", true},
                                                 {R"(,"anonymous":false)", false},
                                                 {R"(,"anonymous":null)", false},
                                                 {R"(,"anonymous":true,"anonymous":null)", true},
                                                 {"", false}}) {
    absl::StatusOr<GiftPayload> p = ParseGiftPayload(Payload(extra));
    ASSERT_TRUE(p.ok()) << extra << ": " << p.status();
    EXPECT_EQ(p->anonymous, want) << extra;
  }
  for (const auto& [extra, got] :
       std::vector<std::pair<std::string, std::string>>{{R"(,"anonymous":"true")", "string"},
                                                        {R"(,"anonymous":1)", "number"},
                                                        {R"(,"anonymous":[])", "array"},
                                                        {R"(,"anonymous":{})", "object"}}) {
    absl::StatusOr<GiftPayload> p = ParseGiftPayload(Payload(extra));
    ASSERT_FALSE(p.ok()) << extra;
    EXPECT_EQ(std::string(p.status().message()),
              absl::StrCat("invalid gift payload: field \"anonymous\": want a boolean, got ", got));
  }
  EXPECT_FALSE(SameGiftPayload(Payload(R"(,"anonymous":true)"), Payload()));
  EXPECT_TRUE(SameGiftPayload(Payload(R"(,"anonymous":false)"), Payload()));
}

TEST(ParseGiftPayloadTest, OptionalFieldsDefaultWhenAbsent) {
  absl::StatusOr<GiftPayload> p = ParseGiftPayload(Payload());
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->sender_user_id, 0);
  EXPECT_FALSE(p->has_sender());
  EXPECT_EQ(p->coin_amount, 0);
  EXPECT_EQ(p->gift_name, "");
  EXPECT_EQ(p->gift_icon, "");
  EXPECT_EQ(p->room_id, 0);
}

struct OkCase {
  absl::string_view name;
  std::string json;
  // Each case checks the one field it is about.
  absl::string_view field;
  std::string want;
};

// gtest prints a failing case by its name rather than as raw bytes.
void PrintTo(const OkCase& c, std::ostream* os) { *os << c.name; }

class ParseGiftPayloadOkTest : public testing::TestWithParam<OkCase> {};

std::string FieldAsString(const GiftPayload& p, absl::string_view field) {
  if (field == "target_user_id") return std::to_string(p.target_user_id);
  if (field == "gift_id") return p.gift_id;
  if (field == "gift_count") return std::to_string(p.gift_count);
  if (field == "sender_user_id") return std::to_string(p.sender_user_id);
  if (field == "coin_amount") return std::to_string(p.coin_amount);
  if (field == "gift_name") return p.gift_name;
  if (field == "gift_icon") return p.gift_icon;
  if (field == "room_id") return std::to_string(p.room_id);
  ADD_FAILURE() << "unknown field " << field;
  return "";
}

TEST_P(ParseGiftPayloadOkTest, Accepts) {
  absl::StatusOr<GiftPayload> p = ParseGiftPayload(GetParam().json);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(FieldAsString(*p, GetParam().field), GetParam().want);
}

INSTANTIATE_TEST_SUITE_P(
    Valid, ParseGiftPayloadOkTest,
    testing::Values(
        OkCase{"CaseInsensitiveKeys", R"({"Target_User_ID":3,"GIFT_ID":"a","Gift_Count":1})",
               "target_user_id", "3"},
        OkCase{"UpperCaseGiftId", R"({"Target_User_ID":3,"GIFT_ID":"a","Gift_Count":1})", "gift_id",
               "a"},
        OkCase{"LongSInKey", "{\"target_u\u017Fer_id\":4,\"gift_id\":\"a\",\"gift_count\":1}",
               "target_user_id", "4"},
        OkCase{"LastDuplicateWins", Payload(R"(,"gift_id":"tulip","GIFT_ID":"lily")"), "gift_id",
               "lily"},
        OkCase{"NullKeepsEarlierValue", Payload(R"(,"gift_count":null)"), "gift_count", "2"},
        OkCase{"NullSenderIsNoSender", Payload(R"(,"sender_user_id":null)"), "sender_user_id", "0"},
        OkCase{"NegativeSenderIsNoSender", Payload(R"(,"sender_user_id":-7)"), "sender_user_id",
               "0"},
        OkCase{"ZeroSenderIsNoSender", Payload(R"(,"sender_user_id":0)"), "sender_user_id", "0"},
        OkCase{"ZeroCoins", Payload(R"(,"coin_amount":0)"), "coin_amount", "0"},
        OkCase{"NegativeZeroCount", Payload(R"(,"coin_amount":-0)"), "coin_amount", "0"},
        OkCase{"Int64MaxCount", Payload(R"(,"gift_count":9223372036854775807)"), "gift_count",
               "9223372036854775807"},
        OkCase{"NegativeRoomKept", Payload(R"(,"room_id":-1)"), "room_id", "-1"},
        OkCase{"UnknownKeysIgnored",
               Payload(R"(,"extra":{"deep":[[{"x":"\u0000"}],null,1e400]},"note":true)"), "gift_id",
               "rose"},
        OkCase{"GiftIdTrimmed", Payload(",\"gift_id\":\" \u3000rose\u00A0\\t\""), "gift_id",
               "rose"},
        OkCase{"GiftNameTrimmed", Payload(",\"gift_name\":\"\u0085Rose \""), "gift_name", "Rose"},
        OkCase{"GiftIconTrimmed", Payload(R"(,"gift_icon":"  i.png\n")"), "gift_icon", "i.png"},
        OkCase{"EscapedGiftId", Payload(R"(,"gift_id":"caf\u00e9\ud83c\udf81")"), "gift_id",
               "caf\u00E9\U0001F381"},
        OkCase{"LoneSurrogateReplaced", Payload(R"(,"gift_id":"a\udc00")"), "gift_id", "a\uFFFD"},
        OkCase{"InvalidUtf8Replaced",
               Payload(",\"gift_id\":\"r\xff"
                       "se\""),
               "gift_id", "r\uFFFDse"},
        OkCase{"GiftIdAt64Bytes",
               Payload(absl::StrCat(",\"gift_id\":", Quoted(std::string(64, 'g')))), "gift_id",
               std::string(64, 'g')},
        OkCase{"GiftIdAt64BytesAfterTrim",
               Payload(absl::StrCat(",\"gift_id\":", Quoted("  " + std::string(64, 'g') + "  "))),
               "gift_id", std::string(64, 'g')},
        OkCase{"GiftNameAt128Bytes",
               Payload(absl::StrCat(",\"gift_name\":", Quoted(std::string(128, 'n')))), "gift_name",
               std::string(128, 'n')},
        OkCase{"GiftIconAt512Bytes",
               Payload(absl::StrCat(",\"gift_icon\":", Quoted(std::string(512, 'i')))), "gift_icon",
               std::string(512, 'i')},
        // The seed trims the payload, Unicode spaces included, before decoding it.
        OkCase{"PayloadTrimmed", "\u3000 " + Payload() + "\n\u00A0", "gift_id", "rose"}),
    CaseName());

struct ErrorCase {
  absl::string_view name;
  std::string json;
  std::string want_message;
};

// gtest prints a failing case by its name rather than as raw bytes.
void PrintTo(const ErrorCase& c, std::ostream* os) { *os << c.name; }

class ParseGiftPayloadErrorTest : public testing::TestWithParam<ErrorCase> {};

TEST_P(ParseGiftPayloadErrorTest, RejectsWithReason) {
  absl::StatusOr<GiftPayload> p = ParseGiftPayload(GetParam().json);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(p.status().message()), GetParam().want_message);
}

INSTANTIATE_TEST_SUITE_P(
    Invalid, ParseGiftPayloadErrorTest,
    testing::Values(
        // Empty means "{}", which lacks the required fields.
        ErrorCase{"Empty", "", "invalid gift payload: missing target_user_id"},
        ErrorCase{"Whitespace", " \n\t\u3000", "invalid gift payload: missing target_user_id"},
        ErrorCase{"EmptyObject", "{}", "invalid gift payload: missing target_user_id"},
        ErrorCase{"TopLevelNull", "null", "invalid gift payload: missing target_user_id"},
        ErrorCase{"NegativeTarget", R"({"target_user_id":-3,"gift_id":"a","gift_count":1})",
                  "invalid gift payload: target_user_id must be > 0, got -3"},
        ErrorCase{"ZeroTarget", R"({"target_user_id":0,"gift_id":"a","gift_count":1})",
                  "invalid gift payload: target_user_id must be > 0, got 0"},
        ErrorCase{"MissingGiftId", R"({"target_user_id":1,"gift_count":1})",
                  "invalid gift payload: missing gift_id"},
        ErrorCase{"BlankGiftId", Payload(",\"gift_id\":\" \u3000\\t\""),
                  "invalid gift payload: gift_id is blank"},
        ErrorCase{"GiftIdAt65Bytes",
                  Payload(absl::StrCat(",\"gift_id\":", Quoted(std::string(65, 'g')))),
                  "invalid gift payload: gift_id is 65 bytes, at most 64 allowed"},
        ErrorCase{"GiftIdAt70Bytes",
                  Payload(absl::StrCat(",\"gift_id\":", Quoted(std::string(70, 'g')))),
                  "invalid gift payload: gift_id is 70 bytes, at most 64 allowed"},
        ErrorCase{"MissingGiftCount", R"({"target_user_id":1,"gift_id":"a"})",
                  "invalid gift payload: missing gift_count"},
        ErrorCase{"ZeroGiftCount", Payload(R"(,"gift_count":0)"),
                  "invalid gift payload: gift_count must be > 0, got 0"},
        ErrorCase{"NegativeCoins", Payload(R"(,"coin_amount":-1)"),
                  "invalid gift payload: coin_amount must be >= 0, got -1"},
        ErrorCase{"GiftNameAt129Bytes",
                  Payload(absl::StrCat(",\"gift_name\":", Quoted(std::string(129, 'n')))),
                  "invalid gift payload: gift_name is 129 bytes, at most 128 allowed"},
        ErrorCase{"GiftIconAt513Bytes",
                  Payload(absl::StrCat(",\"gift_icon\":", Quoted(std::string(513, 'i')))),
                  "invalid gift payload: gift_icon is 513 bytes, at most 512 allowed"},
        // Decoding errors, as Go's json.Unmarshal would reject them.
        ErrorCase{"QuotedTarget", R"({"target_user_id":"1","gift_id":"a","gift_count":1})",
                  "invalid gift payload: field \"target_user_id\": want an integer, got string"},
        ErrorCase{"FractionalCount", Payload(R"(,"gift_count":1.0)"),
                  "invalid gift payload: field \"gift_count\": 1.0 is not an integer"},
        ErrorCase{"ExponentCount", Payload(R"(,"gift_count":1e3)"),
                  "invalid gift payload: field \"gift_count\": 1e3 is not an integer"},
        ErrorCase{"OverflowingCoins", Payload(R"(,"coin_amount":9223372036854775808)"),
                  "invalid gift payload: field \"coin_amount\": 9223372036854775808 overflows "
                  "int64"},
        ErrorCase{"NumberGiftName", Payload(R"(,"gift_name":5)"),
                  "invalid gift payload: field \"gift_name\": want a string, got number"},
        ErrorCase{"QuotedRoom", Payload(R"(,"room_id":"1")"),
                  "invalid gift payload: field \"room_id\": want an integer, got string"},
        ErrorCase{"TopLevelArray", "[" + Payload() + "]",
                  "invalid gift payload: payload must be a JSON object, got array"},
        ErrorCase{"TopLevelString", R"("{}")",
                  "invalid gift payload: payload must be a JSON object, got string"},
        ErrorCase{"TrailingGarbage", Payload() + "x",
                  "invalid gift payload: invalid JSON at byte 52: invalid character 'x' after "
                  "top-level value"},
        ErrorCase{"LeadingZero", Payload(R"(,"room_id":07)"),
                  "invalid gift payload: invalid JSON at byte 63: invalid character '7' after "
                  "object key:value pair"},
        ErrorCase{"ControlCharInGiftId", Payload(",\"gift_id\":\"a\x01\""),
                  "invalid gift payload: invalid JSON at byte 64: invalid character '\\x01' in "
                  "string literal"}),
    CaseName());

TEST(ParseGiftPayloadTest, NullGiftIdIsMissing) {
  absl::StatusOr<GiftPayload> p = ParseGiftPayload(Payload(R"(,"gift_id":null)"));
  // null leaves the earlier "rose" in place, as in Go.
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->gift_id, "rose");
  p = ParseGiftPayload(R"({"target_user_id":1,"gift_id":null,"gift_count":1})");
  EXPECT_EQ(std::string(p.status().message()), "invalid gift payload: missing gift_id");
}

TEST(ParseGiftPayloadTest, PayloadSizeLimit) {
  const std::string base = Payload(R"(,"pad":"")");
  const size_t pad = kMaxPayloadBytes - base.size();
  const std::string at_limit = Payload(absl::StrCat(",\"pad\":", Quoted(std::string(pad, 'p'))));
  ASSERT_EQ(at_limit.size(), kMaxPayloadBytes);
  EXPECT_TRUE(ParseGiftPayload(at_limit).ok());

  const std::string over = Payload(absl::StrCat(",\"pad\":", Quoted(std::string(pad + 1, 'p'))));
  absl::StatusOr<GiftPayload> p = ParseGiftPayload(over);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(p.status().message()),
            "invalid gift payload: payload is 65537 bytes, at most 65536 allowed");
}

TEST(ParseGiftPayloadTest, DeepNestingInUnknownKeyIsRejectedWithoutCrashing) {
  absl::StatusOr<GiftPayload> p =
      ParseGiftPayload(Payload(absl::StrCat(",\"x\":", std::string(60000, '['))));
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(p.status().message()), HasSubstr("nested deeper than 10000"));
}

// --payload_source=outbox compares the relay's payload with the outbox row's by what they say.
TEST(SameGiftPayloadTest, SameFieldsInAnyOrderOrSpacingAreTheSameGift) {
  EXPECT_TRUE(SameGiftPayload(R"({"target_user_id":7,"gift_id":"rose","gift_count":2})",
                              R"({ "gift_count": 2, "gift_id": " rose", "target_user_id": 7 })"));
  EXPECT_FALSE(SameGiftPayload(R"({"target_user_id":7,"gift_id":"rose","gift_count":2})",
                               R"({"target_user_id":7,"gift_id":"rose","gift_count":200})"));
  EXPECT_FALSE(SameGiftPayload(R"({"target_user_id":7,"gift_id":"rose","gift_count":2})",
                               R"({"target_user_id":7,"gift_id":"rose","gift_count":2,)"
                               R"("coin_amount":5})"));
  // What does not parse is compared byte for byte.
  EXPECT_TRUE(SameGiftPayload("{not json", "{not json"));
  EXPECT_FALSE(
      SameGiftPayload("{not json", R"({"target_user_id":7,"gift_id":"r","gift_count":1})"));
}

}  // namespace
}  // namespace giftwall::domain
