// The WalletGiftDebited payload: what one debited gift event says about the receiver's wall.
#ifndef GIFTWALL_SERVER_DOMAIN_GIFT_PAYLOAD_H_
#define GIFTWALL_SERVER_DOMAIN_GIFT_PAYLOAD_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/domain/envelope.h"

namespace giftwall::domain {

inline constexpr size_t kMaxGiftIdBytes = 64;
inline constexpr size_t kMaxGiftNameBytes = 128;
inline constexpr size_t kMaxGiftIconBytes = 512;
// Larger payloads are not gift events; they go dead rather than being parsed.
inline constexpr size_t kMaxPayloadBytes = 64 * 1024;

struct GiftPayload {
  int64_t target_user_id = 0;  // the wall's owner, > 0
  std::string gift_id;         // trimmed, 1..64 bytes
  int64_t gift_count = 0;      // > 0
  int64_t sender_user_id = 0;  // 0 when the event has no sender (absent or <= 0 in the payload)
  int64_t coin_amount = 0;     // >= 0: coins debited for the whole event
  std::string gift_name;       // trimmed; empty when the event does not carry one
  std::string gift_icon;       // trimmed; empty when the event does not carry one
  int64_t room_id = 0;         // 0 when absent
  // The sender chose to send this gift anonymously (神秘人); false when absent or null.
  bool anonymous = false;

  bool has_sender() const { return sender_user_id > 0; }
};

// Parses and validates a payload (DESIGN §2.5). Whitespace-only means "{}". Any error is
// INVALID_ARGUMENT whose message says what is wrong, e.g. "gift_count must be > 0, got 0";
// such an event can never be projected.
absl::StatusOr<GiftPayload> ParseGiftPayload(absl::string_view payload_json);

// What a gift event says, or why it can never be projected: its envelope first
// (CheckGiftEventEnvelope, "invalid envelope: ..."), then its payload. Every path that projects
// reads events through this, so an outbox row the RPC would refuse is never folded.
absl::StatusOr<GiftPayload> ParseGiftEvent(const GiftEvent& event);

// Whether two payloads say the same gift: the same fields once parsed (so that key order,
// spacing, or a JSON column's normalization make no difference), or, where either does not
// parse, the same bytes.
bool SameGiftPayload(absl::string_view a, absl::string_view b);

}  // namespace giftwall::domain

#endif  // GIFTWALL_SERVER_DOMAIN_GIFT_PAYLOAD_H_
