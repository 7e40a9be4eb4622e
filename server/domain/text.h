// Byte-level text helpers with Go's semantics where the seed relies on them.
#ifndef GIFTWALL_SERVER_DOMAIN_TEXT_H_
#define GIFTWALL_SERVER_DOMAIN_TEXT_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace giftwall::domain {

// Go's strings.TrimSpace: strips leading and trailing Unicode white space (ASCII \t \n \v \f \r
// and space, U+0085, U+00A0, U+1680, U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000).
absl::string_view TrimSpace(absl::string_view s);

bool IsValidUtf8(absl::string_view s);

// `s` with every byte that does not start a valid UTF-8 sequence replaced by U+FFFD, as Go's
// decoder reads it: text that a utf8mb4 column (or a JSON string) accepts.
std::string ToValidUtf8(absl::string_view s);

// The longest prefix of `s` of at most `max_bytes` bytes that does not split a UTF-8 sequence.
absl::string_view TruncateUtf8(absl::string_view s, size_t max_bytes);

}  // namespace giftwall::domain

#endif  // GIFTWALL_SERVER_DOMAIN_TEXT_H_
