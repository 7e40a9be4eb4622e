// ParseGiftPayload on any bytes: it never crashes, a payload it accepts keeps within the bounds
// gift_payload.h documents, and the fields it read, written back as JSON, read the same.
// Input: the payload itself.
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "glog/logging.h"
#include "server/domain/gift_payload.h"
#include "server/domain/text.h"

namespace giftwall::domain {
namespace {

// A text field as the payload keeps it: trimmed, within its bound, and valid UTF-8 (the decoder
// turns invalid bytes into U+FFFD).
void CheckText(absl::string_view field, absl::string_view value, size_t max_bytes) {
  CHECK_LE(value.size(), max_bytes) << field;
  CHECK(TrimSpace(value) == value) << field << " is not trimmed";
  CHECK(IsValidUtf8(value)) << field << " is not valid UTF-8";
}

void CheckBounds(const GiftPayload& p) {
  CHECK_GT(p.target_user_id, 0);
  CHECK(!p.gift_id.empty());
  CheckText("gift_id", p.gift_id, kMaxGiftIdBytes);
  CHECK_GT(p.gift_count, 0);
  CHECK_GE(p.sender_user_id, 0);
  CHECK_EQ(p.has_sender(), p.sender_user_id > 0);
  CHECK_GE(p.coin_amount, 0);
  CheckText("gift_name", p.gift_name, kMaxGiftNameBytes);
  CheckText("gift_icon", p.gift_icon, kMaxGiftIconBytes);
}

// `s` as a JSON string: quotes, backslashes and control characters escaped, the rest (valid
// UTF-8 here) as it is.
std::string JsonString(absl::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      absl::StrAppendFormat(&out, "\\u%04x", static_cast<unsigned char>(c));
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
  return out;
}

std::string ToJson(const GiftPayload& p) {
  return absl::StrCat("{\"target_user_id\":", p.target_user_id,
                      ",\"gift_id\":", JsonString(p.gift_id), ",\"gift_count\":", p.gift_count,
                      ",\"sender_user_id\":", p.sender_user_id, ",\"coin_amount\":", p.coin_amount,
                      ",\"gift_name\":", JsonString(p.gift_name),
                      ",\"gift_icon\":", JsonString(p.gift_icon), ",\"room_id\":", p.room_id,
                      ",\"anonymous\":", p.anonymous ? "true" : "false", "}");
}

auto Fields(const GiftPayload& p) {
  return std::tie(p.target_user_id, p.gift_id, p.gift_count, p.sender_user_id, p.coin_amount,
                  p.gift_name, p.gift_icon, p.room_id, p.anonymous);
}

void FuzzOne(absl::string_view payload) {
  const absl::StatusOr<GiftPayload> parsed = ParseGiftPayload(payload);
  if (!parsed.ok()) {
    CHECK(parsed.status().code() == absl::StatusCode::kInvalidArgument) << parsed.status();
    CHECK(absl::StartsWith(parsed.status().message(), "invalid gift payload: ")) << parsed.status();
    return;
  }
  CheckBounds(*parsed);
  // The fields, written back as JSON, are the same gift.
  const std::string json = ToJson(*parsed);
  const absl::StatusOr<GiftPayload> again = ParseGiftPayload(json);
  CHECK(again.ok()) << again.status() << " for " << json;
  CHECK(Fields(*again) == Fields(*parsed)) << json;
  CHECK(SameGiftPayload(payload, json)) << json;
}

}  // namespace
}  // namespace giftwall::domain

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  giftwall::domain::FuzzOne(absl::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
