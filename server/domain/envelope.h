// The envelope of a wallet outbox message: which event it is, independent of its payload.
#ifndef GIFTWALL_SERVER_DOMAIN_ENVELOPE_H_
#define GIFTWALL_SERVER_DOMAIN_ENVELOPE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace giftwall::domain {

inline constexpr absl::string_view kWalletGiftDebited = "WalletGiftDebited";
inline constexpr size_t kMaxEventIdBytes = 128;

// What the relay sends, as received.
struct RawOutboxMessage {
  absl::string_view app_code;
  absl::string_view event_id;
  absl::string_view event_type;
  absl::string_view payload_json;
  int64_t occurred_at_ms = 0;
};

// A WalletGiftDebited event whose envelope is valid; the payload is not yet parsed.
struct GiftEvent {
  std::string app_code;      // normalized
  std::string event_id;      // exactly as sent: ids are compared byte for byte
  std::string payload_json;  // exactly as sent
  int64_t occurred_at_ms = 0;
};

// Event types other than WalletGiftDebited are not projected (the seed ignores them before
// looking at anything else).
inline bool IsGiftEvent(absl::string_view event_type) { return event_type == kWalletGiftDebited; }

// Checks the envelope of a gift event. INVALID_ARGUMENT names the field: a blank or oversize
// event_id, a bad app_code, occurred_at_ms <= 0. The event_id is not trimmed: "E1 " and "E1" are
// different events, and the outbox row (which the scanner reads) keeps the id as written.
absl::StatusOr<GiftEvent> ValidateGiftEnvelope(const RawOutboxMessage& message);

// The envelope rules of an event whose app code is already normalized: what the projection
// checks again on every path, for events that never came through ValidateGiftEnvelope (the
// catch-up scan's outbox rows, a requeue's, a rebuild's).
absl::Status CheckGiftEventEnvelope(const GiftEvent& event);

}  // namespace giftwall::domain

#endif  // GIFTWALL_SERVER_DOMAIN_ENVELOPE_H_
