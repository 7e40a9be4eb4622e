#include "server/domain/envelope.h"

#include <string>

#include "gtest/gtest.h"

namespace giftwall::domain {
namespace {

RawOutboxMessage Message(absl::string_view event_id, int64_t occurred_at_ms = 1000) {
  return RawOutboxMessage{"Demo", event_id, kWalletGiftDebited, "{}", occurred_at_ms};
}

TEST(IsGiftEvent, MatchesTheTypeExactly) {
  EXPECT_TRUE(IsGiftEvent("WalletGiftDebited"));
  EXPECT_FALSE(IsGiftEvent("walletgiftdebited"));
  EXPECT_FALSE(IsGiftEvent("WalletGiftDebited "));
  EXPECT_FALSE(IsGiftEvent("WalletRecharged"));
  EXPECT_FALSE(IsGiftEvent(""));
}

TEST(ValidateGiftEnvelope, KeepsTheEventIdByteForByte) {
  absl::StatusOr<GiftEvent> event = ValidateGiftEnvelope(Message(" E1 "));
  ASSERT_TRUE(event.ok()) << event.status();
  EXPECT_EQ(event->event_id, " E1 ");
  EXPECT_EQ(event->app_code, "demo");
  EXPECT_EQ(event->occurred_at_ms, 1000);
}

TEST(ValidateGiftEnvelope, RejectsBlankEventId) {
  for (const char* blank : {"", " ", "\t\n"}) {
    absl::StatusOr<GiftEvent> event = ValidateGiftEnvelope(Message(blank));
    ASSERT_FALSE(event.ok());
    EXPECT_EQ(event.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(event.status().message(), "event_id is required (it is blank)");
  }
}

TEST(ValidateGiftEnvelope, EventIdUpTo128Bytes) {
  EXPECT_TRUE(ValidateGiftEnvelope(Message(std::string(128, 'e'))).ok());
  absl::StatusOr<GiftEvent> event = ValidateGiftEnvelope(Message(std::string(129, 'e')));
  ASSERT_FALSE(event.ok());
  EXPECT_EQ(event.status().message(), "event_id is 129 bytes, at most 128 allowed");
}

TEST(ValidateGiftEnvelope, RejectsEventIdThatIsNotUtf8) {
  absl::StatusOr<GiftEvent> event = ValidateGiftEnvelope(Message("E\xff"));
  ASSERT_FALSE(event.ok());
  EXPECT_EQ(event.status().message(), "event_id is not valid UTF-8");
}

TEST(ValidateGiftEnvelope, RejectsNonPositiveTime) {
  for (int64_t t : {int64_t{0}, int64_t{-1}}) {
    absl::StatusOr<GiftEvent> event = ValidateGiftEnvelope(Message("E1", t));
    ASSERT_FALSE(event.ok());
    EXPECT_NE(event.status().message().find("occurred_at_ms must be > 0"), absl::string_view::npos);
  }
}

TEST(ValidateGiftEnvelope, RejectsBadAppCode) {
  RawOutboxMessage message = Message("E1");
  message.app_code = "no spaces";
  absl::StatusOr<GiftEvent> event = ValidateGiftEnvelope(message);
  ASSERT_FALSE(event.ok());
  EXPECT_NE(event.status().message().find("app_code"), absl::string_view::npos);
}

}  // namespace
}  // namespace giftwall::domain
