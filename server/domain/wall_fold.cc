#include "server/domain/wall_fold.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "server/domain/merge_walk.h"

namespace giftwall::domain {
namespace {

bool AddChecked(int64_t* total, int64_t delta) {
  return !__builtin_add_overflow(*total, delta, total);
}

// One event as a delta of its own.
WallRow EventRow(const FoldEvent& e) {
  const GiftPayload& g = e.gift;
  WallRow row;
  row.gift_count = g.gift_count;
  row.total_coins = g.coin_amount;
  row.first_received_at_ms = row.last_received_at_ms = e.occurred_at_ms;
  if (!g.gift_name.empty()) {
    row.gift_name = g.gift_name;
    row.gift_name_at_ms = e.occurred_at_ms;
    row.gift_name_event_id = e.event_id;
  }
  if (!g.gift_icon.empty()) {
    row.gift_icon = g.gift_icon;
    row.gift_icon_at_ms = e.occurred_at_ms;
    row.gift_icon_event_id = e.event_id;
  }
  if (g.has_sender()) {
    row.first_sender_user_id = g.sender_user_id;
    row.first_sender_at_ms = e.occurred_at_ms;
    row.first_sender_event_id = e.event_id;
    const SenderRow sent{g.gift_count, g.coin_amount, e.occurred_at_ms, e.occurred_at_ms,
                         g.anonymous};
    row.senders.emplace(g.sender_user_id, sent);
    row.sender_count = 1;
    row.top_sender_user_id = g.sender_user_id;
    row.top_sender = sent;
  }
  return row;
}

// Takes a value stamped with the (time, event id) of the event it came from (a name, an icon) if
// it is later than the one held: the merge statement's rule, where an empty event id means "no
// value".
void TakeIfLater(const std::string& value, int64_t at, const std::string& event_id,
                 std::string* held, int64_t* held_at, std::string* held_event_id) {
  if (event_id.empty() || std::tie(at, event_id) <= std::tie(*held_at, *held_event_id)) return;
  *held = value;
  *held_at = at;
  *held_event_id = event_id;
}

}  // namespace

bool RanksAbove(int64_t a_user, const SenderRow& a, int64_t b_user, const SenderRow& b) {
  return std::make_tuple(-a.sent_count, a.last_sent_at_ms, a_user) <
         std::make_tuple(-b.sent_count, b.last_sent_at_ms, b_user);
}

absl::Status MergeSenderRow(const SenderRow& delta, SenderRow* stored) {
  if (stored->sent_count == 0) {
    *stored = delta;
    return absl::OkStatus();
  }
  SenderRow merged = *stored;
  if (!AddChecked(&merged.sent_count, delta.sent_count) ||
      !AddChecked(&merged.sent_coins, delta.sent_coins)) {
    return absl::OutOfRangeError("the sender's totals would overflow int64");
  }
  merged.first_sent_at_ms = std::min(merged.first_sent_at_ms, delta.first_sent_at_ms);
  merged.last_sent_at_ms = std::max(merged.last_sent_at_ms, delta.last_sent_at_ms);
  merged.anonymous = merged.anonymous || delta.anonymous;
  *stored = merged;
  return absl::OkStatus();
}

SenderMerge DescribeSenderMerge(const WallRow& delta, const std::map<int64_t, SenderRow>& merged) {
  SenderMerge out;
  for (const auto& [user, sent] : delta.senders) {
    const SenderRow& after = merged.at(user);
    if (after.sent_count == sent.sent_count) ++out.new_senders;
    if (out.best_user_id == 0 || RanksAbove(user, after, out.best_user_id, out.best)) {
      out.best_user_id = user;
      out.best = after;
    }
  }
  return out;
}

absl::Status MergeWallTotals(const WallRow& delta, const SenderMerge& senders, WallRow* stored) {
  WallRow merged;
  if (stored->empty()) {
    // A new row: the insert takes the delta's values as they are.
    merged = delta;
    merged.senders.clear();
    merged.sender_count = senders.new_senders;
    merged.top_sender_user_id = senders.best_user_id;
    merged.top_sender = senders.best;
  } else {
    merged = *stored;
    merged.senders.clear();
    if (!AddChecked(&merged.gift_count, delta.gift_count) ||
        !AddChecked(&merged.total_coins, delta.total_coins) ||
        !AddChecked(&merged.sender_count, senders.new_senders)) {
      return absl::OutOfRangeError("the gift's totals would overflow int64");
    }
    merged.first_received_at_ms = std::min(merged.first_received_at_ms, delta.first_received_at_ms);
    merged.last_received_at_ms = std::max(merged.last_received_at_ms, delta.last_received_at_ms);
    TakeIfLater(delta.gift_name, delta.gift_name_at_ms, delta.gift_name_event_id, &merged.gift_name,
                &merged.gift_name_at_ms, &merged.gift_name_event_id);
    TakeIfLater(delta.gift_icon, delta.gift_icon_at_ms, delta.gift_icon_event_id, &merged.gift_icon,
                &merged.gift_icon_at_ms, &merged.gift_icon_event_id);
    if (delta.first_sender_user_id > 0 &&
        (merged.first_sender_user_id == 0 ||
         std::tie(delta.first_sender_at_ms, delta.first_sender_event_id) <
             std::tie(merged.first_sender_at_ms, merged.first_sender_event_id))) {
      merged.first_sender_user_id = delta.first_sender_user_id;
      merged.first_sender_at_ms = delta.first_sender_at_ms;
      merged.first_sender_event_id = delta.first_sender_event_id;
    }
    if (RanksAbove(senders.best_user_id, senders.best, merged.top_sender_user_id,
                   merged.top_sender)) {
      merged.top_sender_user_id = senders.best_user_id;
      merged.top_sender = senders.best;
    }
  }
  merged.senders = std::move(stored->senders);
  *stored = std::move(merged);
  return absl::OkStatus();
}

absl::Status MergeWallRow(const WallRow& delta, WallRow* stored) {
  std::map<int64_t, SenderRow> merged;
  for (const auto& [user, sent] : delta.senders) {
    auto it = stored->senders.find(user);
    SenderRow row = it == stored->senders.end() ? SenderRow{} : it->second;
    if (absl::Status s = MergeSenderRow(sent, &row); !s.ok()) return s;
    merged.emplace(user, row);
  }
  if (absl::Status s = MergeWallTotals(delta, DescribeSenderMerge(delta, merged), stored);
      !s.ok()) {
    return s;
  }
  for (auto& [user, row] : merged) stored->senders[user] = row;
  return absl::OkStatus();
}

absl::StatusOr<WallDeltas> FoldDeltas(absl::Span<const FoldEvent> events) {
  WallDeltas deltas;
  for (const FoldEvent& e : events) {
    const WallRow row = EventRow(e);
    absl::Status s = MergeWallRow(row, &deltas[WallKey{e.gift.target_user_id, e.gift.gift_id}]);
    for (size_t i = 0; s.ok() && i < e.periods.size(); ++i) {
      s = MergeWallRow(row, &deltas[WallKey{e.gift.target_user_id, e.gift.gift_id, e.periods[i]}]);
    }
    if (!s.ok())
      return absl::OutOfRangeError(absl::StrCat("event ", e.event_id, ": ", s.message()));
  }
  return deltas;
}

absl::StatusOr<UserWall> FoldUserWall(absl::Span<const FoldEvent> events) {
  absl::StatusOr<WallDeltas> deltas = FoldDeltas(events);
  if (!deltas.ok()) return deltas.status();
  UserWall wall;
  for (auto& [key, row] : *deltas) {
    if (key.period.empty()) wall.emplace(key.gift_id, std::move(row));
  }
  return wall;
}

absl::StatusOr<std::map<std::string, UserWall>> FoldUserPeriodWalls(
    absl::Span<const FoldEvent> events) {
  absl::StatusOr<WallDeltas> deltas = FoldDeltas(events);
  if (!deltas.ok()) return deltas.status();
  std::map<std::string, UserWall> walls;
  for (auto& [key, row] : *deltas) {
    if (!key.period.empty()) walls[key.period].emplace(key.gift_id, std::move(row));
  }
  return walls;
}

namespace {

// Compares field by field; appends one difference per column that differs.
class RowDiff {
 public:
  RowDiff(std::vector<WallDifference>* out, absl::string_view gift_id, int64_t sender)
      : out_(out), gift_id_(gift_id), sender_(sender) {}
  template <typename T>
  void Field(absl::string_view name, const T& expected, const T& actual) {
    if (expected == actual) return;
    out_->push_back(WallDifference{std::string(gift_id_), sender_, std::string(name),
                                   absl::StrCat(expected), absl::StrCat(actual)});
  }

 private:
  std::vector<WallDifference>* out_;
  absl::string_view gift_id_;
  int64_t sender_;
};

void DiffSenders(const WallRow& expected, const WallRow& actual, absl::string_view gift_id,
                 std::vector<WallDifference>* out, int64_t* rows) {
  auto missing = [&](absl::string_view want, absl::string_view got) {
    return [=](const auto& sender) {
      out->push_back(
          {std::string(gift_id), sender.first, "row", std::string(want), std::string(got)});
    };
  };
  *rows +=
      MergeWalk(expected.senders, actual.senders, missing("present", "absent"),
                missing("absent", "present"), [&](const auto& e, const auto& a) {
                  RowDiff d(out, gift_id, e.first);
                  d.Field("sent_count", e.second.sent_count, a.second.sent_count);
                  d.Field("sent_coins", e.second.sent_coins, a.second.sent_coins);
                  d.Field("first_sent_at_ms", e.second.first_sent_at_ms, a.second.first_sent_at_ms);
                  d.Field("last_sent_at_ms", e.second.last_sent_at_ms, a.second.last_sent_at_ms);
                  d.Field("anonymous", int64_t{e.second.anonymous}, int64_t{a.second.anonymous});
                });
}

void DiffRow(const WallRow& e, const WallRow& a, absl::string_view gift_id,
             std::vector<WallDifference>* out) {
  RowDiff d(out, gift_id, 0);
  d.Field("gift_count", e.gift_count, a.gift_count);
  d.Field("total_coins", e.total_coins, a.total_coins);
  d.Field("first_received_at_ms", e.first_received_at_ms, a.first_received_at_ms);
  d.Field("last_received_at_ms", e.last_received_at_ms, a.last_received_at_ms);
  d.Field("gift_name", e.gift_name, a.gift_name);
  d.Field("gift_name_at_ms", e.gift_name_at_ms, a.gift_name_at_ms);
  d.Field("gift_name_event_id", e.gift_name_event_id, a.gift_name_event_id);
  d.Field("gift_icon", e.gift_icon, a.gift_icon);
  d.Field("gift_icon_at_ms", e.gift_icon_at_ms, a.gift_icon_at_ms);
  d.Field("gift_icon_event_id", e.gift_icon_event_id, a.gift_icon_event_id);
  d.Field("sender_count", e.sender_count, a.sender_count);
  d.Field("top_sender_user_id", e.top_sender_user_id, a.top_sender_user_id);
  d.Field("top_sender_count", e.top_sender.sent_count, a.top_sender.sent_count);
  d.Field("top_sender_coins", e.top_sender.sent_coins, a.top_sender.sent_coins);
  d.Field("top_sender_first_sent_at_ms", e.top_sender.first_sent_at_ms,
          a.top_sender.first_sent_at_ms);
  d.Field("top_sender_last_sent_at_ms", e.top_sender.last_sent_at_ms, a.top_sender.last_sent_at_ms);
  d.Field("first_sender_user_id", e.first_sender_user_id, a.first_sender_user_id);
  d.Field("first_sender_at_ms", e.first_sender_at_ms, a.first_sender_at_ms);
  d.Field("first_sender_event_id", e.first_sender_event_id, a.first_sender_event_id);
}

}  // namespace

std::vector<WallDifference> DiffUserWalls(const UserWall& expected, const UserWall& actual,
                                          int64_t* rows_compared) {
  std::vector<WallDifference> out;
  int64_t sender_rows = 0;
  auto missing = [&](absl::string_view want, absl::string_view got) {
    return [&out, &sender_rows, want, got](const auto& row) {
      out.push_back({row.first, 0, "row", std::string(want), std::string(got)});
      sender_rows += static_cast<int64_t>(row.second.senders.size());
    };
  };
  int64_t rows = MergeWalk(expected, actual, missing("present", "absent"),
                           missing("absent", "present"), [&](const auto& e, const auto& a) {
                             DiffRow(e.second, a.second, e.first, &out);
                             DiffSenders(e.second, a.second, e.first, &out, &sender_rows);
                           });
  if (rows_compared != nullptr) *rows_compared = rows + sender_rows;
  return out;
}

}  // namespace giftwall::domain
