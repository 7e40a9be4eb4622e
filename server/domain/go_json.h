// Decodes a JSON object exactly as Go's encoding/json decodes it into a struct whose fields are
// int64, string and bool: the wallet writes payloads with Go, and the seed reads them with Go, so a
// payload is valid here if and only if it was valid there.
#ifndef GIFTWALL_SERVER_DOMAIN_GO_JSON_H_
#define GIFTWALL_SERVER_DOMAIN_GO_JSON_H_

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace giftwall::domain {

enum class GoJsonKind { kInt64, kString, kBool };

// A struct field as Go sees it: its JSON name (the `json:"..."` tag) and its Go type.
struct GoJsonField {
  absl::string_view name;
  GoJsonKind kind;
};

// The decoded value of one field; nullopt when the key was absent or every occurrence was null.
using GoJsonValue = std::optional<std::variant<int64_t, std::string, bool>>;

// Decodes `json` into one value per field of `fields` (same order), with Go's rules:
// - the whole input must be one valid JSON value (RFC 8259 grammar, surrounding whitespace only);
// - a top-level `null` decodes to all fields absent; any other non-object is an error;
// - object keys match field names case-insensitively (Unicode simple folding, as bytes.EqualFold:
//   U+017F folds to 's' and U+212A to 'k'); unknown keys are skipped;
// - when a key repeats, the last non-null value wins; `null` leaves a field as it was;
// - an int64 field takes only a JSON integer literal within int64 (no quotes, fraction or
//   exponent); a string field takes only a JSON string; a bool field only `true` or `false`
//   (not "true", not 1); anything else is a type error;
// - string escapes are decoded; invalid UTF-8 and lone surrogates become U+FFFD.
// Errors are INVALID_ARGUMENT with a message naming the offending field or position.
absl::Status DecodeGoJsonObject(absl::string_view json, absl::Span<const GoJsonField> fields,
                                std::vector<GoJsonValue>* values);

}  // namespace giftwall::domain

#endif  // GIFTWALL_SERVER_DOMAIN_GO_JSON_H_
