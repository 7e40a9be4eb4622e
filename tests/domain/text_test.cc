#include "server/domain/text.h"

#include <ostream>
#include <string>

#include "absl/strings/string_view.h"
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

struct TrimCase {
  absl::string_view name;
  absl::string_view in;
  absl::string_view want;
};

// gtest prints a failing case by its name rather than as raw bytes.
void PrintTo(const TrimCase& c, std::ostream* os) { *os << c.name; }

class TrimSpaceTest : public testing::TestWithParam<TrimCase> {};

TEST_P(TrimSpaceTest, MatchesGoStringsTrimSpace) {
  EXPECT_EQ(TrimSpace(GetParam().in), GetParam().want);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, TrimSpaceTest,
    testing::Values(
        TrimCase{"Empty", "", ""}, TrimCase{"OnlyAscii", " \t\n\v\f\r", ""},
        TrimCase{"AsciiAround", "  ab c\t\n", "ab c"},
        TrimCase{"IdeographicSpace", "\u3000gift\u3000", "gift"},
        TrimCase{"NoBreakSpace", "\u00A0gift\u00A0", "gift"},
        TrimCase{"NextLine", "\u0085gift\u0085", "gift"},
        TrimCase{"OghamAndEnQuad", "\u1680\u2000gift\u200A\u205F", "gift"},
        TrimCase{"LineAndParagraphSeparators", "\u2028\u2029gift\u202F", "gift"},
        TrimCase{"MixedRuns", " \u3000\u00A0 gift \u0085\u3000\t", "gift"},
        TrimCase{"InnerSpaceKept", "a\u3000b", "a\u3000b"},
        // Not white space in Go: zero-width space, BOM, U+001C (file separator).
        TrimCase{"ZeroWidthSpaceKept", "\u200Bgift\u200B", "\u200Bgift\u200B"},
        TrimCase{"BomKept", "\uFEFFgift", "\uFEFFgift"},
        TrimCase{"FileSeparatorKept", "\x1cgift\x1c", "\x1cgift\x1c"},
        // An invalid byte decodes as U+FFFD, which is not space, so trimming stops there.
        TrimCase{"InvalidByteStops", "\xA0 gift \xC2", "\xA0 gift \xC2"},
        TrimCase{"TruncatedSpaceKept", " \xE3\x80 ", "\xE3\x80"},
        TrimCase{"OnlyUnicodeSpaces", "\u3000\u00A0\u0085", ""}),
    CaseName());

struct Utf8Case {
  absl::string_view name;
  absl::string_view in;
  bool valid;
};

// gtest prints a failing case by its name rather than as raw bytes.
void PrintTo(const Utf8Case& c, std::ostream* os) { *os << c.name; }

class IsValidUtf8Test : public testing::TestWithParam<Utf8Case> {};

TEST_P(IsValidUtf8Test, MatchesGoUtf8ValidString) {
  EXPECT_EQ(IsValidUtf8(GetParam().in), GetParam().valid);
}

INSTANTIATE_TEST_SUITE_P(Cases, IsValidUtf8Test,
                         testing::Values(Utf8Case{"Empty", "", true},
                                         Utf8Case{"Ascii", "gift", true},
                                         Utf8Case{"TwoBytes", "\u00E9", true},
                                         Utf8Case{"ThreeBytes", "\u793C", true},
                                         Utf8Case{"FourBytes", "\U0001F381", true},
                                         Utf8Case{"MaxCodePoint", "\xF4\x8F\xBF\xBF", true},
                                         Utf8Case{"AboveMaxCodePoint", "\xF4\x90\x80\x80", false},
                                         Utf8Case{"LoneContinuation", "\x80", false},
                                         Utf8Case{"OverlongTwoBytes", "\xC0\xAF", false},
                                         Utf8Case{"OverlongThreeBytes", "\xE0\x80\xAF", false},
                                         Utf8Case{"OverlongFourBytes", "\xF0\x80\x80\xAF", false},
                                         Utf8Case{"EncodedSurrogate", "\xED\xA0\x80", false},
                                         Utf8Case{"Truncated", "a\xE7\xA4", false},
                                         Utf8Case{"BadContinuation", "\xE7\xA4x", false},
                                         Utf8Case{"InvalidLead", "\xFF", false}),
                         CaseName());

struct TruncateCase {
  absl::string_view name;
  absl::string_view in;
  size_t max_bytes;
  absl::string_view want;
};

// gtest prints a failing case by its name rather than as raw bytes.
void PrintTo(const TruncateCase& c, std::ostream* os) { *os << c.name; }

class TruncateUtf8Test : public testing::TestWithParam<TruncateCase> {};

TEST_P(TruncateUtf8Test, KeepsWholeSequences) {
  EXPECT_EQ(TruncateUtf8(GetParam().in, GetParam().max_bytes), GetParam().want);
}

// "a礼b": '礼' is the 3-byte sequence E7 A4 BC at bytes 1..3.
INSTANTIATE_TEST_SUITE_P(
    Cases, TruncateUtf8Test,
    testing::Values(TruncateCase{"ShortEnough", "abc", 3, "abc"},
                    TruncateCase{"AsciiCut", "abcdef", 4, "abcd"},
                    TruncateCase{"Zero", "abc", 0, ""},
                    TruncateCase{"BeforeThreeByteSequence", "a\u793Cb", 1, "a"},
                    TruncateCase{"InsideThreeByteSequenceAfterOne", "a\u793Cb", 2, "a"},
                    TruncateCase{"InsideThreeByteSequenceAfterTwo", "a\u793Cb", 3, "a"},
                    TruncateCase{"AfterThreeByteSequence", "a\u793Cb", 4, "a\u793C"},
                    TruncateCase{"InsideFourByteSequence", "\U0001F381\U0001F381", 7, "\U0001F381"},
                    TruncateCase{"FirstSequenceDoesNotFit", "\u793C", 2, ""},
                    // Invalid bytes are one-byte sequences of their own.
                    TruncateCase{"StrayContinuations", "\x80\x80\x80\x80\x80", 3, "\x80\x80\x80"},
                    TruncateCase{"TruncatedSequenceThenAscii", "\xE7\xA4xyz", 2, "\xE7\xA4"}),
    CaseName());

}  // namespace
}  // namespace giftwall::domain
