// Differential test of the Go-compatible JSON reader (server/domain/go_json.h) against Go itself:
// tests/domain/go_differential/decode_payload.go decodes the same corpus with encoding/json into
// the seed's giftMetadata struct, and both sides must agree on every case: accept or reject,
// the decoded values, and for a rejection its kind (syntax or type), byte offset and field.
//
// The corpus is the hand-written cases below plus random ones, generated and mutated from them
// with a seeded PRNG, so a run is reproducible. GIFTWALL_GO_DIFF_SEED and
// GIFTWALL_GO_DIFF_RANDOM_CASES (environment) explore further; a failure prints the seed.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "server/domain/gift_payload.h"
#include "server/domain/go_json.h"

// The Go decoder built by tests/CMakeLists.txt; empty when go was not found at configure time.
#ifndef GIFTWALL_GO_DECODER
#define GIFTWALL_GO_DECODER ""
#endif

namespace giftwall::domain {
namespace {

constexpr absl::string_view kGoDecoder = GIFTWALL_GO_DECODER;
constexpr uint64_t kDefaultSeed = 20240610;
constexpr size_t kDefaultRandomCases = 900;
// Mismatches reported one by one; the rest are counted.
constexpr size_t kMaxReportedMismatches = 40;

// The seed's giftMetadata, field by field, as decode_payload.go declares it.
constexpr GoJsonField kSeedFields[] = {
    {"target_user_id", GoJsonKind::kInt64}, {"gift_id", GoJsonKind::kString},
    {"gift_count", GoJsonKind::kInt64},     {"sender_user_id", GoJsonKind::kInt64},
    {"coin_amount", GoJsonKind::kInt64},    {"gift_name", GoJsonKind::kString},
    {"gift_icon", GoJsonKind::kString},     {"room_id", GoJsonKind::kInt64},
    {"anonymous", GoJsonKind::kBool},
};

struct Case {
  std::string name;
  std::string input;
};

// --- The hand-written corpus -----------------------------------------------------------------

// The required fields, then `extra` (later duplicates win).
std::string Payload(absl::string_view extra = "") {
  return absl::StrCat(R"({"target_user_id":9,"gift_id":"rose","gift_count":2)", extra, "}");
}

std::string GiftId(absl::string_view raw_json_string_body) {
  return absl::StrCat(R"({"gift_id":")", raw_json_string_body, "\"}");
}

std::string Count(absl::string_view literal) {
  return absl::StrCat(R"({"gift_count":)", literal, "}");
}

std::string Repeat(absl::string_view s, size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (size_t i = 0; i < n; ++i) out.append(s.data(), s.size());
  return out;
}

// `open` repeated `depth` times around `inner`, each closed by `close`.
std::string Nest(absl::string_view open, absl::string_view close, size_t depth,
                 absl::string_view inner = "") {
  return absl::StrCat(Repeat(open, depth), inner, Repeat(close, depth));
}

std::vector<Case> HandCorpus() {
  std::vector<Case> c;
  auto add = [&c](std::string name, std::string input) {
    c.push_back({std::move(name), std::move(input)});
  };

  // Valid objects.
  add("AllFields",
      R"({"target_user_id":9,"gift_id":"rose","gift_count":2,"sender_user_id":5,)"
      R"("coin_amount":300,"gift_name":"Rose","gift_icon":"https://x/r.png","room_id":77})");
  add("AllFieldsPretty",
      "{\n\t\"target_user_id\" : 9 ,\r\n\t\"gift_id\"\t:\t\"rose\",\n  \"gift_count\":2,"
      "\"sender_user_id\":5,\"coin_amount\":300,\"gift_name\":\"Rose\",\"gift_icon\":\"i\","
      "\"room_id\":77\n}\n");
  add("RequiredOnly", Payload());
  add("EmptyObject", "{}");
  add("EmptyObjectSpaced", "{ \t\r\n}");
  add("UnknownKeysOnly", R"({"x":1,"y":[true,false,null],"z":{"a":"b"},"w":-0.5e-7})");
  add("UnknownKeysAroundKnown",
      Payload(R"(,"extra":{"deep":[[{"x":"\u0000"}],null,1e400]},"note":true,"z":[])"));
  add("EmptyKey", R"({"":1,"gift_id":"a"})");
  add("LongUnknownKey", absl::StrCat("{\"", std::string(1000, 'k'), "\":1}"));
  add("NamesAsPrefixOrSuffix", R"({"gift_idx":"a","xgift_id":"b","gift_id ":"c"," gift_id":"d"})");
  add("DashInsteadOfUnderscore", R"({"gift-id":"a","giftid":"b","gift__id":"c"})");
  add("KeyIsQuotedName", R"({"\"gift_id\"":"a"})");
  add("ValueLooksLikeJson", R"({"gift_id":"{\"gift_id\":1}"})");
  add("StringNullForString", R"({"gift_id":"null"})");

  // Invalid JSON.
  add("Empty", "");
  add("OnlySpace", " ");
  add("OnlyNewline", "\n");
  add("OnlyJsonSpaces", "\t\r\n ");
  add("OpenBrace", "{");
  add("CloseBrace", "}");
  add("OpenBracket", "[");
  add("Comma", ",");
  add("Colon", ":");
  add("LoneQuote", "\"");
  add("UnterminatedTopString", "\"abc");
  add("KeyWithoutValue", R"({"a"})");
  add("KeyColonNoValue", R"({"a":})");
  add("CommaOnly", "{,}");
  add("DoubleComma", R"({"a":1,,"b":2})");
  add("LeadingComma", R"({,"a":1})");
  add("TrailingComma", R"({"a":1,})");
  add("TrailingCommaInArray", R"({"a":[1,]})");
  add("MissingColon", R"({"a" 1})");
  add("DoubleColon", R"({"a"::1})");
  add("MissingComma", R"({"a":1 "b":2})");
  add("UnquotedKey", "{a:1}");
  add("NumberKey", "{1:1}");
  add("NullKey", "{null:1}");
  add("SingleQuotes", "{'gift_id':'a'}");
  add("UnterminatedObject", R"({"gift_id":"x")");
  add("UnterminatedKey", R"({"gift_id)");
  add("UnterminatedValue", R"({"gift_id":"x)");
  add("MismatchedBrackets", R"({"a":[}])");
  add("ArrayWithColon", R"({"a":[1:2]})");
  add("ObjectInsideObjectWithoutKey", R"({{}})");
  add("BlockComment", "/*c*/{}");
  add("LineComment", "{}//c");
  add("BadLiteralNul", R"({"x":nul})");
  add("BadLiteralNulll", R"({"x":nulll})");
  add("BadLiteralTru", R"({"x":tru})");
  add("CapitalTrue", R"({"x":True})");
  add("UpperNull", "NULL");
  add("TruncatedNull", "nul");
  add("NaN", R"({"x":NaN})");
  add("Infinity", R"({"x":Infinity})");
  add("MinusInfinity", R"({"x":-Infinity})");
  add("UnclosedNested", R"({"x":{"y":[1,2})");
  // Input that ends inside a literal, a number or an escape (see NormalizeGoEndOfInput).
  add("EndInsideFalse", R"({"x":[true,fa)");
  add("EndAfterMinus", R"({"gift_count":-)");
  add("EndAfterDecimalPoint", R"({"gift_count":1.)");
  add("EndInsideExponent", R"({"gift_count":1e+)");
  add("EndAfterBackslash", R"({"gift_id":"\)");
  add("EndInsideUnicodeEscape", R"({"gift_id":"\uDE00\uD)");
  add("EndAfterNumberAtTopLevel", "-12");

  // Duplicate keys: the last non-null value wins; a wrong type anywhere is an error.
  add("DuplicateString", R"({"gift_id":"a","gift_id":"b"})");
  add("DuplicateAcrossCase", R"({"gift_count":1,"GIFT_COUNT":2,"Gift_Count":3})");
  add("DuplicateThenNull", R"({"gift_id":"a","gift_id":null})");
  add("NullThenDuplicate", R"({"gift_id":null,"gift_id":"a"})");
  add("WrongTypeThenValid", R"({"gift_count":"1","gift_count":1})");
  add("ValidThenWrongType", R"({"gift_count":1,"gift_count":"1"})");
  add("ValidThenFraction", R"({"gift_count":1,"gift_count":1.5})");
  add("FirstTypeErrorWins", R"({"gift_count":[],"gift_id":5})");
  add("FirstTypeErrorWinsReversed", R"({"gift_id":5,"gift_count":[]})");
  add("SyntaxErrorAfterTypeError", R"({"gift_count":"1","x":[1,2}})");
  add("TrailingGarbageAfterTypeError", R"({"gift_count":"1"} x)");
  add("UnterminatedAfterTypeError", R"({"gift_count":"1","gift_count":)");
  add("DuplicateRequiredFields", Payload(R"(,"target_user_id":10,"GIFT_ID":"lily")"));

  // Case-variant keys, and Unicode simple folding (U+017F long s, U+212A Kelvin sign).
  add("UpperCaseKeys",
      R"({"TARGET_USER_ID":1,"GIFT_ID":"a","GIFT_COUNT":2,"SENDER_USER_ID":3,"COIN_AMOUNT":4,)"
      R"("GIFT_NAME":"n","GIFT_ICON":"i","ROOM_ID":5})");
  add("MixedCaseKeys",
      R"({"Target_User_Id":1,"gIfT_iD":"a","Gift_Count":2,"sender_USER_id":3,"Coin_Amount":4,)"
      R"("gift_Name":"n","gift_ICON":"i","Room_Id":5})");
  add("LongSInTarget", "{\"target_u\u017Fer_id\":4}");
  add("LongSInSender", "{\"\u017Fender_u\u017Fer_id\":4}");
  add("LongSUpperCaseSender", "{\"\u017FENDER_U\u017FER_ID\":4}");
  add("EscapedLongS", R"({"target_u\u017fer_id":4,"\u017Fender_user_id":5})");
  add("LongSWhereNoS", "{\"gift_id\u017F\":\"a\",\"\u017Foin_amount\":1}");
  add("KelvinInKeys", "{\"\u212Aelvin\":1,\"gift_id\u212A\":\"a\",\"room_id\":2}");
  add("EscapedKelvin", R"({"\u212a":1,"gift_\u212Aount":2})");
  add("KelvinForS", "{\"target_u\u212Aer_id\":4}");
  add("LongSForC", "{\"gift_\u017Fount\":4}");
  add("DotlessI", "{\"g\u0131ft_id\":\"a\",\"target_user_\u0131d\":1}");
  add("DottedCapitalI", "{\"G\u0130FT_ID\":\"a\"}");
  add("FullwidthLetters", "{\"\uFF47\uFF49\uFF46\uFF54_\uFF49\uFF44\":\"a\"}");
  add("CyrillicI", "{\"gift_\u0456d\":\"a\"}");
  add("CapitalSharpS", "{\"target_u\u1E9Eer_id\":1}");
  add("EscapedAsciiKey", R"({"\u0067ift_id":"a","GIFT\u005fCOUNT":2})");
  add("KeyWithNulEscape", R"({"gift_id\u0000":"a"})");
  add("KeyWithLoneSurrogate", R"({"gift_id\ud800":"a"})");
  add("KeyInvalidUtf8Suffix", "{\"gift_id\xff\":\"a\"}");
  add("KeyInvalidUtf8Prefix",
      "{\"\xff"
      "gift_id\":\"a\"}");
  add("KeyInvalidUtf8Inside",
      "{\"g\xc3"
      "ift_id\":\"a\"}");
  add("KeyTruncatedLongS",
      "{\"target_u\xc5"
      "er_id\":1}");
  add("KeyOnlyInvalidUtf8", "{\"\xff\":1}");

  // null.
  add("TopLevelNull", "null");
  add("TopLevelNullSpaced", " \n\tnull\r ");
  add("TopLevelNullTwice", "null null");
  add("AllFieldsNull",
      R"({"target_user_id":null,"gift_id":null,"gift_count":null,"sender_user_id":null,)"
      R"("coin_amount":null,"gift_name":null,"gift_icon":null,"room_id":null})");
  add("NullInUnknownKey", R"({"x":null})");

  // Integers, as strconv.ParseInt reads them, and what is not one.
  for (const auto& [name, literal] : std::vector<std::pair<std::string, std::string>>{
           {"Zero", "0"},
           {"NegativeZero", "-0"},
           {"One", "1"},
           {"MinusOne", "-1"},
           {"Int64Max", "9223372036854775807"},
           {"Int64Min", "-9223372036854775808"},
           {"Int64MaxPlusOne", "9223372036854775808"},
           {"Int64MinMinusOne", "-9223372036854775809"},
           {"Uint64Max", "18446744073709551615"},
           {"Uint64MaxPlusOne", "18446744073709551616"},
           {"TwentyThreeDigits", "99999999999999999999999"},
           {"ThousandDigits", std::string(1000, '7')},
           {"ThousandZerosThenOne", "0" + std::string(999, '0') + "1"},
           {"FractionZero", "1.0"},
           {"Fraction", "1.5"},
           {"NegativeFraction", "-1.5"},
           {"ExponentZero", "1e0"},
           {"CapitalExponent", "1E2"},
           {"PlusExponent", "1e+2"},
           {"MinusExponent", "1e-2"},
           {"ZeroExponent", "0e0"},
           {"NegativeZeroExponent", "-0e0"},
           {"ZeroPointZero", "0.0"},
           {"NegativeZeroPointZero", "-0.0"},
           {"HugeExponent", "1e400"},
           {"DoubleZero", "00"},
           {"LeadingZero", "01"},
           {"NegativeLeadingZero", "-01"},
           {"Hex", "0x1"},
           {"PlusSign", "+1"},
           {"LeadingDot", ".5"},
           {"TrailingDot", "1."},
           {"BareExponent", "1e"},
           {"SignedBareExponent", "1e+"},
           {"BareMinus", "-"},
           {"DoubleMinus", "--1"},
           {"TrailingMinus", "1-"},
           {"TwoDots", "1.2.3"},
           {"DoubleExponent", "1ee2"},
           {"Quoted", "\"1\""},
           {"QuotedNegativeZero", "\"-0\""},
           {"Underscore", "1_000"},
           {"Letters", "123abc"},
           {"True", "true"},
           {"False", "false"},
           {"Array", "[1]"},
           {"EmptyArray", "[]"},
           {"Object", "{\"n\":1}"},
           {"EmptyObject", "{}"},
           {"SpaceInside", "1 2"},
       }) {
    add("GiftCount" + name, Count(literal));
    add("UnknownNumber" + name, absl::StrCat(R"({"x":[)", literal, "]}"));
  }
  add("NumberForString", R"({"gift_id":1})");
  add("NegativeZeroForString", R"({"gift_id":-0})");
  add("BoolForString", R"({"gift_name":true})");
  add("ArrayForString", R"({"gift_icon":["x"]})");
  add("ObjectForString", R"({"gift_id":{}})");
  add("OverflowingCoins", Payload(R"(,"coin_amount":9223372036854775808)"));
  add("NegativeCoins", Payload(R"(,"coin_amount":-1)"));
  add("NegativeSender", Payload(R"(,"sender_user_id":-7)"));
  add("NegativeRoom", Payload(R"(,"room_id":-1)"));
  // anonymous, a Go bool: true or false only; null leaves it false; a key in any case.
  add("Anonymous", Payload(R"(,"anonymous":true)"));
  add("NotAnonymous", Payload(R"(,"anonymous":false)"));
  add("AnonymousNull", Payload(R"(,"anonymous":null)"));
  add("AnonymousUpperCase", Payload(R"(,"ANONYMOUS":true)"));
  add("AnonymousTwiceLastWins", Payload(R"(,"anonymous":true,"anonymous":false)"));
  add("AnonymousTrueThenNull", Payload(R"(,"anonymous":true,"anonymous":null)"));
  add("AnonymousString", Payload(R"(,"anonymous":"true")"));
  add("AnonymousNumber", Payload(R"(,"anonymous":1)"));
  add("AnonymousObject", Payload(R"(,"anonymous":{})"));
  add("AnonymousArray", Payload(R"(,"anonymous":[true])"));
  add("AnonymousTruncated", Payload(R"(,"anonymous":tru)"));
  add("AnonymousCapitalTrue", Payload(R"(,"anonymous":True)"));
  add("BoolForInteger", Payload(R"(,"room_id":true)"));
  add("ZeroTarget", R"({"target_user_id":0,"gift_id":"a","gift_count":1})");
  add("NegativeCount", Payload(R"(,"gift_count":-2)"));

  // Strings: escapes.
  for (const auto& [name, body] : std::vector<std::pair<std::string, std::string>>{
           {"SimpleEscapes", R"(\"\\\/\b\f\n\r\t)"},
           {"NulEscape", R"(a\u0000b)"},
           {"LatinEscape", R"(caf\u00e9)"},
           {"UpperHexEscape", R"(\u00C9)"},
           {"BmpEscapes", R"(\u0080\u07FF\u0800\uFFFF\uFFFE\uFEFF)"},
           {"SurrogatePair", R"(\uD83D\uDE00)"},
           {"MaxSurrogatePair", R"(\uDBFF\uDFFF)"},
           {"LoneHighSurrogate", R"(a\ud800b)"},
           {"LoneHighSurrogateAtEnd", R"(\ud800)"},
           {"LoneLowSurrogate", R"(\udc00)"},
           {"HighThenAsciiEscape", R"(\uD83D\u0041)"},
           {"HighThenRawChar", R"(\uD83Dx)"},
           {"HighThenHighThenLow", R"(\uD800\uD800\uDC00)"},
           {"ReversedPair", R"(\uDE00\uD83D)"},
           {"HighThenSimpleEscape", R"(\uD83D\n)"},
           {"HighThenShortEscape", R"(\uD83D\u12)"},
           {"EscapedReplacementChar", R"(\uFFFD)"},
           {"BadEscapeX", R"(\x41)"},
           {"BadEscapeQuote", R"(\')"},
           {"BadEscapeA", R"(\a)"},
           {"BadEscapeCapitalU", R"(\U0041)"},
           {"BadEscapeZero", R"(\0)"},
           {"BadEscapeSpace", R"(\ )"},
           {"ShortUnicodeEscape", R"(\u12)"},
           {"BadHexDigit", R"(\u12G4)"},
           {"EmptyUnicodeEscape", R"(\u)"},
           {"SignedUnicodeEscape", R"(\u+123)"},
           {"TrailingBackslash", R"(\)"},
           // Go's strings.TrimSpace trims \v and \f but not U+001C..U+001F.
           {"UnitSeparatorEscapes", R"(\u001frose\u001c)"},
           {"VerticalTabAndFormFeedEscapes", R"(\u000b rose \u000c)"},
           {"UnicodeSpaceEscapes", R"(\u0085\u2029rose\u3000\u00a0)"},
           {"OnlySpaceEscapes", R"(\u2000\u205F\t)"},
       }) {
    add("GiftId" + name, GiftId(body));
    add("PayloadGiftId" + name, Payload(absl::StrCat(",\"gift_id\":\"", body, "\"")));
    add("Key" + name, absl::StrCat("{\"", body, "\":1}"));
  }

  // Strings: raw bytes, control characters and invalid UTF-8.
  for (const auto& [name, body] : std::vector<std::pair<std::string, std::string>>{
           {"RawSoh", "\x01"},
           {"RawUnitSeparator", "\x1f"},
           {"RawDel", "\x7f"},
           {"RawTab", "\t"},
           {"RawNewline", "\n"},
           {"RawNul", std::string(1, '\0')},
           {"Ff",
            "a\xff"
            "b"},
           {"Fe", "\xfe"},
           {"LoneContinuation", "\x80"},
           {"LoneBf", "\xbf"},
           {"OverlongSlash", "\xc0\xaf"},
           {"OverlongC1", "\xc1\xbf"},
           {"OverlongThreeByte", "\xe0\x80\xaf"},
           {"EncodedHighSurrogate", "\xed\xa0\x80"},
           {"EncodedLowSurrogate", "\xed\xbf\xbf"},
           {"AboveMaxRune", "\xf4\x90\x80\x80"},
           {"F5Lead", "\xf5\x80\x80\x80"},
           {"FiveByteForm", "\xf8\x88\x80\x80\x80"},
           {"TruncatedFourByte", "\xf0\x9f\x8e"},
           {"TruncatedThreeByte", "\xe2\x82"},
           {"TruncatedThenAscii",
            "\xe2\x82"
            "a"},
           {"ValidTwoByte", "\xc3\xa9"},
           {"ValidThreeByte", "\xe7\xa4\xbc"},
           {"ValidFourByte", "\xf0\x9f\x8e\x81"},
           {"MaxRune", "\xf4\x8f\xbf\xbf"},
           {"RawReplacementChar", "\xef\xbf\xbd"},
           {"RawByteOrderMark", "\xef\xbb\xbf"},
           {"UnicodeSpacesAround", "\xc2\xa0 rose\xe3\x80\x80\t"},
           {"NextLineAround", "\xc2\x85rose\xc2\x85"},
           {"LineSeparatorAround", "\xe2\x80\xa8rose\xe2\x81\x9f"},
           {"ZeroWidthSpaceIsNotSpace", "\xe2\x80\x8brose"},
           {"MongolianVowelSeparatorIsNotSpace", "\xe1\xa0\x8erose"},
           {"OnlyUnicodeSpaces", "\xe3\x80\x80\xc2\xa0"},
           {"InvalidByteNextToSpace", "\xc2\xc2\xa0rose\xa0"},
       }) {
    add("GiftIdRaw" + name, GiftId(body));
    add("PayloadGiftIdRaw" + name, Payload(absl::StrCat(",\"gift_id\":\"", body, "\"")));
  }
  add("UnterminatedAfterLeadByte", "{\"gift_id\":\"\xc2");
  add("InvalidUtf8OutsideString", "{\"gift_id\":\"a\"\xff}");

  // Field sizes around the limits ParseGiftPayload adds (DESIGN §2.5).
  add("GiftIdAt64Bytes", Payload(absl::StrCat(",\"gift_id\":\"", std::string(64, 'g'), "\"")));
  add("GiftIdAt65Bytes", Payload(absl::StrCat(",\"gift_id\":\"", std::string(65, 'g'), "\"")));
  add("GiftIdPaddedTo66", Payload(absl::StrCat(",\"gift_id\":\" ", std::string(64, 'g'), " \"")));
  add("GiftIdMultibyteAt64", Payload(absl::StrCat(",\"gift_id\":\"", Repeat("\u793C", 21),
                                                  "g\"")));  // 63 + 1 bytes
  add("GiftIdEscapesTo66", Payload(absl::StrCat(",\"gift_id\":\"", Repeat(R"(\u00e9)", 33), "\"")));
  add("GiftNameAt128Bytes",
      Payload(absl::StrCat(",\"gift_name\":\"", std::string(128, 'n'), "\"")));
  add("GiftNameAt129Bytes",
      Payload(absl::StrCat(",\"gift_name\":\"", std::string(129, 'n'), "\"")));
  add("GiftIconAt512Bytes",
      Payload(absl::StrCat(",\"gift_icon\":\"", std::string(512, 'i'), "\"")));
  add("GiftIconAt513Bytes",
      Payload(absl::StrCat(",\"gift_icon\":\"", std::string(513, 'i'), "\"")));
  add("PayloadOver64KiB", Payload(absl::StrCat(",\"pad\":\"", std::string(70000, 'p'), "\"")));
  add("BlankGiftId", Payload(",\"gift_id\":\" \\t\\n\""));
  add("EmptyGiftId", Payload(",\"gift_id\":\"\""));

  // Deep nesting of unknown values: Go's scanner allows 10000 levels, the top object included.
  add("ArraysAtMaxDepth", absl::StrCat("{\"x\":", Nest("[", "]", 9999), "}"));
  add("ArraysOverMaxDepth", absl::StrCat("{\"x\":", Nest("[", "]", 10000), "}"));
  add("ObjectsAtMaxDepth", absl::StrCat("{\"x\":", Nest("{\"a\":", "}", 9998, "{}"), "}"));
  add("ObjectsOverMaxDepth", absl::StrCat("{\"x\":", Nest("{\"a\":", "}", 9999, "{}"), "}"));
  add("MixedAtMaxDepth", absl::StrCat("{\"x\":", Nest("[{\"a\":", "}]", 4999, "[]"), "}"));
  add("MixedOverMaxDepth", absl::StrCat("{\"x\":", Nest("[{\"a\":", "}]", 4999, "[[]]"), "}"));
  add("PayloadWithDeepUnknown",
      Payload(absl::StrCat(",\"x\":", Nest("[", "]", 9999, "1"), ",\"gift_count\":3")));
  add("DeepThenTypeError", absl::StrCat("{\"x\":", Nest("[", "]", 9999), ",\"gift_count\":\"1\"}"));
  add("DeepThenGarbage", absl::StrCat("{\"x\":", Nest("[", "]", 9999), "}x"));
  add("DeepInKnownIntField", Count(Nest("[", "]", 9999)));
  add("TooDeepInKnownIntField", Count(Nest("[", "]", 10000)));
  add("DeepInKnownStringField",
      absl::StrCat("{\"gift_id\":", Nest("{\"a\":", "}", 9998, "{}"), "}"));
  add("TopLevelArraysAtMaxDepth", Nest("[", "]", 10000));
  add("TopLevelArraysOverMaxDepth", Nest("[", "]", 10001));
  add("UnclosedDeepArrays", std::string(100000, '['));
  add("UnclosedDeepObjects", "{" + Repeat("\"a\":{", 20000));
  add("DeepButUnterminated",
      absl::StrCat("{\"x\":", std::string(9999, '['), std::string(9998, ']')));

  // White space, and what only looks like it.
  add("AllJsonSpaces", " \t\r\n{ \t\r\n\"gift_id\" \t\r\n: \t\r\n\"x\" \t\r\n} \t\r\n");
  add("FormFeedBefore", "\f{}");
  add("VerticalTabBefore", "\v{}");
  add("NoBreakSpaceBefore", "\u00A0{}");
  add("IdeographicSpaceAround", "\u3000" + Payload() + "\u3000");
  add("NextLineBefore", "\u0085" + Payload());
  add("ByteOrderMarkBefore", "\uFEFF{}");
  add("NoBreakSpaceAfter", "{}\u00A0");
  add("NoBreakSpaceInside", "{\u00A0}");
  add("UnicodeSpaceOnly", "\u3000");
  add("NulAfter", std::string("{}\0", 3));
  add("NulBefore", std::string("\0{}", 3));
  add("TruncatedSpaceBefore", "\xc2{}");
  add("EnQuadThenContinuationBefore", "\xe2\x80\x80\x80" + Payload());
  add("EnQuadThenContinuationAfter", Payload() + "\xe2\x80\x80\x80");
  add("ContinuationThenEnQuadAfter", Payload() + "\x80\xe2\x80\x80");
  add("InformationSeparatorBefore", "\x1f" + Payload());
  add("VerticalTabAndFormFeedAround", "\v\f" + Payload() + "\f\v");
  add("ManyUnicodeSpacesAround",
      "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200A" + Payload() +
          "\u1680\u2028\u2029\u202F\u205F\u3000\u0085\u00A0");

  // Trailing garbage.
  add("GarbageLetter", "{}x");
  add("TwoObjects", "{} {}");
  add("ExtraBrace", "{}}");
  add("ExtraBracket", "{}]");
  add("TrailingCommaTop", "{},");
  add("NumberAfter", "{} 1");
  add("PayloadThenGarbage", Payload() + "x");

  // Top-level values that are not objects.
  for (const auto& [name, input] : std::vector<std::pair<std::string, std::string>>{
           {"Number", "1"},
           {"NegativeZero", "-0"},
           {"Fraction", "1.5"},
           {"String", "\"x\""},
           {"EmptyString", "\"\""},
           {"QuotedObject", "\"{}\""},
           {"True", "true"},
           {"False", "false"},
           {"EmptyArray", "[]"},
           {"ArrayOfObject", "[" + Payload() + "]"},
           {"ArrayOfNumbers", "[1,2]"},
           {"UnclosedArray", "[1,2"},
       }) {
    add("TopLevel" + name, input);
  }
  return c;
}

// --- Random cases ----------------------------------------------------------------------------

// mt19937_64 is specified to the bit, and the draws below use only its raw output, so a seed
// gives the same corpus with every standard library.
class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  size_t Below(size_t n) { return static_cast<size_t>(engine_() % n); }
  bool OneIn(size_t n) { return Below(n) == 0; }
  uint64_t Bits() { return engine_(); }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[Below(v.size())];
  }

 private:
  std::mt19937_64 engine_;
};

// Random JSON-ish documents, mostly objects with the seed's keys in many spellings.
class DocumentGenerator {
 public:
  explicit DocumentGenerator(Rng* rng) : rng_(*rng) {}

  std::string Document() {
    std::string out = Space();
    if (rng_.OneIn(12)) {
      out += AnyValue(0);
    } else {
      const bool complete = rng_.OneIn(2);
      std::vector<std::string> members;
      if (complete) {
        // Mostly valid, so that the payload-level comparison sees accepted payloads.
        const bool valid = !rng_.OneIn(4);
        members.push_back(Member("target_user_id", valid ? PositiveInt() : IntLiteral()));
        members.push_back(Member("gift_id", valid ? PlainString() : StringLiteral()));
        members.push_back(Member("gift_count", valid ? PositiveInt() : IntLiteral()));
      }
      const size_t extra = rng_.Below(6);
      for (size_t i = 0; i < extra; ++i) {
        const size_t at = rng_.Below(members.size() + 1);
        members.insert(members.begin() + static_cast<std::ptrdiff_t>(at), RandomMember());
      }
      out += "{" + Space();
      for (size_t i = 0; i < members.size(); ++i) {
        if (i > 0) out += Space() + "," + Space();
        out += members[i];
      }
      out += Space() + "}";
    }
    return out + Space();
  }

 private:
  std::string Space() {
    static const std::vector<std::string> kSpaces = {"", "", "", " ", "\t", "\n", "\r\n", "  "};
    return rng_.Pick(kSpaces);
  }

  std::string Member(absl::string_view key, const std::string& value) {
    return absl::StrCat("\"", SpellKey(key), "\"", Space(), ":", Space(), value);
  }

  std::string RandomMember() {
    if (rng_.OneIn(3)) {
      static const std::vector<std::string> kUnknown = {
          "x", "extra", "gift", "id", "", "giftid", "count", "gift_id_", "\\u0000", "k"};
      return Member(rng_.Pick(kUnknown), AnyValue(1));
    }
    const GoJsonField& field = kSeedFields[rng_.Below(std::size(kSeedFields))];
    std::string value;
    if (rng_.OneIn(4)) {
      value = AnyValue(1);
    } else if (rng_.OneIn(8)) {
      value = "null";
    } else {
      switch (field.kind) {
        case GoJsonKind::kInt64:
          value = IntLiteral();
          break;
        case GoJsonKind::kString:
          value = StringLiteral();
          break;
        case GoJsonKind::kBool:
          value = rng_.OneIn(2) ? "true" : "false";
          break;
      }
    }
    return Member(field.name, value);
  }

  // `name` with letters in random case, and now and then a long s, a Kelvin sign, an escape.
  std::string SpellKey(absl::string_view name) {
    const size_t style = rng_.Below(4);
    if (style == 0) return std::string(name);
    std::string key;
    for (char c : name) {
      if (c == 's' && rng_.OneIn(3)) {
        key += rng_.OneIn(2) ? "\u017F" : "\\u017f";
      } else if (c == 'k' && rng_.OneIn(3)) {
        key += "\u212A";
      } else if (rng_.OneIn(15)) {
        key += absl::StrCat("\\u00", absl::BytesToHexString(std::string(1, c)));
      } else if (c >= 'a' && c <= 'z' && rng_.OneIn(2)) {
        key.push_back(static_cast<char>(c - 'a' + 'A'));
      } else {
        key.push_back(c);
      }
    }
    if (style == 3 && rng_.OneIn(4)) key += rng_.OneIn(2) ? "\xff" : "\u0131";
    return key;
  }

  std::string IntLiteral() {
    static const std::vector<std::string> kEdges = {"0",
                                                    "-0",
                                                    "1",
                                                    "-1",
                                                    "9223372036854775807",
                                                    "-9223372036854775808",
                                                    "9223372036854775808",
                                                    "-9223372036854775809",
                                                    "18446744073709551616",
                                                    "1.0",
                                                    "1e2",
                                                    "-0.0",
                                                    "2E-1",
                                                    "\"5\"",
                                                    "true",
                                                    "01",
                                                    "1.",
                                                    "-",
                                                    "0x10"};
    switch (rng_.Below(4)) {
      case 0:
        return rng_.Pick(kEdges);
      case 1:
        return std::to_string(static_cast<int64_t>(rng_.Bits()));
      default:
        return std::to_string(static_cast<int64_t>(rng_.Below(2000)) - 100);
    }
  }

  std::string PositiveInt() {
    return std::to_string(rng_.OneIn(8) ? std::numeric_limits<int64_t>::max()
                                        : static_cast<int64_t>(1 + rng_.Below(100000)));
  }

  std::string PlainString() {
    static const std::vector<std::string> kNames = {"rose",   "\\u793C",        " lily ",     "g-1",
                                                    "\u793C", "\\ud83c\\udf81", "\u00A0tulip"};
    return "\"" + rng_.Pick(kNames) + "\"";
  }

  std::string StringLiteral() {
    static const std::vector<std::string> kPieces = {"rose",
                                                     "a",
                                                     " ",
                                                     "\\t",
                                                     "\\n",
                                                     "\\\"",
                                                     "\\\\",
                                                     "\\/",
                                                     "\\u00e9",
                                                     "\\u793C",
                                                     "\\ud83c\\udf81",
                                                     "\\ud800",
                                                     "\\udc00",
                                                     "\u793C",
                                                     "\xff",
                                                     "\x80",
                                                     "\xed\xa0\x80",
                                                     "\xf0\x9f\x8e",
                                                     "\u00A0",
                                                     "\u3000",
                                                     "\u0085",
                                                     "\u2028",
                                                     "\\u0000",
                                                     "\\b",
                                                     "\\u12",
                                                     "\x01",
                                                     "\\x",
                                                     "\xc3\xa9"};
    std::string s = "\"";
    const size_t pieces = rng_.Below(6);
    for (size_t i = 0; i < pieces; ++i) s += rng_.Pick(kPieces);
    return s + "\"";
  }

  std::string AnyValue(size_t depth) {
    const size_t kind = rng_.Below(depth > 4 ? 5 : 8);
    switch (kind) {
      case 0:
        return "null";
      case 1:
        return rng_.OneIn(2) ? "true" : "false";
      case 2:
        return IntLiteral();
      case 3:
        return StringLiteral();
      case 4:
        return rng_.OneIn(2) ? "-1.5e+10" : "0.5E-3";
      case 5:
      case 6: {
        std::string out = "[" + Space();
        const size_t n = rng_.Below(4);
        for (size_t i = 0; i < n; ++i) {
          if (i > 0) out += ",";
          out += AnyValue(depth + 1);
        }
        return out + Space() + "]";
      }
      default: {
        std::string out = "{";
        const size_t n = rng_.Below(4);
        for (size_t i = 0; i < n; ++i) {
          if (i > 0) out += ",";
          out += rng_.OneIn(3) ? RandomMember() : Member("k", AnyValue(depth + 1));
        }
        return out + "}";
      }
    }
  }

  Rng& rng_;
};

// Small edits that a broken writer, a truncating column or a fuzzer would make.
std::string Mutate(Rng& rng, const std::string& input, const std::vector<Case>& others) {
  static const std::vector<std::string> kTokens = {"{",
                                                   "}",
                                                   "[",
                                                   "]",
                                                   "\"",
                                                   "\\",
                                                   ",",
                                                   ":",
                                                   " ",
                                                   "0",
                                                   "-",
                                                   ".",
                                                   "e",
                                                   "1",
                                                   "n",
                                                   "null",
                                                   "\xff",
                                                   "\xc3",
                                                   "\xed\xa0\x80",
                                                   "\\u",
                                                   "\\ud800",
                                                   "\u017F",
                                                   "\u212A",
                                                   std::string(1, '\0'),
                                                   "\t",
                                                   "\u00A0",
                                                   "9223372036854775808",
                                                   "\"gift_id\":",
                                                   "\"gift_count\":",
                                                   "\"Gift_Count\":",
                                                   "\"target_u\u017Fer_id\":",
                                                   "\"x\":",
                                                   "1e5",
                                                   "\"\\u0041\""};
  std::string s = input;
  const size_t edits = 1 + rng.Below(3);
  for (size_t e = 0; e < edits; ++e) {
    const size_t at = rng.Below(s.size() + 1);
    switch (rng.Below(8)) {
      case 0:  // delete a few bytes
        if (!s.empty()) s.erase(std::min(at, s.size() - 1), 1 + rng.Below(3));
        break;
      case 1:  // insert a token
        s.insert(at, rng.Pick(kTokens));
        break;
      case 2:  // replace a byte with a token
        if (!s.empty()) s.replace(std::min(at, s.size() - 1), 1, rng.Pick(kTokens));
        break;
      case 3:  // flip the case of a letter
        for (size_t i = at; i < s.size(); ++i) {
          if ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')) {
            s[i] = static_cast<char>(s[i] ^ 0x20);
            break;
          }
        }
        break;
      case 4:  // truncate
        s.resize(at);
        break;
      case 5: {  // duplicate a slice
        const size_t len = rng.Below(12);
        s.insert(at, s.substr(at, len));
        break;
      }
      case 6: {  // splice: our prefix, another case's suffix
        const std::string& other = rng.Pick(others).input;
        s = s.substr(0, at) + other.substr(rng.Below(other.size() + 1));
        break;
      }
      default:  // flip a random bit
        if (!s.empty()) {
          const size_t i = std::min(at, s.size() - 1);
          s[i] = static_cast<char>(s[i] ^ (1 << rng.Below(8)));
        }
        break;
    }
  }
  return s;
}

std::vector<Case> RandomCorpus(uint64_t seed, size_t count, const std::vector<Case>& hand) {
  Rng rng(seed);
  DocumentGenerator generator(&rng);
  std::vector<Case> out;
  const size_t generated = count / 3;
  for (size_t i = 0; i < generated; ++i) {
    out.push_back({absl::StrCat("Generated", i), generator.Document()});
  }
  // Mutate the small cases, hand-written and generated alike.
  std::vector<Case> parents;
  for (const Case& c : hand) {
    if (c.input.size() <= 1024) parents.push_back(c);
  }
  parents.insert(parents.end(), out.begin(), out.end());
  for (size_t i = generated; i < count; ++i) {
    const Case& parent = rng.Pick(parents);
    out.push_back(
        {absl::StrCat("Mutant", i, "Of", parent.name), Mutate(rng, parent.input, parents)});
  }
  return out;
}

// --- Running Go ------------------------------------------------------------------------------

enum class Mode { kObject, kPayload };

absl::string_view ModeName(Mode mode) { return mode == Mode::kObject ? "object" : "payload"; }

// The directory the cases and results pass through; removed with them, whatever happens.
class ExchangeDirectory {
 public:
  ExchangeDirectory() : path_(absl::StrCat(testing::TempDir(), "go_json_differential.XXXXXX")) {
    if (mkdtemp(path_.data()) == nullptr) path_.clear();
  }
  ~ExchangeDirectory() {
    if (path_.empty()) return;
    std::remove(cases_path().c_str());
    std::remove(results_path().c_str());
    rmdir(path_.c_str());
  }
  ExchangeDirectory(const ExchangeDirectory&) = delete;
  ExchangeDirectory& operator=(const ExchangeDirectory&) = delete;

  bool ok() const { return !path_.empty(); }
  std::string cases_path() const { return path_ + "/cases"; }
  std::string results_path() const { return path_ + "/results"; }

 private:
  std::string path_;
};

// Runs the Go decoder once over every (case, mode); returns one result line per pair, in order.
absl::StatusOr<std::vector<std::string>> RunGo(const std::vector<Case>& cases,
                                               const std::vector<Mode>& modes) {
  const ExchangeDirectory dir;
  if (!dir.ok()) return absl::InternalError(absl::StrCat("mkdtemp: ", std::strerror(errno)));
  const std::string cases_path = dir.cases_path();
  const std::string results_path = dir.results_path();
  {
    std::ofstream file(cases_path, std::ios::binary);
    for (const Case& c : cases) {
      for (Mode mode : modes) {
        file << ModeName(mode) << ' ' << absl::BytesToHexString(c.input) << '\n';
      }
    }
    if (!file.good()) return absl::InternalError("cannot write " + cases_path);
  }

  const std::string decoder(kGoDecoder);
  std::vector<char*> argv = {const_cast<char*>(decoder.c_str()),
                             const_cast<char*>(cases_path.c_str()),
                             const_cast<char*>(results_path.c_str()), nullptr};
  pid_t pid = 0;
  if (const int err = posix_spawn(&pid, decoder.c_str(), nullptr, nullptr, argv.data(), environ);
      err != 0) {
    return absl::InternalError(absl::StrCat("cannot start ", decoder, ": ", std::strerror(err)));
  }
  int wait_status = 0;
  if (waitpid(pid, &wait_status, 0) != pid) {
    return absl::InternalError(absl::StrCat("waitpid: ", std::strerror(errno)));
  }
  if (!WIFEXITED(wait_status) || WEXITSTATUS(wait_status) != 0) {
    return absl::InternalError(absl::StrCat(decoder, " failed (wait status ", wait_status, ")"));
  }

  std::ifstream file(results_path, std::ios::binary);
  std::vector<std::string> lines;
  for (std::string line; std::getline(file, line);) lines.push_back(std::move(line));
  if (lines.size() != cases.size() * modes.size()) {
    return absl::InternalError(absl::StrCat(decoder, " answered ", lines.size(), " lines for ",
                                            cases.size() * modes.size(), " cases"));
  }
  return lines;
}

// --- What the C++ side says, in the Go program's terms ---------------------------------------

std::string HexToken(absl::string_view tag, absl::string_view bytes) {
  return absl::StrCat(tag, ":", absl::BytesToHexString(bytes));
}

std::string ValueToken(const GoJsonValue& value) {
  if (!value.has_value()) return "absent";
  if (const auto* i = std::get_if<int64_t>(&*value)) return absl::StrCat("i:", *i);
  if (const auto* b = std::get_if<bool>(&*value)) return *b ? "b:true" : "b:false";
  return HexToken("s", std::get<std::string>(*value));
}

// Maps a DecodeGoJsonObject error onto what decode_payload.go prints for Go's error: Go's
// SyntaxError offset counts the offending byte (ours is its index), and its message says
// "invalid character 'c' <context>" where ours adds the byte index in front.
std::string DescribeCppError(absl::string_view message) {
  constexpr absl::string_view kSyntax = "invalid JSON at byte ";
  constexpr absl::string_view kField = "field \"";
  constexpr absl::string_view kNotObject = "payload must be a JSON object, got ";
  if (absl::ConsumePrefix(&message, kSyntax)) {
    const size_t colon = message.find(": ");
    size_t offset = 0;
    if (colon == absl::string_view::npos || !absl::SimpleAtoi(message.substr(0, colon), &offset)) {
      return HexToken("unparsed x", message);
    }
    absl::string_view rest = message.substr(colon + 2);
    if (rest == "unexpected end of input") {
      return absl::StrCat("syntax ", offset, " ", HexToken("x", "unexpected end of JSON input"));
    }
    if (absl::StartsWith(rest, "nested deeper than ")) {
      return absl::StrCat("syntax ", offset + 1, " ", HexToken("x", "exceeded max depth"));
    }
    if (absl::ConsumePrefix(&rest, "invalid character ")) {
      // Skip the quoted byte: from its opening quote to the first "' " after its first char.
      const size_t end = rest.find("' ", 2);
      if (end != absl::string_view::npos) {
        return absl::StrCat("syntax ", offset + 1, " ", HexToken("x", rest.substr(end + 2)));
      }
    }
    return HexToken("unparsed x", message);
  }
  if (absl::ConsumePrefix(&message, kNotObject)) return absl::StrCat("type x: ", message);
  if (absl::ConsumePrefix(&message, kField)) {
    const size_t quote = message.find('"');
    if (quote == absl::string_view::npos) return HexToken("unparsed x", message);
    const absl::string_view field = message.substr(0, quote);
    const absl::string_view what = message.substr(quote);
    std::string kind = "number";  // "<literal> is not an integer", "<literal> overflows int64"
    if (const size_t got = what.find(", got "); got != absl::string_view::npos) {
      kind = std::string(what.substr(got + 6));
    }
    return absl::StrCat("type ", HexToken("x", field), " ", kind);
  }
  return HexToken("error x", message);
}

// At the end of the input Go's scanner steps one imaginary space (scanner.eof), so input that
// ends inside a literal, a number or an escape ("nul", "1e", "\\u12") fails with "invalid
// character ' ' in literal null (expecting 'l')" at offset len(input). The position is the same
// as ours; the message is ours, "unexpected end of input", which is what happened.
std::string NormalizeGoEndOfInput(absl::string_view input, absl::string_view go_line) {
  const std::vector<absl::string_view> t = absl::StrSplit(go_line, ' ');
  size_t offset = 0;
  if (t.size() != 3 || t[0] != "syntax" || !absl::SimpleAtoi(t[1], &offset) ||
      offset != input.size() || !absl::StartsWith(t[2], "x:")) {
    return std::string(go_line);
  }
  const std::string message = absl::HexStringToBytes(t[2].substr(2));
  if (!absl::StartsWith(message, "invalid character ' ' ")) return std::string(go_line);
  return absl::StrCat("syntax ", offset, " ", HexToken("x", "unexpected end of JSON input"));
}

std::string CppObjectResult(absl::string_view input) {
  std::vector<GoJsonValue> values;
  const absl::Status status = DecodeGoJsonObject(input, kSeedFields, &values);
  if (!status.ok()) return DescribeCppError(status.message());
  std::vector<std::string> tokens = {"ok"};
  for (const GoJsonValue& value : values) tokens.push_back(ValueToken(value));
  return absl::StrJoin(tokens, " ");
}

std::string CppPayloadResult(absl::string_view input) {
  const absl::StatusOr<GiftPayload> p = ParseGiftPayload(input);
  if (!p.ok()) return "error";
  return absl::StrJoin(
      {std::string("ok"), absl::StrCat("i:", p->target_user_id), HexToken("s", p->gift_id),
       absl::StrCat("i:", p->gift_count), absl::StrCat("i:", p->sender_user_id),
       absl::StrCat("i:", p->coin_amount), HexToken("s", p->gift_name), HexToken("s", p->gift_icon),
       absl::StrCat("i:", p->room_id), std::string(p->anonymous ? "b:true" : "b:false")},
      " ");
}

// What ParseGiftPayload must answer, given what the seed made of the same payload: the seed's
// verdict (decode, then validateGiftWallMetadata), then the rules the seed does not have
// (DESIGN §2.5: payload and field sizes, coins >= 0, a non-positive sender means none).
std::string ExpectedPayloadResult(absl::string_view input, absl::string_view go_line) {
  const std::vector<absl::string_view> t = absl::StrSplit(go_line, ' ');
  if (t.size() != 14 || t[0] != "ok") return "error";
  if (t[1] != "valid") return "error";
  int64_t sender = 0;
  int64_t coins = 0;
  if (!absl::SimpleAtoi(t[5].substr(2), &sender) || !absl::SimpleAtoi(t[6].substr(2), &coins)) {
    return "unparsed go line";
  }
  auto bytes = [](absl::string_view hex_token) { return (hex_token.size() - 2) / 2; };
  if (input.size() > kMaxPayloadBytes || bytes(t[10]) > kMaxGiftIdBytes ||
      bytes(t[11]) > kMaxGiftNameBytes || bytes(t[12]) > kMaxGiftIconBytes || coins < 0) {
    return "error";
  }
  return absl::StrJoin(
      {std::string("ok"), std::string(t[2]), std::string(t[10]), std::string(t[4]),
       absl::StrCat("i:", sender > 0 ? sender : 0), std::string(t[6]), std::string(t[11]),
       std::string(t[12]), std::string(t[9]), std::string(t[13])},
      " ");
}

// The input, printable and short enough for a failure message.
std::string Shown(absl::string_view input) {
  constexpr size_t kMax = 160;
  if (input.size() <= kMax) return absl::CHexEscape(input);
  return absl::StrCat(absl::CHexEscape(input.substr(0, kMax)), "... (", input.size(), " bytes)");
}

uint64_t SeedFromEnvironment() {
  uint64_t seed = kDefaultSeed;
  if (const char* s = std::getenv("GIFTWALL_GO_DIFF_SEED"); s != nullptr) {
    EXPECT_TRUE(absl::SimpleAtoi(s, &seed)) << "GIFTWALL_GO_DIFF_SEED=" << s;
  }
  return seed;
}

size_t RandomCasesFromEnvironment() {
  size_t count = kDefaultRandomCases;
  if (const char* s = std::getenv("GIFTWALL_GO_DIFF_RANDOM_CASES"); s != nullptr) {
    EXPECT_TRUE(absl::SimpleAtoi(s, &count)) << "GIFTWALL_GO_DIFF_RANDOM_CASES=" << s;
  }
  return count;
}

// --- The tests -------------------------------------------------------------------------------

class GoJsonDifferentialTest : public testing::Test {
 protected:
  struct Run {
    uint64_t seed = 0;
    size_t hand_cases = 0;
    std::vector<Case> cases;
    std::vector<std::string> go_object;   // one per case
    std::vector<std::string> go_payload;  // one per case
    absl::Status status;
  };

  void SetUp() override {
    if (kGoDecoder.empty()) {
      constexpr const char* kWhy =
          "go (Debian package golang-go) was not found when the build was configured, so there "
          "is no Go decoder to compare with; install golang-go and re-run cmake";
      // scripts/test installs go: there (and so in CI) a skip would pass unseen.
      const char* required = std::getenv("GIFTWALL_TEST_REQUIRE_GO");
      if (required != nullptr && *required != '\0') FAIL() << kWhy;
      GTEST_SKIP() << kWhy;
    }
    ASSERT_TRUE(run().status.ok()) << run().status;
  }

  // Built and decoded by Go once for all the tests of the suite.
  static const Run& run() {
    static const Run* const kRun = [] {
      auto* r = new Run;
      r->seed = SeedFromEnvironment();
      r->cases = HandCorpus();
      r->hand_cases = r->cases.size();
      std::vector<Case> random = RandomCorpus(r->seed, RandomCasesFromEnvironment(), r->cases);
      r->cases.insert(r->cases.end(), random.begin(), random.end());
      absl::StatusOr<std::vector<std::string>> lines =
          RunGo(r->cases, {Mode::kObject, Mode::kPayload});
      if (!lines.ok()) {
        r->status = lines.status();
        return r;
      }
      for (size_t i = 0; i < r->cases.size(); ++i) {
        r->go_object.push_back((*lines)[2 * i]);
        r->go_payload.push_back((*lines)[2 * i + 1]);
      }
      return r;
    }();
    return *kRun;
  }

  // Fails once per mismatch (up to a limit), naming the case and both answers.
  static void Compare(absl::string_view level, size_t index, const std::string& cpp,
                      const std::string& go, size_t* mismatches) {
    if (cpp == go) return;
    if (++*mismatches > kMaxReportedMismatches) return;
    const Case& c = run().cases[index];
    ADD_FAILURE() << level << " differs from Go on case " << c.name << " (seed " << run().seed
                  << ")\n  input: \"" << Shown(c.input) << "\"\n  C++: " << cpp
                  << "\n  Go:  " << go;
  }
};

TEST_F(GoJsonDifferentialTest, DecodeGoJsonObjectAgreesWithEncodingJson) {
  size_t mismatches = 0;
  for (size_t i = 0; i < run().cases.size(); ++i) {
    const std::string& input = run().cases[i].input;
    Compare("DecodeGoJsonObject", i, CppObjectResult(input),
            NormalizeGoEndOfInput(input, run().go_object[i]), &mismatches);
  }
  EXPECT_EQ(mismatches, 0u) << "of " << run().cases.size() << " cases (seed " << run().seed << ")";
}

TEST_F(GoJsonDifferentialTest, ParseGiftPayloadAgreesWithTheSeed) {
  size_t mismatches = 0;
  for (size_t i = 0; i < run().cases.size(); ++i) {
    const std::string& input = run().cases[i].input;
    Compare("ParseGiftPayload", i, CppPayloadResult(input),
            ExpectedPayloadResult(input, run().go_payload[i]), &mismatches);
  }
  EXPECT_EQ(mismatches, 0u) << "of " << run().cases.size() << " cases (seed " << run().seed << ")";
}

// A corpus that Go rejects (or accepts) almost entirely would compare little.
TEST_F(GoJsonDifferentialTest, CorpusHasEveryOutcome) {
  size_t ok = 0;
  size_t syntax = 0;
  size_t type = 0;
  size_t random_ok = 0;
  size_t random_rejected = 0;
  size_t payload_valid = 0;
  for (size_t i = 0; i < run().cases.size(); ++i) {
    const absl::string_view go = run().go_object[i];
    const bool accepted = absl::StartsWith(go, "ok ");
    ok += accepted ? 1 : 0;
    syntax += absl::StartsWith(go, "syntax ") ? 1 : 0;
    type += absl::StartsWith(go, "type ") ? 1 : 0;
    if (i >= run().hand_cases) (accepted ? random_ok : random_rejected) += 1;
    payload_valid += absl::StartsWith(run().go_payload[i], "ok valid ") ? 1 : 0;
    EXPECT_TRUE(accepted || absl::StartsWith(go, "syntax ") || absl::StartsWith(go, "type "))
        << run().cases[i].name << ": Go answered " << go;
  }
  const size_t random_cases = run().cases.size() - run().hand_cases;
  EXPECT_GE(ok, run().cases.size() / 5);
  EXPECT_GE(syntax, run().cases.size() / 5);
  EXPECT_GE(type, 50u);
  EXPECT_GE(payload_valid, 100u);
  if (random_cases >= 100) {
    EXPECT_GE(random_ok, random_cases / 10);
    EXPECT_GE(random_rejected, random_cases / 10);
  }
  std::cout << "[ corpus   ] " << run().cases.size() << " cases (" << run().hand_cases
            << " hand-written, " << random_cases << " random from seed " << run().seed
            << "); Go accepted " << ok << ", syntax errors " << syntax << ", type errors " << type
            << "; valid gift payloads " << payload_valid << "\n";
}

}  // namespace
}  // namespace giftwall::domain
