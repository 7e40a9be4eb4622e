// The fold of DESIGN §2.10: the one place the wall's rules live. Events fold into per-row deltas
// (per (user, gift), with per-sender rows), and a delta merges into a stored row. The projection
// folds a group of events into deltas here and has SQL merge them (the merge statements mirror
// MergeWallRow); verify and rebuild fold a user's events from scratch with the same code.
#ifndef GIFTWALL_SERVER_DOMAIN_WALL_FOLD_H_
#define GIFTWALL_SERVER_DOMAIN_WALL_FOLD_H_

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "server/domain/gift_payload.h"

namespace giftwall::domain {

struct FoldEvent {
  std::string event_id;
  int64_t occurred_at_ms = 0;
  GiftPayload gift;
  // The periods the event is also folded into, besides the all-time wall (Period::Name(),
  // "month:2026-12"; DESIGN §2.15).
  std::vector<std::string> periods = {};
};

struct SenderRow {
  int64_t sent_count = 0;
  int64_t sent_coins = 0;
  int64_t first_sent_at_ms = 0;
  int64_t last_sent_at_ms = 0;
  // Any of the sender's events of this gift to this wall was anonymous (神秘人): sticky. A wall
  // row's top_sender does not store it (its sender row does).
  bool anonymous = false;

  bool operator==(const SenderRow& o) const {
    return sent_count == o.sent_count && sent_coins == o.sent_coins &&
           first_sent_at_ms == o.first_sent_at_ms && last_sent_at_ms == o.last_sent_at_ms &&
           anonymous == o.anonymous;
  }
};

// One wall row, with the (time, event id) keys that decide its "latest" and "earliest" values.
// A row whose gift_count is 0 is absent: every folded event adds at least 1.
struct WallRow {
  int64_t gift_count = 0;
  int64_t total_coins = 0;
  int64_t first_received_at_ms = 0;
  int64_t last_received_at_ms = 0;
  std::string gift_name;
  int64_t gift_name_at_ms = 0;
  std::string gift_name_event_id;
  std::string gift_icon;
  int64_t gift_icon_at_ms = 0;
  std::string gift_icon_event_id;
  int64_t sender_count = 0;
  int64_t top_sender_user_id = 0;
  SenderRow top_sender;
  int64_t first_sender_user_id = 0;
  int64_t first_sender_at_ms = 0;
  std::string first_sender_event_id;
  std::map<int64_t, SenderRow> senders;  // by sender_user_id

  bool empty() const { return gift_count == 0; }
};

// One user's wall, by gift_id.
using UserWall = std::map<std::string, WallRow>;

// A wall row's key within one app: all-time (no period), or of one period ("month:2026-12").
// Ordered as the rows' primary keys are, (user, period, gift) within each table.
struct WallKey {
  int64_t user_id = 0;
  std::string gift_id;
  std::string period = {};

  bool operator<(const WallKey& o) const {
    return std::tie(user_id, period, gift_id) < std::tie(o.user_id, o.period, o.gift_id);
  }
  bool operator==(const WallKey& o) const {
    return user_id == o.user_id && gift_id == o.gift_id && period == o.period;
  }
};

// What a group of events adds to each wall row it touches: the fold of those events alone,
// senders included. Sorted by key, the order in which rows are locked.
using WallDeltas = std::map<WallKey, WallRow>;

// Folds `events` (each once, in any order, of any users) into per-row deltas, all-time and of
// each event's periods. OUT_OF_RANGE if a sum would overflow int64.
absl::StatusOr<WallDeltas> FoldDeltas(absl::Span<const FoldEvent> events);

// Folds one user's events from scratch: the rows the all-time wall must hold. OUT_OF_RANGE if a
// sum would overflow int64: such an event could never have been projected.
absl::StatusOr<UserWall> FoldUserWall(absl::Span<const FoldEvent> events);

// The same for the user's period walls, by period name: the rows each must hold.
absl::StatusOr<std::map<std::string, UserWall>> FoldUserPeriodWalls(
    absl::Span<const FoldEvent> events);

// Whether sender a ranks above sender b for the top sender: more sent; on a tie, who reached the
// count first (earlier last_sent_at_ms); then the lower user id.
bool RanksAbove(int64_t a_user, const SenderRow& a, int64_t b_user, const SenderRow& b);

// Merges one sender's delta into its stored row (absent: sent_count 0). OUT_OF_RANGE on overflow.
absl::Status MergeSenderRow(const SenderRow& delta, SenderRow* stored);

// What merging a delta's senders did to one wall row's senders: how many were new to the gift,
// and the best of them after the merge (the candidate for top sender; user 0 if the delta had no
// sender).
struct SenderMerge {
  int64_t new_senders = 0;
  int64_t best_user_id = 0;
  SenderRow best;
};

// Describes the merge of `delta`'s senders given their rows after it (`merged`, by sender, which
// must hold every sender of the delta). A sender is new exactly when its merged count is the
// delta's: a stored sender row has sent at least one gift.
SenderMerge DescribeSenderMerge(const WallRow& delta, const std::map<int64_t, SenderRow>& merged);

// Merges the totals of `delta` into `stored` (absent if empty()) as the database's merge
// statement does: counts and coins add up; first/last received take LEAST/GREATEST; name and icon
// come from the latest (time, event id) that carried one; the first sender from the earliest; the
// sender count grows by `senders.new_senders`, and the top sender is the better of the stored one
// and `senders.best`. Leaves stored->senders alone. OUT_OF_RANGE on overflow, `stored` unchanged.
absl::Status MergeWallTotals(const WallRow& delta, const SenderMerge& senders, WallRow* stored);

// MergeWallTotals with the senders merged too: what a row holds after a delta's events.
absl::Status MergeWallRow(const WallRow& delta, WallRow* stored);

// One way two walls differ: a column of a wall row (sender_user_id 0) or of a sender row, or a
// row that one side lacks (field "row", value "present"/"absent").
struct WallDifference {
  std::string gift_id;
  int64_t sender_user_id = 0;
  std::string field;
  std::string expected;
  std::string actual;
  std::string period = {};  // "" the all-time wall; "month:2026-12"
};

// Every difference between what a wall should hold and what it holds. `rows_compared` (if not
// null) receives how many wall and sender rows were looked at.
std::vector<WallDifference> DiffUserWalls(const UserWall& expected, const UserWall& actual,
                                          int64_t* rows_compared = nullptr);

}  // namespace giftwall::domain

#endif  // GIFTWALL_SERVER_DOMAIN_WALL_FOLD_H_
