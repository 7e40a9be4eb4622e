#include "server/logging/trace_context.h"

#include <cstdint>

#include "absl/random/random.h"
#include "absl/strings/str_format.h"

namespace giftwall::logging {
namespace {

// `text` is `length` lowercase hex digits; with `nonzero`, not all of them '0'.
bool IsHex(absl::string_view text, size_t length, bool nonzero) {
  if (text.size() != length) return false;
  bool any = false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    any = any || c != '0';
  }
  return any || !nonzero;
}

uint64_t RandomNonZero() {
  thread_local absl::BitGen bits;
  uint64_t value = 0;
  while (value == 0) value = absl::Uniform<uint64_t>(bits);
  return value;
}

}  // namespace

std::optional<TraceParent> ParseTraceParent(absl::string_view value) {
  // version "-" trace-id "-" parent-id "-" flags: 2 + 1 + 32 + 1 + 16 + 1 + 2 = 55.
  constexpr size_t kLength = 55;
  if (value.size() < kLength) return std::nullopt;
  const absl::string_view version = value.substr(0, 2);
  if (!IsHex(version, 2, false) || version == "ff") return std::nullopt;
  // Version 00 is exactly 55 characters; a later one may go on after a '-'.
  if (value.size() > kLength && (version == "00" || value[kLength] != '-')) return std::nullopt;
  if (value[2] != '-' || value[35] != '-' || value[52] != '-') return std::nullopt;
  const absl::string_view trace_id = value.substr(3, 32);
  const absl::string_view parent_id = value.substr(36, 16);
  const absl::string_view flags = value.substr(53, 2);
  if (!IsHex(trace_id, 32, true) || !IsHex(parent_id, 16, true) || !IsHex(flags, 2, false)) {
    return std::nullopt;
  }
  const int flag_bits = (flags[1] >= 'a' ? flags[1] - 'a' + 10 : flags[1] - '0');
  return TraceParent{std::string(trace_id), std::string(parent_id), (flag_bits & 1) != 0};
}

std::string NewTraceId() { return absl::StrFormat("%016x%016x", RandomNonZero(), RandomNonZero()); }

std::string NewSpanId() { return absl::StrFormat("%016x", RandomNonZero()); }

}  // namespace giftwall::logging
