#include "server/domain/text.h"

#include <array>
#include <cstddef>

#include "absl/strings/string_view.h"

namespace giftwall::domain {
namespace {

// The UTF-8 encodings of the non-ASCII runes for which Go's unicode.IsSpace is true. Matching an
// encoding as a prefix or suffix is the same as decoding the rune there, because a valid encoding
// is never a prefix of another and its continuation bytes can never start a rune.
constexpr std::array<absl::string_view, 18> kNonAsciiSpaces = {
    "\u0085", "\u00A0", "\u1680", "\u2000", "\u2001", "\u2002", "\u2003", "\u2004", "\u2005",
    "\u2006", "\u2007", "\u2008", "\u2009", "\u200A", "\u2028", "\u2029", "\u202F", "\u205F",
};
constexpr absl::string_view kIdeographicSpace = "\u3000";

bool IsAsciiSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

// Length of the space rune that `s` starts with, or 0.
size_t LeadingSpaceLength(absl::string_view s) {
  if (s.empty()) return 0;
  if (IsAsciiSpace(s.front())) return 1;
  if (s.substr(0, kIdeographicSpace.size()) == kIdeographicSpace) return kIdeographicSpace.size();
  for (absl::string_view space : kNonAsciiSpaces) {
    if (s.substr(0, space.size()) == space) return space.size();
  }
  return 0;
}

// Length of the space rune that `s` ends with, or 0.
size_t TrailingSpaceLength(absl::string_view s) {
  if (s.empty()) return 0;
  if (IsAsciiSpace(s.back())) return 1;
  auto ends_with = [s](absl::string_view suffix) {
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
  };
  if (ends_with(kIdeographicSpace)) return kIdeographicSpace.size();
  for (absl::string_view space : kNonAsciiSpaces) {
    if (ends_with(space)) return space.size();
  }
  return 0;
}

bool IsContinuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// Length of the valid UTF-8 sequence starting at s[i], or 0 when the bytes there are not one
// (Go's utf8.DecodeRune would report RuneError with width 1). Rejects overlong forms, surrogates
// and code points above U+10FFFF, exactly as Go does.
size_t ValidSequenceLength(absl::string_view s, size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) return 1;
  size_t n = 0;
  unsigned char lo = 0x80;  // the range allowed for the second byte
  unsigned char hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    if (b0 == 0xE0) lo = 0xA0;  // overlong
    if (b0 == 0xED) hi = 0x9F;  // surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    if (b0 == 0xF0) lo = 0x90;  // overlong
    if (b0 == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (s.size() - i < n) return 0;
  const auto b1 = static_cast<unsigned char>(s[i + 1]);
  if (b1 < lo || b1 > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if (!IsContinuation(static_cast<unsigned char>(s[i + k]))) return 0;
  }
  return n;
}

}  // namespace

absl::string_view TrimSpace(absl::string_view s) {
  while (size_t n = LeadingSpaceLength(s)) s.remove_prefix(n);
  while (size_t n = TrailingSpaceLength(s)) s.remove_suffix(n);
  return s;
}

bool IsValidUtf8(absl::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = ValidSequenceLength(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string ToValidUtf8(absl::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t n = ValidSequenceLength(s, i);
    if (n == 0) {
      out.append("\uFFFD");
      ++i;
    } else {
      out.append(s.data() + i, n);
      i += n;
    }
  }
  return out;
}

absl::string_view TruncateUtf8(absl::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  // s[max_bytes] is the first byte cut off. If it continues a valid sequence that starts at most
  // three bytes earlier, cut before that sequence instead. Invalid bytes are sequences of one byte
  // each (as Go decodes them), so a stray continuation byte is a boundary of its own.
  size_t cut = max_bytes;
  for (size_t back = 1; back <= 3 && back <= max_bytes; ++back) {
    const size_t start = max_bytes - back;
    if (IsContinuation(static_cast<unsigned char>(s[start]))) continue;
    if (start + ValidSequenceLength(s, start) > max_bytes) cut = start;
    break;
  }
  return s.substr(0, cut);
}

}  // namespace giftwall::domain
