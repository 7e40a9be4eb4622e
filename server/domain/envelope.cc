#include "server/domain/envelope.h"

#include "absl/strings/str_format.h"
#include "server/domain/app_code.h"
#include "server/domain/text.h"

namespace giftwall::domain {

namespace {

absl::Status CheckEventIdAndTime(absl::string_view event_id, int64_t occurred_at_ms) {
  if (TrimSpace(event_id).empty()) {
    return absl::InvalidArgumentError("event_id is required (it is blank)");
  }
  if (event_id.size() > kMaxEventIdBytes) {
    return absl::InvalidArgumentError(absl::StrFormat("event_id is %d bytes, at most %d allowed",
                                                      event_id.size(), kMaxEventIdBytes));
  }
  if (!IsValidUtf8(event_id)) return absl::InvalidArgumentError("event_id is not valid UTF-8");
  if (occurred_at_ms <= 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("occurred_at_ms must be > 0 (Unix milliseconds), got %d", occurred_at_ms));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<GiftEvent> ValidateGiftEnvelope(const RawOutboxMessage& message) {
  absl::StatusOr<std::string> app_code = NormalizeAppCode(message.app_code);
  if (!app_code.ok()) return app_code.status();
  if (absl::Status s = CheckEventIdAndTime(message.event_id, message.occurred_at_ms); !s.ok()) {
    return s;
  }
  return GiftEvent{*std::move(app_code), std::string(message.event_id),
                   std::string(message.payload_json), message.occurred_at_ms};
}

absl::Status CheckGiftEventEnvelope(const GiftEvent& event) {
  return CheckEventIdAndTime(event.event_id, event.occurred_at_ms);
}

}  // namespace giftwall::domain
