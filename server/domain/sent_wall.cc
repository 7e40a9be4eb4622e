#include "server/domain/sent_wall.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace giftwall::domain {
namespace {

bool AddChecked(int64_t* total, int64_t delta) {
  return !__builtin_add_overflow(*total, delta, total);
}

void Differs(std::vector<WallDifference>& out, const SentKey& key, absl::string_view field,
             int64_t expected, int64_t actual) {
  if (expected == actual) return;
  out.push_back({key.gift_id, key.sender_user_id, std::string(field), absl::StrCat(expected),
                 absl::StrCat(actual), kSentWallName});
}

void DiffRow(const SentKey& key, const SentRow& e, const SentRow& a,
             std::vector<WallDifference>& out) {
  Differs(out, key, "sent_count", e.sent_count, a.sent_count);
  Differs(out, key, "sent_coins", e.sent_coins, a.sent_coins);
  Differs(out, key, "receiver_count", e.receiver_count, a.receiver_count);
  Differs(out, key, "first_sent_at_ms", e.first_sent_at_ms, a.first_sent_at_ms);
  Differs(out, key, "last_sent_at_ms", e.last_sent_at_ms, a.last_sent_at_ms);
  Differs(out, key, "anonymous", e.anonymous, a.anonymous);
}

}  // namespace

absl::Status MergeSentRow(const SentRow& delta, SentRow* stored) {
  if (stored->sent_count == 0) {
    *stored = delta;
    return absl::OkStatus();
  }
  SentRow merged = *stored;
  if (!AddChecked(&merged.sent_count, delta.sent_count) ||
      !AddChecked(&merged.sent_coins, delta.sent_coins) ||
      !AddChecked(&merged.receiver_count, delta.receiver_count)) {
    return absl::OutOfRangeError("the sent gift's totals would overflow int64");
  }
  merged.first_sent_at_ms = std::min(merged.first_sent_at_ms, delta.first_sent_at_ms);
  merged.last_sent_at_ms = std::max(merged.last_sent_at_ms, delta.last_sent_at_ms);
  merged.anonymous = merged.anonymous || delta.anonymous;
  *stored = merged;
  return absl::OkStatus();
}

SentRow SentOf(const SenderRow& sender) {
  return SentRow{sender.sent_count,       sender.sent_coins,      1,
                 sender.first_sent_at_ms, sender.last_sent_at_ms, sender.anonymous};
}

absl::StatusOr<SentWall> SentDeltasOf(
    const WallDeltas& deltas, const std::map<WallKey, std::map<int64_t, SenderRow>>& merged) {
  SentWall sent;
  for (const auto& [key, delta] : deltas) {
    if (!key.period.empty() || delta.senders.empty()) continue;
    const std::map<int64_t, SenderRow>& after = merged.at(key);
    for (const auto& [sender, row] : delta.senders) {
      SentRow part = SentOf(row);
      part.receiver_count = after.at(sender).sent_count == row.sent_count ? 1 : 0;
      if (absl::Status s = MergeSentRow(part, &sent[SentKey{sender, key.gift_id}]); !s.ok()) {
        return s;
      }
    }
  }
  return sent;
}

std::vector<WallDifference> DiffSentWalls(const SentWall& expected, const SentWall& actual,
                                          int64_t* rows_compared) {
  std::vector<WallDifference> out;
  int64_t rows = 0;
  auto e = expected.begin(), a = actual.begin();
  while (e != expected.end() || a != actual.end()) {
    ++rows;
    if (a == actual.end() || (e != expected.end() && e->first < a->first)) {
      out.push_back(
          {e->first.gift_id, e->first.sender_user_id, "row", "present", "absent", kSentWallName});
      ++e;
    } else if (e == expected.end() || a->first < e->first) {
      out.push_back(
          {a->first.gift_id, a->first.sender_user_id, "row", "absent", "present", kSentWallName});
      ++a;
    } else {
      DiffRow(e->first, e->second, a->second, out);
      ++e;
      ++a;
    }
  }
  if (rows_compared != nullptr) *rows_compared = rows;
  return out;
}

SentView SentViewFor(const Viewer& viewer, int64_t sender_user_id, bool sender_opted_out) {
  if (viewer.sees_everyone || (viewer.user_id != 0 && viewer.user_id == sender_user_id)) {
    return SentView::kWhole;
  }
  return sender_opted_out ? SentView::kNothing : SentView::kInTheOpen;
}

bool Shows(SentView view, bool anonymous) {
  switch (view) {
    case SentView::kWhole:
      return true;
    case SentView::kInTheOpen:
      return !anonymous;
    case SentView::kNothing:
      return false;
  }
  return false;
}

}  // namespace giftwall::domain
