#include "server/domain/sponsor.h"

#include <algorithm>
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

SenderCursor SenderCursorAfter(const std::optional<SenderCursor>& after,
                               absl::Span<const SenderStats> page) {
  const SenderStats& last = page.back();
  SenderCursor next{last.sent_count, last.last_sent_at_ms, 0};
  for (const SenderStats& sender : page) {
    if (sender.sent_count == last.sent_count && sender.last_sent_at_ms == last.last_sent_at_ms) {
      ++next.tied_shown;
    }
  }
  // The page may be all of one tie that began on an earlier page.
  if (after.has_value() && after->sent_count == next.sent_count &&
      after->last_sent_at_ms == next.last_sent_at_ms) {
    next.tied_shown += after->tied_shown;
  }
  next.tied_shown = std::min(next.tied_shown, kMaxTiedShown);
  return next;
}

}  // namespace giftwall::domain
