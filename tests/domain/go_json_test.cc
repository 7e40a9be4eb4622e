#include "server/domain/go_json.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
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
using ::testing::Not;

// "sku" has both letters with a non-ASCII fold partner: 's' (U+017F) and 'k' (U+212A).
constexpr GoJsonField kFields[] = {
    {"target_user_id", GoJsonKind::kInt64},
    {"gift_id", GoJsonKind::kString},
    {"gift_count", GoJsonKind::kInt64},
    {"sku", GoJsonKind::kString},
};

GoJsonValue Int(int64_t v) { return GoJsonValue(v); }
GoJsonValue Str(std::string v) { return GoJsonValue(std::move(v)); }
const GoJsonValue kAbsent = std::nullopt;

struct DecodeCase {
  absl::string_view name;
  std::string json;
  // target_user_id, gift_id, gift_count, sku
  std::vector<GoJsonValue> want;
};

// gtest prints a failing case by its name rather than as raw bytes.
void PrintTo(const DecodeCase& c, std::ostream* os) { *os << c.name; }

class DecodeGoJsonOkTest : public testing::TestWithParam<DecodeCase> {};

TEST_P(DecodeGoJsonOkTest, DecodesLikeGo) {
  std::vector<GoJsonValue> values;
  const absl::Status status = DecodeGoJsonObject(GetParam().json, kFields, &values);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(values, GetParam().want);
}

const std::vector<GoJsonValue> kNone = {kAbsent, kAbsent, kAbsent, kAbsent};

std::vector<GoJsonValue> GiftId(std::string v) {
  return {kAbsent, Str(std::move(v)), kAbsent, kAbsent};
}
std::vector<GoJsonValue> Count(int64_t v) { return {kAbsent, kAbsent, Int(v), kAbsent}; }

std::string Nested(size_t depth) {
  return R"({"unknown":)" + std::string(depth, '[') + std::string(depth, ']') + "}";
}

INSTANTIATE_TEST_SUITE_P(
    Valid, DecodeGoJsonOkTest,
    testing::Values(
        DecodeCase{"AllFields",
                   R"({"target_user_id":7,"gift_id":"rose","gift_count":3,"sku":"s-1"})",
                   {Int(7), Str("rose"), Int(3), Str("s-1")}},
        DecodeCase{"EmptyObject", "{}", kNone},
        DecodeCase{"JsonWhitespaceAround", " \t\r\n{ \"gift_id\" : \"x\" }\n\r\t ", GiftId("x")},
        DecodeCase{"TopLevelNull", "null", kNone},
        DecodeCase{"TopLevelNullWithSpace", " \nnull\t", kNone},
        // Keys: exact, then case-insensitive with Unicode simple folding.
        DecodeCase{"MixedCaseKeys",
                   R"({"Target_User_ID":1,"GIFT_ID":"a","Gift_Count":2,"SKU":"b"})",
                   {Int(1), Str("a"), Int(2), Str("b")}},
        DecodeCase{
            "LongSFoldsToS", "{\"target_u\u017Fer_id\":5}", {Int(5), kAbsent, kAbsent, kAbsent}},
        DecodeCase{"KelvinFoldsToK", "{\"s\u212Au\":\"k\"}", {kAbsent, kAbsent, kAbsent, Str("k")}},
        DecodeCase{"EscapedLongSAndKelvin",
                   R"({"\u017f\u212aU":"k"})",
                   {kAbsent, kAbsent, kAbsent, Str("k")}},
        DecodeCase{"EscapedKey", R"({"gift\u005fid":"x"})", GiftId("x")},
        // Dotless i and dotted capital I have no simple fold to 'i' and match nothing.
        DecodeCase{"DotlessIDoesNotMatch", "{\"g\u0131ft_id\":\"x\"}", kNone},
        DecodeCase{"DottedCapitalIDoesNotMatch", "{\"G\u0130FT_ID\":\"x\"}", kNone},
        DecodeCase{"InvalidUtf8KeyDoesNotMatch", "{\"gift_id\xff\":\"x\"}", kNone},
        // Repeated keys: the last non-null value wins; null leaves the field alone.
        DecodeCase{"LastDuplicateWins", R"({"gift_id":"a","gift_id":"b"})", GiftId("b")},
        DecodeCase{"LastDuplicateWinsAcrossCase", R"({"gift_id":"a","GIFT_ID":"b"})", GiftId("b")},
        DecodeCase{"NullIsAbsent", R"({"gift_id":null,"gift_count":null})", kNone},
        DecodeCase{"NullAfterValueKeepsString", R"({"gift_id":"a","gift_id":null})", GiftId("a")},
        DecodeCase{"NullAfterValueKeepsInt", R"({"gift_count":4,"Gift_Count":null})", Count(4)},
        // Integers as strconv.ParseInt reads them.
        DecodeCase{"Zero", R"({"gift_count":0})", Count(0)},
        DecodeCase{"NegativeZero", R"({"gift_count":-0})", Count(0)},
        DecodeCase{"Negative", R"({"gift_count":-42})", Count(-42)},
        DecodeCase{"Int64Max", R"({"gift_count":9223372036854775807})",
                   Count(std::numeric_limits<int64_t>::max())},
        DecodeCase{"Int64Min", R"({"gift_count":-9223372036854775808})",
                   Count(std::numeric_limits<int64_t>::min())},
        // Unknown keys are skipped whatever they hold, as long as it is JSON.
        DecodeCase{"UnknownKeysWithNestedValues",
                   R"({"extra":{"a":[1,2,{"b":null}],"c":"\u00e9\ud83d\ude00","d":{}},)"
                   R"("more":[[],{},[[[]]],true,false,null,-1.5e+10,0.5E-3,1e999999],)"
                   R"("gift_id":"x","tail":"\"}]"})",
                   GiftId("x")},
        DecodeCase{"UnknownKeysWithAnyType",
                   R"({"target_user_idx":"str","gift":{"id":5},"count":[1.5]})", kNone},
        DecodeCase{"UnknownKeyWithControlEscapes", R"({"x":"\b\f\n\r\t\/\\\"\u0000"})", kNone},
        DecodeCase{"MaxDepthInUnknownKey", Nested(9999), kNone},
        // Strings: escapes decoded, invalid UTF-8 and lone surrogates replaced with U+FFFD.
        DecodeCase{"SimpleEscapes", R"({"gift_id":"\"\\\/\b\f\n\r\t"})", GiftId("\"\\/\b\f\n\r\t")},
        DecodeCase{"UnicodeEscape", R"({"gift_id":"caf\u00e9 \u793C"})",
                   GiftId("caf\u00E9 \u793C")},
        DecodeCase{"UppercaseHexEscape", R"({"gift_id":"\u00C9"})", GiftId("\u00C9")},
        DecodeCase{"NulEscape", R"({"gift_id":"a\u0000b"})", GiftId(std::string("a\0b", 3))},
        DecodeCase{"SurrogatePair", R"({"gift_id":"\ud83c\udf81"})", GiftId("\U0001F381")},
        DecodeCase{"LoneHighSurrogate", R"({"gift_id":"a\ud800b"})", GiftId("a\uFFFDb")},
        DecodeCase{"LoneLowSurrogate", R"({"gift_id":"\udc00"})", GiftId("\uFFFD")},
        DecodeCase{"HighSurrogateThenOtherEscape", R"({"gift_id":"\ud800\u0041"})",
                   GiftId("\uFFFDA")},
        DecodeCase{"HighSurrogateThenPair", R"({"gift_id":"\ud800\ud83c\udf81"})",
                   GiftId("\uFFFD\U0001F381")},
        DecodeCase{"ReversedPair", R"({"gift_id":"\udf81\ud83c"})", GiftId("\uFFFD\uFFFD")},
        DecodeCase{"RawUtf8Kept", "{\"gift_id\":\"\u793C\U0001F381\"}", GiftId("\u793C\U0001F381")},
        DecodeCase{"InvalidByteReplaced",
                   "{\"gift_id\":\"a\xff"
                   "b\"}",
                   GiftId("a\uFFFDb")},
        // Go replaces each byte of a broken sequence, as utf8.DecodeRune reports width 1.
        DecodeCase{"TruncatedSequenceReplacedPerByte", "{\"gift_id\":\"\xe7\xa4\"}",
                   GiftId("\uFFFD\uFFFD")},
        DecodeCase{"EncodedSurrogateReplacedPerByte", "{\"gift_id\":\"\xed\xa0\x80\"}",
                   GiftId("\uFFFD\uFFFD\uFFFD")},
        DecodeCase{"OverlongReplacedPerByte", "{\"gift_id\":\"\xc0\xaf\"}", GiftId("\uFFFD\uFFFD")},
        DecodeCase{"RawReplacementCharKept", "{\"gift_id\":\"\uFFFD\"}", GiftId("\uFFFD")}),
    CaseName());

struct ErrorCase {
  absl::string_view name;
  std::string json;
  absl::string_view want_message;  // a substring of the error
};

// gtest prints a failing case by its name rather than as raw bytes.
void PrintTo(const ErrorCase& c, std::ostream* os) { *os << c.name; }

class DecodeGoJsonErrorTest : public testing::TestWithParam<ErrorCase> {};

TEST_P(DecodeGoJsonErrorTest, RejectsLikeGo) {
  std::vector<GoJsonValue> values;
  const absl::Status status = DecodeGoJsonObject(GetParam().json, kFields, &values);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr(GetParam().want_message));
}

INSTANTIATE_TEST_SUITE_P(
    Invalid, DecodeGoJsonErrorTest,
    testing::Values(
        ErrorCase{"Empty", "", "unexpected end of input"},
        ErrorCase{"OnlyWhitespace", " \n\t", "unexpected end of input"},
        // Not an object.
        ErrorCase{"TopLevelArray", R"([{"gift_id":"x"}])",
                  "payload must be a JSON object, got array"},
        ErrorCase{"TopLevelString", R"("x")", "payload must be a JSON object, got string"},
        ErrorCase{"TopLevelNumber", "12", "payload must be a JSON object, got number"},
        ErrorCase{"TopLevelBool", "true", "payload must be a JSON object, got bool"},
        // Syntax.
        ErrorCase{"TrailingGarbage", R"({"a":1} x)",
                  "invalid JSON at byte 8: invalid character 'x' after top-level value"},
        ErrorCase{"TwoObjects", "{}{}", "after top-level value"},
        ErrorCase{"ByteOffset", R"({"a":1 x})", "invalid JSON at byte 7: invalid character 'x'"},
        ErrorCase{"Unterminated", R"({"gift_id":"x")", "unexpected end of input"},
        ErrorCase{"UnterminatedString", R"({"gift_id":"x)", "unexpected end of input"},
        ErrorCase{"TrailingComma", R"({"a":1,})", "looking for beginning of object key string"},
        ErrorCase{"TrailingCommaInArray", R"({"a":[1,]})", "looking for beginning of value"},
        ErrorCase{"MissingColon", R"({"a" 1})", "after object key"},
        ErrorCase{"MissingComma", R"({"a":1 "b":2})", "after object key:value pair"},
        ErrorCase{"UnquotedKey", "{a:1}", "looking for beginning of object key string"},
        ErrorCase{"NumberKey", "{1:1}", "looking for beginning of object key string"},
        ErrorCase{"SingleQuotes", "{'a':1}", "looking for beginning of object key string"},
        ErrorCase{"LeadingZero", R"({"gift_count":01})",
                  "invalid character '1' after object key:value pair"},
        ErrorCase{"LeadingZeroInUnknownKey", R"({"x":[00]})", "after array element"},
        ErrorCase{"PlusSign", R"({"gift_count":+1})", "looking for beginning of value"},
        ErrorCase{"BareMinus", R"({"gift_count":-})", "in numeric literal"},
        ErrorCase{"MissingFraction", R"({"gift_count":1.})", "after decimal point"},
        ErrorCase{"LeadingDot", R"({"gift_count":.5})", "looking for beginning of value"},
        ErrorCase{"MissingExponent", R"({"gift_count":1e})", "in exponent"},
        ErrorCase{"NaN", R"({"x":NaN})", "looking for beginning of value"},
        ErrorCase{"Infinity", R"({"x":-Infinity})", "in numeric literal"},
        ErrorCase{"BadLiteral", R"({"x":nul})", "in literal null (expecting 'l')"},
        ErrorCase{"CapitalLiteral", R"({"x":True})", "looking for beginning of value"},
        ErrorCase{"TruncatedLiteral", R"({"x":tru)", "unexpected end of input"},
        ErrorCase{"RawTabInString", "{\"gift_id\":\"a\tb\"}", "in string literal"},
        ErrorCase{"RawNewlineInKey", "{\"gift\n_id\":\"a\"}", "in string literal"},
        ErrorCase{"RawControlInUnknownKey", "{\"x\":\"\x01\"}", "in string literal"},
        ErrorCase{"BadEscape", R"({"gift_id":"\x41"})", "in string escape code"},
        ErrorCase{"SingleQuoteEscape", R"({"gift_id":"\'"})", "in string escape code"},
        ErrorCase{"ShortUnicodeEscape", R"({"gift_id":"\u12"})", "hexadecimal character escape"},
        ErrorCase{"BadHexInPairedEscape", R"({"x":"\ud83c\udfzz"})",
                  "hexadecimal character escape"},
        ErrorCase{"NoBreakSpaceIsNotJsonSpace", "\u00A0{}", "looking for beginning of value"},
        ErrorCase{"ByteOrderMark", "\uFEFF{}", "looking for beginning of value"},
        ErrorCase{"UnclosedNested", R"({"x":{"y":[1,2})", "after array element"},
        // Found by go_json_differential_test: input that ends inside a literal, a number or an
        // escape. Go's scanner steps an imaginary space at the end and says "invalid character
        // ' ' in literal null (expecting 'l')"; the offset is the same, the input's length.
        ErrorCase{"EndInsideLiteral", "nul", "invalid JSON at byte 3: unexpected end of input"},
        ErrorCase{"EndInsideFalse", R"({"x":[true,fa)",
                  "invalid JSON at byte 13: unexpected end of input"},
        ErrorCase{"EndAfterMinus", R"({"gift_count":-)",
                  "invalid JSON at byte 15: unexpected end of input"},
        ErrorCase{"EndInsideExponent", R"({"gift_count":1e+)",
                  "invalid JSON at byte 17: unexpected end of input"},
        ErrorCase{"EndAfterBackslash", R"({"gift_id":"\)",
                  "invalid JSON at byte 13: unexpected end of input"},
        ErrorCase{"EndInsideUnicodeEscape", R"({"gift_id":"\uDE00\uD)",
                  "invalid JSON at byte 21: unexpected end of input"},
        ErrorCase{"TooDeepInUnknownKey", Nested(10000), "nested deeper than 10000 levels"},
        ErrorCase{"TopLevelArrayAtMaxDepth", std::string(10000, '[') + std::string(10000, ']'),
                  "payload must be a JSON object, got array"},
        ErrorCase{"TopLevelNullThenGarbage", "null x", "after top-level value"},
        ErrorCase{"TooDeepTopLevelArray", std::string(100000, '['), "nested deeper than 10000"},
        // Types of known fields: Go's UnmarshalTypeError.
        ErrorCase{"QuotedInteger", R"({"gift_count":"1"})",
                  R"(field "gift_count": want an integer, got string)"},
        ErrorCase{"BoolForInteger", R"({"gift_count":true})", "want an integer, got bool"},
        ErrorCase{"ObjectForInteger", R"({"gift_count":{"n":1}})", "want an integer, got object"},
        ErrorCase{"ArrayForInteger", R"({"gift_count":[1]})", "want an integer, got array"},
        ErrorCase{"CaseFoldedKeyTypeChecked", R"({"GIFT_COUNT":"1"})",
                  R"(field "gift_count": want an integer, got string)"},
        ErrorCase{"Fraction", R"({"gift_count":1.0})",
                  R"(field "gift_count": 1.0 is not an integer)"},
        ErrorCase{"Exponent", R"({"gift_count":1e3})",
                  R"(field "gift_count": 1e3 is not an integer)"},
        ErrorCase{"Int64MaxPlusOne", R"({"gift_count":9223372036854775808})",
                  R"(field "gift_count": 9223372036854775808 overflows int64)"},
        ErrorCase{"Int64MinMinusOne", R"({"gift_count":-9223372036854775809})", "overflows int64"},
        ErrorCase{"HugeInteger", R"({"gift_count":99999999999999999999})",
                  "99999999999999999999 overflows int64"},
        ErrorCase{"NumberForString", R"({"gift_id":5})",
                  R"(field "gift_id": want a string, got number)"},
        ErrorCase{"BoolForString", R"({"gift_id":false})", "want a string, got bool"},
        ErrorCase{"ArrayForString", R"({"gift_id":["x"]})", "want a string, got array"},
        ErrorCase{"ObjectForString", R"({"gift_id":{}})", "want a string, got object"},
        // A wrong type is an error even when a later duplicate is fine, as in Go.
        ErrorCase{"WrongTypeThenValid", R"({"gift_count":"1","gift_count":1})",
                  "want an integer, got string"},
        // The first type error is the one reported.
        ErrorCase{"FirstTypeErrorWins", R"({"gift_count":"1","gift_id":5})",
                  R"(field "gift_count")"}),
    CaseName());

TEST(DecodeGoJsonTest, SyntaxErrorAnywhereWinsOverTypeError) {
  std::vector<GoJsonValue> values;
  const absl::Status status =
      DecodeGoJsonObject(R"({"gift_count":"1","x":[1,2}})", kFields, &values);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("invalid JSON at byte"));
  EXPECT_THAT(std::string(status.message()), Not(HasSubstr("gift_count")));
}

TEST(DecodeGoJsonTest, LongLiteralIsShortenedInMessage) {
  std::vector<GoJsonValue> values;
  const absl::Status status =
      DecodeGoJsonObject(R"({"gift_count":)" + std::string(1000, '9') + "}", kFields, &values);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("... overflows int64"));
  EXPECT_LT(status.message().size(), 200u);
}

TEST(DecodeGoJsonTest, DeepObjectNestingDoesNotCrash) {
  std::string json = "{";
  for (int i = 0; i < 100000; ++i) json += R"("a":{)";
  std::vector<GoJsonValue> values;
  const absl::Status status = DecodeGoJsonObject(json, kFields, &values);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("nested deeper than 10000"));
}

TEST(DecodeGoJsonTest, EmptyFieldListSkipsEverything) {
  std::vector<GoJsonValue> values = {Int(1)};
  ASSERT_TRUE(DecodeGoJsonObject(R"({"gift_id":"x"})", {}, &values).ok());
  EXPECT_TRUE(values.empty());
}

TEST(DecodeGoJsonTest, ExactNameBeatsFoldedName) {
  // Two fields that fold alike: an exact key goes to its own field, a folded one to the first.
  constexpr GoJsonField kCased[] = {{"ID", GoJsonKind::kInt64}, {"id", GoJsonKind::kInt64}};
  std::vector<GoJsonValue> values;
  ASSERT_TRUE(DecodeGoJsonObject(R"({"id":1,"ID":2})", kCased, &values).ok());
  EXPECT_EQ(values, (std::vector<GoJsonValue>{Int(2), Int(1)}));
  ASSERT_TRUE(DecodeGoJsonObject(R"({"Id":3})", kCased, &values).ok());
  EXPECT_EQ(values, (std::vector<GoJsonValue>{Int(3), kAbsent}));
}

}  // namespace
}  // namespace giftwall::domain
