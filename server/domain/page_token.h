// Page tokens: opaque keyset cursors. They carry no secret (any replica accepts any replica's
// token) but are bound to the request that issued them, and a checksum catches damage.
#ifndef GIFTWALL_SERVER_DOMAIN_PAGE_TOKEN_H_
#define GIFTWALL_SERVER_DOMAIN_PAGE_TOKEN_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace giftwall::domain {

// The orders a wall can be read in. Every one breaks ties by gift_id ascending. The numbers are
// written into page tokens: keep them.
enum class WallSort {
  kCountDesc = 0,
  kLastReceivedDesc = 1,
  kCoinsDesc = 2,
  kFirstReceivedAsc = 3,
  kCatalog = 4,  // catalogue order; gifts the catalogue lacks after, by gift_id
};
inline constexpr WallSort kAllWallSorts[] = {WallSort::kCountDesc, WallSort::kLastReceivedDesc,
                                             WallSort::kCoinsDesc, WallSort::kFirstReceivedAsc,
                                             WallSort::kCatalog};

// Where the next page of a wall starts: after the gift (sort_value, gift_id) of the lit gifts,
// or with `unlit`, after the unlit gift (catalogue sort_order, gift_id).
struct GiftWallPageToken {
  WallSort sort = WallSort::kCountDesc;
  std::string app_code;
  int64_t user_id = 0;
  int64_t sort_value = 0;
  std::string gift_id;
  // The period the page was read from ("month:2026-12"; "" all-time): see ContinuePeriod.
  std::string period;
  bool include_unlit = false;  // the request's
  bool unlit = false;          // the cursor is among the unlit gifts
};

std::string EncodeGiftWallPageToken(const GiftWallPageToken& token);

// Decodes `token` and checks that it was issued for (app_code, user_id, sort, include_unlit);
// its period is the caller's to check (ContinuePeriod). Anything else (a token that does not
// decode, a damaged one, another wall's or another sort's) is INVALID_ARGUMENT.
absl::StatusOr<GiftWallPageToken> DecodeGiftWallPageToken(absl::string_view token,
                                                          absl::string_view app_code,
                                                          int64_t user_id, WallSort sort,
                                                          bool include_unlit);

// Where a page of a gift's senders starts, in the top-sender order (sent_count descending, then
// last_sent_at_ms ascending, then sender_user_id ascending): at the senders of (sent_count,
// last_sent_at_ms), after the first `tied_shown` of them, which earlier pages showed. A cursor
// never names a sender: a page token carries it, and a masked sender's id must not be in one
// (DESIGN §2.18).
struct SenderCursor {
  int64_t sent_count = 0;
  int64_t last_sent_at_ms = 0;
  int64_t tied_shown = 0;
};

// The most senders of one (sent_count, last_sent_at_ms) a cursor may skip: the next page's
// statement reads that many index entries before its page, so a forged token must not name
// more. Senders tie so only within one millisecond; a tie past this pages no further.
inline constexpr int64_t kMaxTiedShown = 10'000;

// Where the next page of one gift's senders starts (a SenderCursor: no sender's id, so that a
// token never reveals a masked sender).
struct SenderPageToken {
  std::string app_code;
  int64_t user_id = 0;
  std::string gift_id;
  SenderCursor cursor;
  std::string period;  // as GiftWallPageToken's
};

std::string EncodeSenderPageToken(const SenderPageToken& token);

// Decodes `token` and checks that it was issued for (app_code, user_id, gift_id); its period is
// the caller's to check. A token of a server older than the viewer (which carried a sender's id)
// is INVALID_ARGUMENT, asking for the first page again.
absl::StatusOr<SenderPageToken> DecodeSenderPageToken(absl::string_view token,
                                                      absl::string_view app_code, int64_t user_id,
                                                      absl::string_view gift_id);

// Where the next page of a wall's 冠名 history starts: after the gift `gift_id` of the period
// `period_key`, newest period first and gifts ascending within one.
struct SponsorHistoryPageToken {
  std::string app_code;
  int64_t user_id = 0;
  std::string period_kind;  // "month"
  std::string gift_filter;  // the request's gift_id: "" for every gift
  std::string period_key;
  std::string gift_id;
};

std::string EncodeSponsorHistoryPageToken(const SponsorHistoryPageToken& token);

// Decodes `token` and checks that it was issued for (app_code, user_id, period_kind,
// gift_filter).
absl::StatusOr<SponsorHistoryPageToken> DecodeSponsorHistoryPageToken(
    absl::string_view token, absl::string_view app_code, int64_t user_id,
    absl::string_view period_kind, absl::string_view gift_filter);

// Where the next page of a sent wall (DESIGN §2.19) starts: after the gift `after_gift`
// (GetSentGifts, `gift_id` empty), or after the receiver `after_receiver` of the sent gift
// `gift_id` (ListSentGiftReceivers).
struct SentPageToken {
  std::string app_code;
  int64_t sender_user_id = 0;
  std::string gift_id;
  std::string after_gift;
  int64_t after_receiver = 0;
  std::string period;  // as GiftWallPageToken's
};

std::string EncodeSentPageToken(const SentPageToken& token);

// Decodes `token` and checks that it was issued for (app_code, sender_user_id, gift_id); its
// period is the caller's to check.
absl::StatusOr<SentPageToken> DecodeSentPageToken(absl::string_view token,
                                                  absl::string_view app_code,
                                                  int64_t sender_user_id,
                                                  absl::string_view gift_id);

// Where the next page of an app's gift catalogue starts: after this gift in catalogue order.
struct CatalogPageToken {
  std::string app_code;
  int64_t sort_order = 0;
  std::string gift_id;
};

std::string EncodeCatalogPageToken(const CatalogPageToken& token);

absl::StatusOr<CatalogPageToken> DecodeCatalogPageToken(absl::string_view token,
                                                        absl::string_view app_code);

// Where the next page of dead events starts: after this event id, for the same filter.
struct DeadEventPageToken {
  std::string app_code;
  std::string error_contains;
  std::string event_id;
};

std::string EncodeDeadEventPageToken(const DeadEventPageToken& token);

absl::StatusOr<DeadEventPageToken> DecodeDeadEventPageToken(absl::string_view token,
                                                            absl::string_view app_code,
                                                            absl::string_view error_contains);

}  // namespace giftwall::domain

#endif  // GIFTWALL_SERVER_DOMAIN_PAGE_TOKEN_H_
