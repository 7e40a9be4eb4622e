#include "server/domain/go_json.h"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "server/domain/text.h"

namespace giftwall::domain {
namespace {

// Go's scanner refuses to nest deeper than this (encoding/json maxNestingDepth).
constexpr size_t kMaxNestingDepth = 10000;

// Literals quoted in error messages are cut to this many bytes: a 60 KB number says no more.
constexpr size_t kMaxQuotedLiteral = 40;

constexpr absl::string_view kReplacementChar = "\uFFFD";

bool IsJsonSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool IsHighSurrogate(uint32_t cp) { return cp >= 0xD800 && cp <= 0xDBFF; }
bool IsLowSurrogate(uint32_t cp) { return cp >= 0xDC00 && cp <= 0xDFFF; }

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// Length of the valid UTF-8 sequence at s[i], or 0 where Go's utf8.DecodeRune reports an
// invalid byte (RuneError, width 1).
size_t Utf8SequenceLength(absl::string_view s, size_t i) {
  const auto lead = static_cast<unsigned char>(s[i]);
  size_t n = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    n = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    n = 3;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    n = 4;
  }
  if (n == 0 || s.size() - i < n || !IsValidUtf8(s.substr(i, n))) return 0;
  return n;
}

// Go's bytes.EqualFold folds with Unicode simple case folding. Field names here are ASCII, and
// the only non-ASCII runes whose fold orbit contains an ASCII letter are U+017F (long s, with
// 's') and U+212A (Kelvin sign, with 'k'); any other non-ASCII rune can only equal itself.
std::string FoldName(absl::string_view name) {
  constexpr absl::string_view kLongS = "\u017F";
  constexpr absl::string_view kKelvin = "\u212A";
  std::string folded;
  folded.reserve(name.size());
  for (size_t i = 0; i < name.size();) {
    const absl::string_view rest = name.substr(i);
    if (rest.substr(0, kLongS.size()) == kLongS) {
      folded.push_back('S');
      i += kLongS.size();
    } else if (rest.substr(0, kKelvin.size()) == kKelvin) {
      folded.push_back('K');
      i += kKelvin.size();
    } else {
      const char c = name[i++];
      folded.push_back(c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c);
    }
  }
  return folded;
}

// A printable rendering of the byte at an error position, in the spirit of Go's quoteChar.
std::string QuoteByte(char c) {
  const auto b = static_cast<unsigned char>(c);
  if (b == '\'') return "'\\''";
  if (b >= 0x20 && b < 0x7F) return absl::StrCat("'", std::string(1, c), "'");
  return absl::StrFormat("'\\x%02x'", b);
}

std::string QuoteLiteral(absl::string_view literal) {
  if (literal.size() <= kMaxQuotedLiteral) return std::string(literal);
  return absl::StrCat(literal.substr(0, kMaxQuotedLiteral), "...");
}

// What a field of `kind` takes, for a type error's message.
const char* WantOf(GoJsonKind kind) {
  switch (kind) {
    case GoJsonKind::kString:
      return "want a string";
    case GoJsonKind::kBool:
      return "want a boolean";
    case GoJsonKind::kInt64:
      break;
  }
  return "want an integer";
}

// What a value is, named as Go's UnmarshalTypeError names it; decided by its first byte.
const char* KindOfValueStartingWith(char c) {
  switch (c) {
    case '{':
      return "object";
    case '[':
      return "array";
    case '"':
      return "string";
    case 't':
    case 'f':
      return "bool";
    case 'n':
      return "null";
    default:
      return "number";
  }
}

// One pass over the input that both checks the syntax (as Go's checkValid does before decoding)
// and decodes the top-level object's fields. Syntax errors return at once; type errors are kept
// until the end, because in Go a syntax error anywhere in the input wins over a type error.
class GoJsonDecoder {
 public:
  GoJsonDecoder(absl::string_view json, absl::Span<const GoJsonField> fields)
      : in_(json), fields_(fields), values_(fields.size()) {
    folded_names_.reserve(fields.size());
    for (const GoJsonField& field : fields) folded_names_.push_back(FoldName(field.name));
  }

  absl::Status Decode(std::vector<GoJsonValue>* values) {
    SkipSpace();
    if (AtEnd()) return UnexpectedEnd();
    const char c = Peek();
    if (c == '{') {
      if (absl::Status s = DecodeObject(); !s.ok()) return s;
    } else {
      if (absl::Status s = SkipValue(0); !s.ok()) return s;
      if (c != 'n') {
        SaveError(absl::StrCat("payload must be a JSON object, got ", KindOfValueStartingWith(c)));
      }
    }
    SkipSpace();
    if (!AtEnd()) return SyntaxError("after top-level value");
    if (first_type_error_.has_value()) return absl::InvalidArgumentError(*first_type_error_);
    *values = std::move(values_);
    return absl::OkStatus();
  }

 private:
  bool AtEnd() const { return pos_ >= in_.size(); }
  char Peek() const { return in_[pos_]; }

  void SkipSpace() {
    while (!AtEnd() && IsJsonSpace(Peek())) ++pos_;
  }

  absl::Status SyntaxError(absl::string_view context) const {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid JSON at byte ", pos_, ": invalid character ", QuoteByte(Peek()), " ", context));
  }

  absl::Status UnexpectedEnd() const {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid JSON at byte ", pos_, ": unexpected end of input"));
  }

  void SaveError(std::string message) {
    if (!first_type_error_.has_value()) first_type_error_ = std::move(message);
  }

  void SaveFieldError(size_t field, absl::string_view what) {
    SaveError(absl::StrCat("field \"", fields_[field].name, "\": ", what));
  }

  // Expects `c` at the current position, after optional white space.
  absl::Status Expect(char c, absl::string_view context) {
    SkipSpace();
    if (AtEnd()) return UnexpectedEnd();
    if (Peek() != c) return SyntaxError(context);
    ++pos_;
    return absl::OkStatus();
  }

  // The top-level object: depth 1. Values of known keys are decoded, all others skipped.
  absl::Status DecodeObject() {
    ++pos_;  // '{'
    SkipSpace();
    if (!AtEnd() && Peek() == '}') {
      ++pos_;
      return absl::OkStatus();
    }
    std::string key;
    for (;;) {
      SkipSpace();
      if (AtEnd()) return UnexpectedEnd();
      if (Peek() != '"') return SyntaxError("looking for beginning of object key string");
      key.clear();
      if (absl::Status s = ScanString(&key); !s.ok()) return s;
      if (absl::Status s = Expect(':', "after object key"); !s.ok()) return s;
      SkipSpace();
      const std::optional<size_t> field = FindField(key);
      absl::Status s = field.has_value() ? DecodeFieldValue(*field) : SkipValue(1);
      if (!s.ok()) return s;
      SkipSpace();
      if (AtEnd()) return UnexpectedEnd();
      const char c = Peek();
      if (c != ',' && c != '}') return SyntaxError("after object key:value pair");
      ++pos_;
      if (c == '}') return absl::OkStatus();
    }
  }

  // Go matches the exact name first, then the first field whose name folds to the same string.
  std::optional<size_t> FindField(absl::string_view key) const {
    for (size_t i = 0; i < fields_.size(); ++i) {
      if (fields_[i].name == key) return i;
    }
    const std::string folded = FoldName(key);
    for (size_t i = 0; i < fields_.size(); ++i) {
      if (folded_names_[i] == folded) return i;
    }
    return std::nullopt;
  }

  absl::Status DecodeFieldValue(size_t field) {
    if (AtEnd()) return UnexpectedEnd();
    const char c = Peek();
    if (c == 'n') return ScanLiteral("null");  // null leaves the field as it was
    const GoJsonKind kind = fields_[field].kind;
    if (kind == GoJsonKind::kString && c == '"') {
      std::string decoded;
      if (absl::Status s = ScanString(&decoded); !s.ok()) return s;
      values_[field] = std::move(decoded);
      return absl::OkStatus();
    }
    if (kind == GoJsonKind::kInt64 && (c == '-' || IsDigit(c))) {
      absl::string_view literal;
      if (absl::Status s = ScanNumber(&literal); !s.ok()) return s;
      StoreInt64(field, literal);
      return absl::OkStatus();
    }
    if (kind == GoJsonKind::kBool && (c == 't' || c == 'f')) {
      if (absl::Status s = ScanLiteral(c == 't' ? "true" : "false"); !s.ok()) return s;
      values_[field] = c == 't';
      return absl::OkStatus();
    }
    SaveFieldError(field, absl::StrCat(WantOf(kind), ", got ", KindOfValueStartingWith(c)));
    return SkipValue(1);
  }

  // strconv.ParseInt(literal, 10, 64): the literal is already a valid JSON number, so it is an
  // integer exactly when it has no fraction or exponent.
  void StoreInt64(size_t field, absl::string_view literal) {
    const bool negative = literal.front() == '-';
    const absl::string_view digits = negative ? literal.substr(1) : literal;
    for (char d : digits) {
      if (!IsDigit(d)) {
        SaveFieldError(field, absl::StrCat(QuoteLiteral(literal), " is not an integer"));
        return;
      }
    }
    // Accumulate the magnitude; INT64_MIN's magnitude is one more than INT64_MAX.
    const uint64_t limit =
        static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) + (negative ? 1 : 0);
    uint64_t magnitude = 0;
    for (char d : digits) {
      const auto digit = static_cast<uint64_t>(d - '0');
      if (magnitude > (limit - digit) / 10) {
        SaveFieldError(field, absl::StrCat(QuoteLiteral(literal), " overflows int64"));
        return;
      }
      magnitude = magnitude * 10 + digit;
    }
    int64_t value = 0;
    if (!negative) {
      value = static_cast<int64_t>(magnitude);
    } else if (magnitude == limit) {
      value = std::numeric_limits<int64_t>::min();
    } else {
      value = -static_cast<int64_t>(magnitude);
    }
    values_[field] = value;
  }

  // Skips one value of any kind, checking its syntax. Iterative, so that deep nesting costs heap
  // (bounded by kMaxNestingDepth) rather than stack. `depth` counts the enclosing containers.
  absl::Status SkipValue(size_t depth) {
    std::vector<char> open;  // the closing bracket of each container entered here
    for (;;) {
      // Here a value begins.
      SkipSpace();
      if (AtEnd()) return UnexpectedEnd();
      const char c = Peek();
      bool entered = false;
      if (c == '{' || c == '[') {
        if (depth + open.size() + 1 > kMaxNestingDepth) {
          return absl::InvalidArgumentError(absl::StrCat(
              "invalid JSON at byte ", pos_, ": nested deeper than ", kMaxNestingDepth, " levels"));
        }
        ++pos_;
        SkipSpace();
        if (AtEnd()) return UnexpectedEnd();
        const char close = c == '{' ? '}' : ']';
        if (Peek() == close) {
          ++pos_;
        } else {
          open.push_back(close);
          entered = true;
          if (close == '}') {
            if (absl::Status s = SkipObjectKey(); !s.ok()) return s;
          }
        }
      } else if (absl::Status s = SkipScalar(); !s.ok()) {
        return s;
      }
      if (entered) continue;
      // Here a value has ended: close containers until one expects another element.
      for (;;) {
        if (open.empty()) return absl::OkStatus();
        SkipSpace();
        if (AtEnd()) return UnexpectedEnd();
        const char next = Peek();
        if (next == open.back()) {
          ++pos_;
          open.pop_back();
          continue;
        }
        if (next != ',') {
          return SyntaxError(open.back() == '}' ? "after object key:value pair"
                                                : "after array element");
        }
        ++pos_;
        if (open.back() == '}') {
          SkipSpace();
          if (AtEnd()) return UnexpectedEnd();
          if (absl::Status s = SkipObjectKey(); !s.ok()) return s;
        }
        break;
      }
    }
  }

  // Inside an object being skipped: `"key" :`.
  absl::Status SkipObjectKey() {
    if (Peek() != '"') return SyntaxError("looking for beginning of object key string");
    if (absl::Status s = ScanString(nullptr); !s.ok()) return s;
    return Expect(':', "after object key");
  }

  absl::Status SkipScalar() {
    const char c = Peek();
    if (c == '"') return ScanString(nullptr);
    if (c == '-' || IsDigit(c)) {
      absl::string_view literal;
      return ScanNumber(&literal);
    }
    if (c == 't') return ScanLiteral("true");
    if (c == 'f') return ScanLiteral("false");
    if (c == 'n') return ScanLiteral("null");
    return SyntaxError("looking for beginning of value");
  }

  absl::Status ScanLiteral(absl::string_view word) {
    for (char expected : word) {
      if (AtEnd()) return UnexpectedEnd();
      if (Peek() != expected) {
        return SyntaxError(
            absl::StrCat("in literal ", word, " (expecting '", std::string(1, expected), "')"));
      }
      ++pos_;
    }
    return absl::OkStatus();
  }

  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? ; whatever follows is the caller's to judge,
  // so "01" fails there, as in Go, with "invalid character '1' after ...".
  absl::Status ScanNumber(absl::string_view* literal) {
    const size_t start = pos_;
    if (Peek() == '-') {
      ++pos_;
      if (AtEnd()) return UnexpectedEnd();
      if (!IsDigit(Peek())) return SyntaxError("in numeric literal");
    }
    if (Peek() == '0') {
      ++pos_;
    } else {
      while (!AtEnd() && IsDigit(Peek())) ++pos_;
    }
    if (!AtEnd() && Peek() == '.') {
      ++pos_;
      if (AtEnd()) return UnexpectedEnd();
      if (!IsDigit(Peek())) return SyntaxError("after decimal point in numeric literal");
      while (!AtEnd() && IsDigit(Peek())) ++pos_;
    }
    if (!AtEnd() && (Peek() == 'e' || Peek() == 'E')) {
      ++pos_;
      if (!AtEnd() && (Peek() == '+' || Peek() == '-')) ++pos_;
      if (AtEnd()) return UnexpectedEnd();
      if (!IsDigit(Peek())) return SyntaxError("in exponent of numeric literal");
      while (!AtEnd() && IsDigit(Peek())) ++pos_;
    }
    *literal = in_.substr(start, pos_ - start);
    return absl::OkStatus();
  }

  // Reads 4 hex digits at the current position.
  absl::Status ScanHex4(uint32_t* code_point) {
    uint32_t value = 0;
    for (int i = 0; i < 4; ++i) {
      if (AtEnd()) return UnexpectedEnd();
      const int digit = HexValue(Peek());
      if (digit < 0) return SyntaxError("in \\u hexadecimal character escape");
      value = value * 16 + static_cast<uint32_t>(digit);
      ++pos_;
    }
    *code_point = value;
    return absl::OkStatus();
  }

  // If the input at the current position is `\uXXXX` naming a low surrogate, consumes it.
  std::optional<uint32_t> ConsumeLowSurrogateEscape() {
    if (in_.size() - pos_ < 6 || in_[pos_] != '\\' || in_[pos_ + 1] != 'u') return std::nullopt;
    uint32_t value = 0;
    for (size_t i = 2; i < 6; ++i) {
      const int digit = HexValue(in_[pos_ + i]);
      if (digit < 0) return std::nullopt;
      value = value * 16 + static_cast<uint32_t>(digit);
    }
    if (!IsLowSurrogate(value)) return std::nullopt;
    pos_ += 6;
    return value;
  }

  // Scans a string starting at its opening quote; decodes it into `out` unless that is null.
  // Decoding follows Go's unquote: an invalid UTF-8 byte becomes U+FFFD, a surrogate pair of
  // escapes combines, and any other surrogate escape becomes U+FFFD.
  absl::Status ScanString(std::string* out) {
    ++pos_;  // '"'
    for (;;) {
      if (AtEnd()) return UnexpectedEnd();
      const char c = Peek();
      const auto byte = static_cast<unsigned char>(c);
      if (c == '"') {
        ++pos_;
        return absl::OkStatus();
      }
      if (byte < 0x20) return SyntaxError("in string literal");
      if (c == '\\') {
        if (absl::Status s = ScanEscape(out); !s.ok()) return s;
        continue;
      }
      if (byte < 0x80) {
        if (out != nullptr) out->push_back(c);
        ++pos_;
        continue;
      }
      const size_t n = Utf8SequenceLength(in_, pos_);
      if (out != nullptr) absl::StrAppend(out, n == 0 ? kReplacementChar : in_.substr(pos_, n));
      pos_ += n == 0 ? 1 : n;
    }
  }

  absl::Status ScanEscape(std::string* out) {
    ++pos_;  // '\\'
    if (AtEnd()) return UnexpectedEnd();
    const char c = Peek();
    char simple = 0;
    switch (c) {
      case '"':
      case '\\':
      case '/':
        simple = c;
        break;
      case 'b':
        simple = '\b';
        break;
      case 'f':
        simple = '\f';
        break;
      case 'n':
        simple = '\n';
        break;
      case 'r':
        simple = '\r';
        break;
      case 't':
        simple = '\t';
        break;
      case 'u':
        break;
      default:
        return SyntaxError("in string escape code");
    }
    ++pos_;
    if (c != 'u') {
      if (out != nullptr) out->push_back(simple);
      return absl::OkStatus();
    }
    uint32_t code_point = 0;
    if (absl::Status s = ScanHex4(&code_point); !s.ok()) return s;
    if (IsHighSurrogate(code_point)) {
      if (std::optional<uint32_t> low = ConsumeLowSurrogateEscape(); low.has_value()) {
        code_point = 0x10000 + ((code_point - 0xD800) << 10) + (*low - 0xDC00);
      } else {
        code_point = 0xFFFD;
      }
    } else if (IsLowSurrogate(code_point)) {
      code_point = 0xFFFD;
    }
    if (out != nullptr) AppendUtf8(code_point, out);
    return absl::OkStatus();
  }

  const absl::string_view in_;
  const absl::Span<const GoJsonField> fields_;
  std::vector<std::string> folded_names_;
  std::vector<GoJsonValue> values_;
  std::optional<std::string> first_type_error_;
  size_t pos_ = 0;
};

}  // namespace

absl::Status DecodeGoJsonObject(absl::string_view json, absl::Span<const GoJsonField> fields,
                                std::vector<GoJsonValue>* values) {
  return GoJsonDecoder(json, fields).Decode(values);
}

}  // namespace giftwall::domain
