#include "server/domain/wall_fold.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace giftwall::domain {
namespace {

bool AddChecked(int64_t* total, int64_t delta) {
  return !__builtin_add_overflow(*total, delta, total);
}

}  // namespace

bool RanksAbove(int64_t a_user, const SenderRow& a, int64_t b_user, const SenderRow& b) {
  return std::make_tuple(-a.sent_count, a.last_sent_at_ms, a_user) <
         std::make_tuple(-b.sent_count, b.last_sent_at_ms, b_user);
}

absl::StatusOr<UserWall> FoldUserWall(absl::Span<const FoldEvent> events) {
  UserWall wall;
  for (const FoldEvent& e : events) {
    const GiftPayload& g = e.gift;
    auto [it, fresh] = wall.try_emplace(g.gift_id);
    WallRow& row = it->second;
    if (!AddChecked(&row.gift_count, g.gift_count) ||
        !AddChecked(&row.total_coins, g.coin_amount)) {
      return absl::OutOfRangeError(
          absl::StrCat("event ", e.event_id, ": the gift's totals overflow int64"));
    }
    row.first_received_at_ms =
        fresh ? e.occurred_at_ms : std::min(row.first_received_at_ms, e.occurred_at_ms);
    row.last_received_at_ms = std::max(row.last_received_at_ms, e.occurred_at_ms);
    const auto key = std::tie(e.occurred_at_ms, e.event_id);
    if (!g.gift_name.empty() && (row.gift_name_event_id.empty() ||
                                 key > std::tie(row.gift_name_at_ms, row.gift_name_event_id))) {
      row.gift_name = g.gift_name;
      row.gift_name_at_ms = e.occurred_at_ms;
      row.gift_name_event_id = e.event_id;
    }
    if (!g.gift_icon.empty() && (row.gift_icon_event_id.empty() ||
                                 key > std::tie(row.gift_icon_at_ms, row.gift_icon_event_id))) {
      row.gift_icon = g.gift_icon;
      row.gift_icon_at_ms = e.occurred_at_ms;
      row.gift_icon_event_id = e.event_id;
    }
    if (!g.has_sender()) continue;
    if (row.first_sender_user_id == 0 ||
        key < std::tie(row.first_sender_at_ms, row.first_sender_event_id)) {
      row.first_sender_user_id = g.sender_user_id;
      row.first_sender_at_ms = e.occurred_at_ms;
      row.first_sender_event_id = e.event_id;
    }
    auto [sender_it, new_sender] = row.senders.try_emplace(g.sender_user_id);
    SenderRow& s = sender_it->second;
    if (!AddChecked(&s.sent_count, g.gift_count) || !AddChecked(&s.sent_coins, g.coin_amount)) {
      return absl::OutOfRangeError(
          absl::StrCat("event ", e.event_id, ": the sender's totals overflow int64"));
    }
    s.first_sent_at_ms =
        new_sender ? e.occurred_at_ms : std::min(s.first_sent_at_ms, e.occurred_at_ms);
    s.last_sent_at_ms = std::max(s.last_sent_at_ms, e.occurred_at_ms);
  }
  for (auto& [gift_id, row] : wall) {
    row.sender_count = static_cast<int64_t>(row.senders.size());
    for (const auto& [user, stats] : row.senders) {
      if (row.top_sender_user_id == 0 ||
          RanksAbove(user, stats, row.top_sender_user_id, row.top_sender)) {
        row.top_sender_user_id = user;
        row.top_sender = stats;
      }
    }
  }
  return wall;
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
  auto e = expected.senders.begin(), a = actual.senders.begin();
  while (e != expected.senders.end() || a != actual.senders.end()) {
    ++*rows;
    if (a == actual.senders.end() || (e != expected.senders.end() && e->first < a->first)) {
      out->push_back({std::string(gift_id), e->first, "row", "present", "absent"});
      ++e;
    } else if (e == expected.senders.end() || a->first < e->first) {
      out->push_back({std::string(gift_id), a->first, "row", "absent", "present"});
      ++a;
    } else {
      RowDiff d(out, gift_id, e->first);
      d.Field("sent_count", e->second.sent_count, a->second.sent_count);
      d.Field("sent_coins", e->second.sent_coins, a->second.sent_coins);
      d.Field("first_sent_at_ms", e->second.first_sent_at_ms, a->second.first_sent_at_ms);
      d.Field("last_sent_at_ms", e->second.last_sent_at_ms, a->second.last_sent_at_ms);
      ++e;
      ++a;
    }
  }
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
  int64_t rows = 0;
  auto e = expected.begin(), a = actual.begin();
  while (e != expected.end() || a != actual.end()) {
    ++rows;
    if (a == actual.end() || (e != expected.end() && e->first < a->first)) {
      out.push_back({e->first, 0, "row", "present", "absent"});
      rows += static_cast<int64_t>(e->second.senders.size());
      ++e;
    } else if (e == expected.end() || a->first < e->first) {
      out.push_back({a->first, 0, "row", "absent", "present"});
      rows += static_cast<int64_t>(a->second.senders.size());
      ++a;
    } else {
      DiffRow(e->second, a->second, e->first, &out);
      DiffSenders(e->second, a->second, e->first, &out, &rows);
      ++e;
      ++a;
    }
  }
  if (rows_compared != nullptr) *rows_compared = rows;
  return out;
}

}  // namespace giftwall::domain
