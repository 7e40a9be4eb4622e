#include "server/domain/sponsor.h"

#include <limits>

namespace giftwall::domain {

SenderStanding StandingOf(int64_t sender_user_id, const std::optional<SenderStats>& sent,
                          const std::optional<SenderStats>& sponsor,
                          std::optional<int64_t> senders_ahead) {
  SenderStanding standing;
  standing.sender = sent.value_or(SenderStats{});
  standing.sender.user_id = sender_user_id;
  standing.sponsor = sponsor;
  if (sponsor.has_value() && sponsor->user_id == sender_user_id) {
    standing.rank = 1;
    return standing;
  }
  const int64_t gap = (sponsor.has_value() ? sponsor->sent_count : 0) - standing.sender.sent_count;
  standing.needed_to_sponsor =
      gap == std::numeric_limits<int64_t>::max() ? gap : std::max<int64_t>(gap + 1, 1);
  if (sent.has_value() && senders_ahead.has_value()) {
    if (*senders_ahead >= kExactRankLimit) {
      standing.rank_beyond_limit = true;
    } else {
      standing.rank = *senders_ahead + 1;
    }
  }
  return standing;
}

}  // namespace giftwall::domain
