#include "server/domain/gift_payload.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "server/domain/go_json.h"
#include "server/domain/text.h"

namespace giftwall::domain {
namespace {

// The seed's giftMetadata struct, field by field, in the order of kGiftFields, and `anonymous`
// (DESIGN §2.5), which the wallet adds as a Go bool.
enum GiftField : size_t {
  kTargetUserId,
  kGiftId,
  kGiftCount,
  kSenderUserId,
  kCoinAmount,
  kGiftName,
  kGiftIcon,
  kRoomId,
  kAnonymous,
};

constexpr GoJsonField kGiftFields[] = {
    {"target_user_id", GoJsonKind::kInt64}, {"gift_id", GoJsonKind::kString},
    {"gift_count", GoJsonKind::kInt64},     {"sender_user_id", GoJsonKind::kInt64},
    {"coin_amount", GoJsonKind::kInt64},    {"gift_name", GoJsonKind::kString},
    {"gift_icon", GoJsonKind::kString},     {"room_id", GoJsonKind::kInt64},
    {"anonymous", GoJsonKind::kBool},
};

absl::Status Invalid(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("invalid gift payload: ", what));
}

std::optional<int64_t> Int64Field(const std::vector<GoJsonValue>& values, GiftField field) {
  if (!values[field].has_value()) return std::nullopt;
  return std::get<int64_t>(*values[field]);
}

// Null when the field is absent.
const std::string* StringField(const std::vector<GoJsonValue>& values, GiftField field) {
  if (!values[field].has_value()) return nullptr;
  return &std::get<std::string>(*values[field]);
}

// A required positive id or count.
absl::StatusOr<int64_t> RequirePositive(const std::vector<GoJsonValue>& values, GiftField field) {
  const absl::string_view name = kGiftFields[field].name;
  const std::optional<int64_t> value = Int64Field(values, field);
  if (!value.has_value()) return Invalid(absl::StrCat("missing ", name));
  if (*value <= 0) return Invalid(absl::StrCat(name, " must be > 0, got ", *value));
  return *value;
}

// An optional text field, trimmed, at most `max_bytes` long after trimming.
absl::StatusOr<std::string> TrimmedText(const std::vector<GoJsonValue>& values, GiftField field,
                                        size_t max_bytes) {
  const std::string* value = StringField(values, field);
  if (value == nullptr) return std::string();
  const absl::string_view trimmed = TrimSpace(*value);
  if (trimmed.size() > max_bytes) {
    return Invalid(absl::StrCat(kGiftFields[field].name, " is ", trimmed.size(), " bytes, at most ",
                                max_bytes, " allowed"));
  }
  return std::string(trimmed);
}

}  // namespace

absl::StatusOr<GiftPayload> ParseGiftPayload(absl::string_view payload_json) {
  if (payload_json.size() > kMaxPayloadBytes) {
    return Invalid(absl::StrCat("payload is ", payload_json.size(), " bytes, at most ",
                                kMaxPayloadBytes, " allowed"));
  }
  // The seed trims the payload before decoding it and reads an empty one as "{}".
  absl::string_view json = TrimSpace(payload_json);
  if (json.empty()) json = "{}";
  std::vector<GoJsonValue> values;
  if (absl::Status s = DecodeGoJsonObject(json, kGiftFields, &values); !s.ok()) {
    return Invalid(s.message());
  }

  GiftPayload payload;
  absl::StatusOr<int64_t> target = RequirePositive(values, kTargetUserId);
  if (!target.ok()) return target.status();
  payload.target_user_id = *target;

  const std::string* gift_id = StringField(values, kGiftId);
  if (gift_id == nullptr) return Invalid("missing gift_id");
  const absl::string_view trimmed_id = TrimSpace(*gift_id);
  if (trimmed_id.empty()) return Invalid("gift_id is blank");
  if (trimmed_id.size() > kMaxGiftIdBytes) {
    return Invalid(absl::StrCat("gift_id is ", trimmed_id.size(), " bytes, at most ",
                                kMaxGiftIdBytes, " allowed"));
  }
  payload.gift_id = std::string(trimmed_id);

  absl::StatusOr<int64_t> count = RequirePositive(values, kGiftCount);
  if (!count.ok()) return count.status();
  payload.gift_count = *count;

  // The seed treats a missing or non-positive sender as "no sender" rather than as an error.
  const int64_t sender = Int64Field(values, kSenderUserId).value_or(0);
  payload.sender_user_id = sender > 0 ? sender : 0;

  payload.coin_amount = Int64Field(values, kCoinAmount).value_or(0);
  if (payload.coin_amount < 0) {
    return Invalid(absl::StrCat("coin_amount must be >= 0, got ", payload.coin_amount));
  }

  absl::StatusOr<std::string> name = TrimmedText(values, kGiftName, kMaxGiftNameBytes);
  if (!name.ok()) return name.status();
  payload.gift_name = *std::move(name);

  absl::StatusOr<std::string> icon = TrimmedText(values, kGiftIcon, kMaxGiftIconBytes);
  if (!icon.ok()) return icon.status();
  payload.gift_icon = *std::move(icon);

  payload.room_id = Int64Field(values, kRoomId).value_or(0);
  payload.anonymous = values[kAnonymous].has_value() && std::get<bool>(*values[kAnonymous]);
  return payload;
}

absl::StatusOr<GiftPayload> ParseGiftEvent(const GiftEvent& event) {
  if (absl::Status envelope = CheckGiftEventEnvelope(event); !envelope.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("invalid envelope: ", envelope.message()));
  }
  return ParseGiftPayload(event.payload_json);
}

bool SameGiftPayload(absl::string_view a, absl::string_view b) {
  const absl::StatusOr<GiftPayload> x = ParseGiftPayload(a);
  const absl::StatusOr<GiftPayload> y = ParseGiftPayload(b);
  if (!x.ok() || !y.ok()) return a == b;
  return std::tie(x->target_user_id, x->gift_id, x->gift_count, x->sender_user_id, x->coin_amount,
                  x->gift_name, x->gift_icon, x->room_id, x->anonymous) ==
         std::tie(y->target_user_id, y->gift_id, y->gift_count, y->sender_user_id, y->coin_amount,
                  y->gift_name, y->gift_icon, y->room_id, y->anonymous);
}

}  // namespace giftwall::domain
