// The sent wall (DESIGN §2.19): per sender and gift, what the sender sent over every wall. It is
// the sum of the walls' sender rows of that sender and gift, kept beside them in the same
// transaction for the apps that keep it. The projection adds each group's part (SentDeltasOf);
// verify sums the sender rows again and compares (DiffSentWalls). Who may see which sent gift is
// decided here too (SentViewFor).
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

// A sent row's key within one app, ordered as its primary key (and its lock order) is.
struct SentKey {
  int64_t sender_user_id = 0;
  std::string gift_id;

  bool operator<(const SentKey& o) const {
    return std::tie(sender_user_id, gift_id) < std::tie(o.sender_user_id, o.gift_id);
  }
  bool operator==(const SentKey& o) const {
    return sender_user_id == o.sender_user_id && gift_id == o.gift_id;
  }
};

struct SentRow {
  int64_t sent_count = 0;
  int64_t sent_coins = 0;
  int64_t receiver_count = 0;  // walls with a sender row of this sender and gift
  int64_t first_sent_at_ms = 0;
  int64_t last_sent_at_ms = 0;
  // Any of these sends was anonymous: sticky, as a sender row's flag.
  bool anonymous = false;

  bool operator==(const SentRow& o) const {
    return std::tie(sent_count, sent_coins, receiver_count, first_sent_at_ms, last_sent_at_ms,
                    anonymous) == std::tie(o.sent_count, o.sent_coins, o.receiver_count,
                                           o.first_sent_at_ms, o.last_sent_at_ms, o.anonymous);
  }
};

using SentWall = std::map<SentKey, SentRow>;

// What a group's merge of all-time sender rows adds to the sent rows: each sender delta of
// `deltas` to its (sender, gift), a receiver more where its sender row is new (its row after the
// merge, in `merged`, holds exactly the delta). Period rows are not of the sent wall.
// OUT_OF_RANGE if a sum would overflow int64.
absl::StatusOr<SentWall> SentDeltasOf(
    const WallDeltas& deltas, const std::map<WallKey, std::map<int64_t, SenderRow>>& merged);

// Merges a delta into a stored sent row (absent: sent_count 0), as the merge statement does.
// OUT_OF_RANGE on overflow, `stored` unchanged.
absl::Status MergeSentRow(const SentRow& delta, SentRow* stored);

// The sent row one sender row makes on its own: one receiver.
SentRow SentOf(const SenderRow& sender);

// Every difference between the sent rows the sender rows make (`expected`) and those stored, as
// WallDifference with the sender as sender_user_id and period "sent". `rows_compared` (if not
// null) receives how many rows were looked at.
std::vector<WallDifference> DiffSentWalls(const SentWall& expected, const SentWall& actual,
                                          int64_t* rows_compared = nullptr);

// The period name a sent row's difference carries, to tell it from a wall's.
inline constexpr char kSentWallName[] = "sent";

// What a viewer sees of a sent wall.
enum class SentView {
  kWhole,      // every gift sent
  kInTheOpen,  // the gifts none of which was sent anonymously
  kNothing,
};

// What `viewer` sees of `sender_user_id`'s sent wall: the sender and a moderator the whole of it;
// anyone else only what was sent in the open, and nothing of a sender who opted out. A gift any
// of which was sent anonymously is hidden whole (the safe side, as a wall masks a sender who sent
// any of a gift anonymously): its open part would name the sender on walls that mask them.
SentView SentViewFor(const Viewer& viewer, int64_t sender_user_id, bool sender_opted_out);

// Whether a sent gift (or one receiver's part of it) shows in `view`.
bool Shows(SentView view, bool anonymous);

}  // namespace giftwall::domain

#endif  // GIFTWALL_SERVER_DOMAIN_SENT_WALL_H_
