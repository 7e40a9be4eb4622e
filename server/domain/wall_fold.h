// The fold of DESIGN §2.10 in memory: what one user's wall must hold, given the events that were
// projected into it. The storage layer folds incrementally in SQL; this computes the same rows
// from scratch, for verify and rebuild.
#ifndef GIFTWALL_SERVER_DOMAIN_WALL_FOLD_H_
#define GIFTWALL_SERVER_DOMAIN_WALL_FOLD_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "server/domain/gift_payload.h"

namespace giftwall::domain {

struct FoldEvent {
  std::string event_id;
  int64_t occurred_at_ms = 0;
  GiftPayload gift;
};

struct SenderRow {
  int64_t sent_count = 0;
  int64_t sent_coins = 0;
  int64_t first_sent_at_ms = 0;
  int64_t last_sent_at_ms = 0;

  bool operator==(const SenderRow& o) const {
    return sent_count == o.sent_count && sent_coins == o.sent_coins &&
           first_sent_at_ms == o.first_sent_at_ms && last_sent_at_ms == o.last_sent_at_ms;
  }
};

// One wall row, with the (time, event id) keys that decide its "latest" and "earliest" values.
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
};

// One user's wall, by gift_id.
using UserWall = std::map<std::string, WallRow>;

// Folds `events` (all for one user, each once, in any order). OUT_OF_RANGE if a sum would
// overflow int64: such an event could never have been projected.
absl::StatusOr<UserWall> FoldUserWall(absl::Span<const FoldEvent> events);

// One way two walls differ: a column of a wall row (sender_user_id 0) or of a sender row, or a
// row that one side lacks (field "row", value "present"/"absent").
struct WallDifference {
  std::string gift_id;
  int64_t sender_user_id = 0;
  std::string field;
  std::string expected;
  std::string actual;
};

// Every difference between what a wall should hold and what it holds. `rows_compared` (if not
// null) receives how many wall and sender rows were looked at.
std::vector<WallDifference> DiffUserWalls(const UserWall& expected, const UserWall& actual,
                                          int64_t* rows_compared = nullptr);

// Whether sender a ranks above sender b for the top sender: more sent; on a tie, who reached the
// count first (earlier last_sent_at_ms); then the lower user id.
bool RanksAbove(int64_t a_user, const SenderRow& a, int64_t b_user, const SenderRow& b);

}  // namespace giftwall::domain

#endif  // GIFTWALL_SERVER_DOMAIN_WALL_FOLD_H_
