// ValidateGiftEnvelope on any outbox message: it never crashes, accepts exactly the envelopes
// envelope.h describes, keeps the event id and payload byte for byte, its errors name the field,
// and CheckGiftEventEnvelope agrees with it.
// Input (FuzzedDataProvider): the last 8 bytes are occurred_at_ms; from the front, app_code,
// event_id and event_type, each ended by a backslash and one more byte ("\\" is a literal
// backslash); the rest is the payload.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "glog/logging.h"
#include "server/domain/app_code.h"
#include "server/domain/envelope.h"
#include "server/domain/text.h"

namespace giftwall::domain {
namespace {

bool MatchesAppCodePattern(absl::string_view code) {
  if (code.empty() || code.size() > kMaxAppCodeBytes) return false;
  for (char c : code) {
    if (!(absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '_' || c == '-')) return false;
  }
  return true;
}

void FuzzOne(FuzzedDataProvider& provider) {
  const int64_t occurred_at_ms = provider.ConsumeIntegral<int64_t>();
  const std::string app_code = provider.ConsumeRandomLengthString(64);
  const std::string event_id = provider.ConsumeRandomLengthString(2 * kMaxEventIdBytes);
  const std::string event_type = provider.ConsumeRandomLengthString(32);
  const std::string payload_json = provider.ConsumeRemainingBytesAsString();

  CHECK_EQ(IsGiftEvent(event_type), event_type == kWalletGiftDebited);
  const RawOutboxMessage message{app_code, event_id, event_type, payload_json, occurred_at_ms};
  const absl::StatusOr<GiftEvent> event = ValidateGiftEnvelope(message);

  // What envelope.h promises, checked independently of how envelope.cc does it.
  const absl::StatusOr<std::string> normalized = NormalizeAppCode(app_code);
  const bool want_ok = normalized.ok() && !TrimSpace(event_id).empty() &&
                       event_id.size() <= kMaxEventIdBytes && IsValidUtf8(event_id) &&
                       occurred_at_ms > 0;
  CHECK_EQ(event.ok(), want_ok) << event.status();
  // The projection checks the same rules again on events that skipped ValidateGiftEnvelope.
  if (normalized.ok()) {
    const GiftEvent unchecked{*normalized, event_id, payload_json, occurred_at_ms};
    const absl::Status again = CheckGiftEventEnvelope(unchecked);
    CHECK_EQ(again.ok(), event.ok()) << again;
  }
  if (!event.ok()) {
    CHECK(event.status().code() == absl::StatusCode::kInvalidArgument) << event.status();
    const absl::string_view message_text = event.status().message();
    CHECK(absl::StrContains(message_text, "app_code") ||
          absl::StrContains(message_text, "event_id") ||
          absl::StrContains(message_text, "occurred_at_ms"))
        << "the error names no field: " << event.status();
    return;
  }
  CHECK(MatchesAppCodePattern(event->app_code)) << event->app_code;
  CHECK_EQ(event->app_code, *normalized);
  // A normalized app_code normalizes to itself.
  const absl::StatusOr<std::string> renormalized = NormalizeAppCode(event->app_code);
  CHECK(renormalized.ok()) << renormalized.status();
  CHECK_EQ(*renormalized, event->app_code);
  CHECK(event->event_id == event_id);
  CHECK(event->payload_json == payload_json);
  CHECK_EQ(event->occurred_at_ms, occurred_at_ms);
}

}  // namespace
}  // namespace giftwall::domain

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider provider(data, size);
  giftwall::domain::FuzzOne(provider);
  return 0;
}
