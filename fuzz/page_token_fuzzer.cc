// The page tokens: decoding any text never crashes and fails only with INVALID_ARGUMENT about
// page_token; a token that decodes is bound to the request it is decoded for and re-encodes to
// itself; and encoding any token, then decoding it for its own request, gives back its values.
//
// Input (FuzzedDataProvider), from the end: the token type (gift wall, senders, dead events,
// sponsor history) and what the rest is for; from the front, the request (app_code, user_id,
// sort, include_unlit, gift_id, error_contains, period_kind), then either
// - kText: the token text as a client would send it;
// - kBody: the token's bytes before its checksum: the checksum and base64 are added here, so
//   that the fuzzer reaches the field decoding instead of failing the checksum;
// - kRoundTrip: the fields of a token to encode and decode.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <tuple>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "glog/logging.h"
#include "server/domain/app_code.h"
#include "server/domain/envelope.h"
#include "server/domain/gift_payload.h"
#include "server/domain/page_token.h"
#include "server/domain/projection.h"

namespace giftwall::domain {
namespace {

enum class TokenType { kGiftWall, kSender, kDeadEvent, kSponsorHistory, kSent, kMaxValue = kSent };
enum class Form { kText, kBody, kRoundTrip, kMaxValue = kRoundTrip };

constexpr absl::string_view kBase64UrlAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

// The request a token is decoded for.
struct Request {
  std::string app_code;
  int64_t user_id = 0;
  WallSort sort = WallSort::kCountDesc;
  std::string gift_id;  // also a history's gift filter
  std::string error_contains;
  std::string period_kind;
  bool include_unlit = false;
};

auto Fields(const GiftWallPageToken& t) {
  return std::tie(t.sort, t.app_code, t.user_id, t.sort_value, t.gift_id, t.period, t.include_unlit,
                  t.unlit);
}
auto Fields(const SenderPageToken& t) {
  return std::tie(t.app_code, t.user_id, t.gift_id, t.cursor.sent_count, t.cursor.last_sent_at_ms,
                  t.cursor.tied_shown, t.period);
}
auto Fields(const DeadEventPageToken& t) {
  return std::tie(t.app_code, t.error_contains, t.event_id);
}
auto Fields(const SponsorHistoryPageToken& t) {
  return std::tie(t.app_code, t.user_id, t.period_kind, t.gift_filter, t.period_key, t.gift_id);
}
auto Fields(const SentPageToken& t) {
  return std::tie(t.app_code, t.sender_user_id, t.gift_id, t.after_gift, t.after_receiver,
                  t.period);
}

std::string Encode(const GiftWallPageToken& t) { return EncodeGiftWallPageToken(t); }
std::string Encode(const SenderPageToken& t) { return EncodeSenderPageToken(t); }
std::string Encode(const DeadEventPageToken& t) { return EncodeDeadEventPageToken(t); }
std::string Encode(const SponsorHistoryPageToken& t) { return EncodeSponsorHistoryPageToken(t); }
std::string Encode(const SentPageToken& t) { return EncodeSentPageToken(t); }

template <typename Token>
absl::StatusOr<Token> Decode(absl::string_view token, const Request& r);
template <>
absl::StatusOr<GiftWallPageToken> Decode(absl::string_view token, const Request& r) {
  return DecodeGiftWallPageToken(token, r.app_code, r.user_id, r.sort, r.include_unlit);
}
template <>
absl::StatusOr<SenderPageToken> Decode(absl::string_view token, const Request& r) {
  return DecodeSenderPageToken(token, r.app_code, r.user_id, r.gift_id);
}
template <>
absl::StatusOr<DeadEventPageToken> Decode(absl::string_view token, const Request& r) {
  return DecodeDeadEventPageToken(token, r.app_code, r.error_contains);
}
template <>
absl::StatusOr<SponsorHistoryPageToken> Decode(absl::string_view token, const Request& r) {
  return DecodeSponsorHistoryPageToken(token, r.app_code, r.user_id, r.period_kind, r.gift_id);
}
template <>
absl::StatusOr<SentPageToken> Decode(absl::string_view token, const Request& r) {
  return DecodeSentPageToken(token, r.app_code, r.user_id, r.gift_id);
}

// Whether `t` was issued for request `r`.
bool IssuedFor(const GiftWallPageToken& t, const Request& r) {
  return t.app_code == r.app_code && t.user_id == r.user_id && t.sort == r.sort &&
         t.include_unlit == r.include_unlit;
}
bool IssuedFor(const SenderPageToken& t, const Request& r) {
  return t.app_code == r.app_code && t.user_id == r.user_id && t.gift_id == r.gift_id;
}
bool IssuedFor(const DeadEventPageToken& t, const Request& r) {
  return t.app_code == r.app_code && t.error_contains == r.error_contains;
}
bool IssuedFor(const SponsorHistoryPageToken& t, const Request& r) {
  return t.app_code == r.app_code && t.user_id == r.user_id && t.period_kind == r.period_kind &&
         t.gift_filter == r.gift_id;
}
bool IssuedFor(const SentPageToken& t, const Request& r) {
  return t.app_code == r.app_code && t.sender_user_id == r.user_id && t.gift_id == r.gift_id;
}

// The request that `t` was issued for.
Request RequestOf(const GiftWallPageToken& t) {
  return {t.app_code, t.user_id, t.sort, "", "", "", t.include_unlit};
}
Request RequestOf(const SenderPageToken& t) {
  return {t.app_code, t.user_id, WallSort::kCountDesc, t.gift_id, "", "", false};
}
Request RequestOf(const DeadEventPageToken& t) {
  return {t.app_code, 0, WallSort::kCountDesc, "", t.error_contains, "", false};
}
Request RequestOf(const SponsorHistoryPageToken& t) {
  return {t.app_code, t.user_id, WallSort::kCountDesc, t.gift_filter, "", t.period_kind, false};
}
Request RequestOf(const SentPageToken& t) {
  return {t.app_code, t.sender_user_id, WallSort::kCountDesc, t.gift_id, "", "", false};
}

// Whether the service could issue `t`: its strings come from validated requests and rows.
bool Issuable(const GiftWallPageToken& t) {
  return t.app_code.size() <= kMaxAppCodeBytes && t.gift_id.size() <= kMaxGiftIdBytes;
}
bool Issuable(const SenderPageToken& t) {
  // A cursor is after a page that ended in its tie: at least one of the tie was shown.
  return t.app_code.size() <= kMaxAppCodeBytes && t.gift_id.size() <= kMaxGiftIdBytes &&
         t.cursor.tied_shown >= 1 && t.cursor.tied_shown <= kMaxTiedShown;
}
bool Issuable(const SponsorHistoryPageToken& t) {
  return t.app_code.size() <= kMaxAppCodeBytes && t.gift_filter.size() <= kMaxGiftIdBytes &&
         t.gift_id.size() <= kMaxGiftIdBytes && t.period_kind.size() <= 8 &&
         t.period_key.size() <= 10;
}
bool Issuable(const SentPageToken& t) {
  return t.app_code.size() <= kMaxAppCodeBytes && t.gift_id.size() <= kMaxGiftIdBytes &&
         t.after_gift.size() <= kMaxGiftIdBytes && t.period.size() <= 32;
}
bool Issuable(const DeadEventPageToken& t) {
  return t.app_code.size() <= kMaxAppCodeBytes && t.error_contains.size() <= kMaxLastErrorBytes &&
         t.event_id.size() <= kMaxEventIdBytes;
}

// The same FNV-1a as page_token.cc: a token's last 4 bytes, little-endian.
std::string WithChecksum(std::string body) {
  uint32_t hash = 2166136261u;
  for (unsigned char c : body) {
    hash ^= c;
    hash *= 16777619u;
  }
  for (int shift = 0; shift < 32; shift += 8) body.push_back(static_cast<char>(hash >> shift));
  return body;
}

template <typename Token>
void CheckRefused(const absl::StatusOr<Token>& decoded) {
  CHECK(decoded.status().code() == absl::StatusCode::kInvalidArgument) << decoded.status();
  CHECK(absl::StrContains(decoded.status().message(), "page_token")) << decoded.status();
}

// Decodes `token` for `request`. What decodes is for that request and re-encodes to `token`.
template <typename Token>
void CheckDecode(absl::string_view token, const Request& request) {
  const absl::StatusOr<Token> decoded = Decode<Token>(token, request);
  if (!decoded.ok()) {
    CheckRefused(decoded);
    return;
  }
  CHECK(IssuedFor(*decoded, request));
  const std::string again = Encode(*decoded);
  CHECK(again == token) << "decoded token re-encodes differently: " << token << " vs " << again;
}

// Encodes `token`: it decodes to the same values for its own request and is refused for another.
template <typename Token>
void CheckRoundTrip(const Token& token) {
  const std::string encoded = Encode(token);
  CHECK_EQ(absl::string_view(encoded).find_first_not_of(kBase64UrlAlphabet),
           absl::string_view::npos)
      << encoded;
  const Request own = RequestOf(token);
  const absl::StatusOr<Token> decoded = Decode<Token>(encoded, own);
  // A token the service could issue always decodes; one it never issues may be too long to.
  if (!decoded.ok()) {
    CHECK(!Issuable(token)) << decoded.status() << " for a token of " << encoded.size() << " chars";
    CheckRefused(decoded);
    return;
  }
  CHECK(Fields(*decoded) == Fields(token));

  Request other = own;
  other.app_code += "x";
  const absl::StatusOr<Token> refused = Decode<Token>(encoded, other);
  CHECK(!refused.ok());
  CheckRefused(refused);
  CHECK(absl::StrContains(refused.status().message(), "issued for another")) << refused.status();
}

void FuzzOne(FuzzedDataProvider& provider) {
  const auto type = provider.ConsumeEnum<TokenType>();
  const auto form = provider.ConsumeEnum<Form>();
  Request request;
  request.app_code = provider.ConsumeRandomLengthString(kMaxAppCodeBytes + 8);
  request.user_id = provider.ConsumeIntegral<int64_t>();
  request.sort =
      kAllWallSorts[provider.ConsumeIntegralInRange<size_t>(0, std::size(kAllWallSorts) - 1)];
  request.include_unlit = provider.ConsumeBool();
  request.gift_id = provider.ConsumeRandomLengthString(kMaxGiftIdBytes + 8);
  request.error_contains = provider.ConsumeRandomLengthString(kMaxLastErrorBytes + 8);
  request.period_kind = provider.ConsumeRandomLengthString(8);

  if (form == Form::kRoundTrip) {
    switch (type) {
      case TokenType::kGiftWall: {
        // The period ("" all-time) is any text: the token carries it, ContinuePeriod judges it.
        // A cursor among the unlit gifts only comes with include_unlit.
        const int64_t sort_value = provider.ConsumeIntegral<int64_t>();
        const bool unlit = request.include_unlit && provider.ConsumeBool();
        std::string period = provider.ConsumeRandomLengthString(32);
        CheckRoundTrip(GiftWallPageToken{request.sort, request.app_code, request.user_id,
                                         sort_value, provider.ConsumeRemainingBytesAsString(),
                                         std::move(period), request.include_unlit, unlit});
        return;
      }
      case TokenType::kSender: {
        SenderPageToken token{request.app_code, request.user_id, request.gift_id, SenderCursor{},
                              provider.ConsumeRandomLengthString(32)};
        token.cursor.sent_count = provider.ConsumeIntegral<int64_t>();
        token.cursor.last_sent_at_ms = provider.ConsumeIntegral<int64_t>();
        token.cursor.tied_shown = provider.ConsumeIntegral<int64_t>();
        CheckRoundTrip(token);
        return;
      }
      case TokenType::kDeadEvent:
        CheckRoundTrip(DeadEventPageToken{request.app_code, request.error_contains,
                                          provider.ConsumeRemainingBytesAsString()});
        return;
      case TokenType::kSponsorHistory: {
        std::string period_key = provider.ConsumeRandomLengthString(12);
        CheckRoundTrip(SponsorHistoryPageToken{
            request.app_code, request.user_id, request.period_kind, request.gift_id,
            std::move(period_key), provider.ConsumeRemainingBytesAsString()});
        return;
      }
      case TokenType::kSent: {
        const int64_t after_receiver = provider.ConsumeIntegral<int64_t>();
        std::string period = provider.ConsumeRandomLengthString(32);
        CheckRoundTrip(SentPageToken{request.app_code, request.user_id, request.gift_id,
                                     provider.ConsumeRemainingBytesAsString(), after_receiver,
                                     std::move(period)});
        return;
      }
    }
  }

  std::string token = provider.ConsumeRemainingBytesAsString();
  if (form == Form::kBody) token = absl::WebSafeBase64Escape(WithChecksum(std::move(token)));
  switch (type) {
    case TokenType::kGiftWall:
      CheckDecode<GiftWallPageToken>(token, request);
      return;
    case TokenType::kSender:
      CheckDecode<SenderPageToken>(token, request);
      return;
    case TokenType::kDeadEvent:
      CheckDecode<DeadEventPageToken>(token, request);
      return;
    case TokenType::kSponsorHistory:
      CheckDecode<SponsorHistoryPageToken>(token, request);
      return;
    case TokenType::kSent:
      CheckDecode<SentPageToken>(token, request);
      return;
  }
}

}  // namespace
}  // namespace giftwall::domain

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider provider(data, size);
  giftwall::domain::FuzzOne(provider);
  return 0;
}
