// How far a sender is from 冠名 of one gift on one wall (GetSenderStanding): pure, from what the
// sender and the 冠名 sent and how many senders rank ahead.
#ifndef GIFTWALL_SERVER_DOMAIN_SPONSOR_H_
#define GIFTWALL_SERVER_DOMAIN_SPONSOR_H_

#include <cstdint>
#include <optional>

#include "absl/types/span.h"
#include "server/domain/wall_page.h"

namespace giftwall::domain {

// A rank is exact up to this; past it the answer says only "more than 1,000", so that finding a
// rank reads at most this many index entries.
inline constexpr int64_t kExactRankLimit = 1000;

struct SenderStanding {
  SenderStats sender;                  // all zero but user_id if the sender sent none
  std::optional<SenderStats> sponsor;  // none while the gift has no sender
  int64_t needed_to_sponsor = 0;
  int64_t rank = 0;  // 1 is 冠名; 0 if the sender sent none or ranks beyond kExactRankLimit
  bool rank_beyond_limit = false;
};

// Where the page after `page` starts, `page` having started at `after` (none: the first page).
// `page` is not empty.
SenderCursor SenderCursorAfter(const std::optional<SenderCursor>& after,
                               absl::Span<const SenderStats> page);

// `sent`: what the sender sent, none if nothing. `sponsor`: the gift's 冠名. `senders_ahead`:
// how many senders rank above the sender (read with a limit of kExactRankLimit), none if the
// sender sent none or is the 冠名 (nothing to read).
//
// A sender who is not 冠名 needs the 冠名's count plus one: a tie goes to whoever reached the
// count first (DESIGN §2.10), and the sender's next gift comes after the 冠名 reached theirs.
SenderStanding StandingOf(int64_t sender_user_id, const std::optional<SenderStats>& sent,
                          const std::optional<SenderStats>& sponsor,
                          std::optional<int64_t> senders_ahead);

}  // namespace giftwall::domain

#endif  // GIFTWALL_SERVER_DOMAIN_SPONSOR_H_
