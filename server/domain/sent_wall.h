// The sent wall (DESIGN §2.19): per sender and gift (all-time and per period), what the sender
// sent over every wall, and the open part of it. It is the sum of the walls' sender rows of that
// sender and gift, kept beside them in the same transaction for the apps that keep it. The
// projection adds each group's part (SentDeltasOf); verify sums the sender rows again and compares
// (DiffSentWalls). Who may see which sent gift is decided here too (SentViewFor).
#ifndef GIFTWALL_SERVER_DOMAIN_SENT_WALL_H_
#define GIFTWALL_SERVER_DOMAIN_SENT_WALL_H_

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "server/domain/viewer.h"
#include "server/domain/wall_fold.h"

namespace giftwall::domain {

// A sent row's key within one app: all-time (no period) or of one period ("month:2026-12").
// Ordered as its primary key (and its lock order) is: (sender, period, gift).
struct SentKey {
  int64_t sender_user_id = 0;
  std::string gift_id;
  std::string period = {};

  bool operator<(const SentKey& o) const {
    return std::tie(sender_user_id, period, gift_id) <
           std::tie(o.sender_user_id, o.period, o.gift_id);
  }
  bool operator==(const SentKey& o) const {
    return sender_user_id == o.sender_user_id && gift_id == o.gift_id && period == o.period;
  }
};

// What some sends of one gift sum to. Empty (sent_count 0): none; its times are then 0.
struct SentTotals {
  int64_t sent_count = 0;
  int64_t sent_coins = 0;
  int64_t receiver_count = 0;  // walls with a sender row of this sender and gift
  int64_t first_sent_at_ms = 0;
  int64_t last_sent_at_ms = 0;

  bool empty() const { return sent_count == 0; }
  bool operator==(const SentTotals& o) const {
    return std::tie(sent_count, sent_coins, receiver_count, first_sent_at_ms, last_sent_at_ms) ==
           std::tie(o.sent_count, o.sent_coins, o.receiver_count, o.first_sent_at_ms,
                    o.last_sent_at_ms);
  }
};

// One sent row: everything the sender sent of the gift (in the period), and, for an all-time row,
// its open part: what went to the walls where the sender is shown, whose sender row is not
// anonymous (§2.17), which those walls show anyone anyway. A period's open part is left empty:
// whether a wall shows a sender is decided by the all-time sender row (§2.18), so it is summed
// when read (storage::SentWallRepository::ListOpenSent).
struct SentRow {
  SentTotals all;
  SentTotals open;
  bool anonymous = false;  // any of these sends was anonymous: sticky, as a sender row's flag

  bool operator==(const SentRow& o) const {
    return all == o.all && open == o.open && anonymous == o.anonymous;
  }
};

using SentWall = std::map<SentKey, SentRow>;

// What a group adds to the sent rows.
struct SentDeltas {
  SentWall rows;
  // Rows whose open part is to be summed again from their sender rows once `rows` are merged:
  // a sender row of theirs that existed took an anonymous send, and may no longer be open. In
  // key order.
  std::vector<SentKey> recount_open;
};

// What a group's merge of sender rows adds to the sent rows: each sender delta of `deltas` to its
// (sender, period, gift), a receiver more where its sender row is new (its row after the merge,
// in `merged`, holds exactly the delta), and, to an all-time row, the same to the open part
// where that sender row is not anonymous after the merge. OUT_OF_RANGE if a sum would overflow
// int64.
absl::StatusOr<SentDeltas> SentDeltasOf(
    const WallDeltas& deltas, const std::map<WallKey, std::map<int64_t, SenderRow>>& merged);

// Adds `delta` to `total` as the merge statement does: counts, coins and receivers add up, first
// and last take the least and greatest of the non-empty ones. OUT_OF_RANGE on overflow, `total`
// unchanged.
absl::Status AddSent(const SentTotals& delta, SentTotals* total);

// Merges a delta into a stored sent row (absent: empty), as the merge statement does.
// OUT_OF_RANGE on overflow, `stored` unchanged.
absl::Status MergeSentRow(const SentRow& delta, SentRow* stored);

// The sent row one all-time sender row makes on its own: one receiver, open unless it is
// anonymous.
SentRow SentOf(const SenderRow& sender);

// Every difference between the sent rows the sender rows make (`expected`) and those stored, as
// WallDifference with the sender as sender_user_id and, as period, SentWallName of the row's
// (the open part's columns are "open_sent_count" and so on). `rows_compared` (if not null)
// receives how many rows were looked at.
std::vector<WallDifference> DiffSentWalls(const SentWall& expected, const SentWall& actual,
                                          int64_t* rows_compared = nullptr);

// What a sent row's difference names as its period, to tell it from a wall's: "sent" for the
// all-time sent wall, "sent month:2026-12" for one period's.
std::string SentWallName(const std::string& period);

// What a viewer sees of a sent wall.
enum class SentView {
  kWhole,      // all of each gift
  kInTheOpen,  // each gift's open part
  kNothing,
};

// What `viewer` sees of `sender_user_id`'s sent wall: the sender and a moderator all of it;
// anyone else each gift's open part (what the walls show of the sender anyway, so nothing of the
// sends to walls where the sender is masked), and nothing of a sender who opted out.
SentView SentViewFor(const Viewer& viewer, int64_t sender_user_id, bool sender_opted_out);

// What `view` shows of a sent row: all of it, its open part, or nothing (empty).
const SentTotals& ShownOf(SentView view, const SentRow& row);

}  // namespace giftwall::domain

#endif  // GIFTWALL_SERVER_DOMAIN_SENT_WALL_H_
