#include "server/domain/sent_wall.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "server/domain/merge_walk.h"

namespace giftwall::domain {
namespace {

bool AddChecked(int64_t* total, int64_t delta) {
  return !__builtin_add_overflow(*total, delta, total);
}

void Differs(std::vector<WallDifference>& out, const SentKey& key, absl::string_view field,
             int64_t expected, int64_t actual) {
  if (expected == actual) return;
  out.push_back({key.gift_id, key.sender_user_id, std::string(field), absl::StrCat(expected),
                 absl::StrCat(actual), SentWallName(key.period)});
}

void DiffTotals(const SentKey& key, absl::string_view prefix, const SentTotals& e,
                const SentTotals& a, std::vector<WallDifference>& out) {
  Differs(out, key, absl::StrCat(prefix, "sent_count"), e.sent_count, a.sent_count);
  Differs(out, key, absl::StrCat(prefix, "sent_coins"), e.sent_coins, a.sent_coins);
  Differs(out, key, absl::StrCat(prefix, "receiver_count"), e.receiver_count, a.receiver_count);
  Differs(out, key, absl::StrCat(prefix, "first_sent_at_ms"), e.first_sent_at_ms,
          a.first_sent_at_ms);
  Differs(out, key, absl::StrCat(prefix, "last_sent_at_ms"), e.last_sent_at_ms, a.last_sent_at_ms);
}

const SentTotals kNone;

}  // namespace

std::string SentWallName(const std::string& period) {
  return period.empty() ? "sent" : absl::StrCat("sent ", period);
}

absl::Status AddSent(const SentTotals& delta, SentTotals* total) {
  if (delta.empty()) return absl::OkStatus();
  if (total->empty()) {
    *total = delta;
    return absl::OkStatus();
  }
  SentTotals sum = *total;
  if (!AddChecked(&sum.sent_count, delta.sent_count) ||
      !AddChecked(&sum.sent_coins, delta.sent_coins) ||
      !AddChecked(&sum.receiver_count, delta.receiver_count)) {
    return absl::OutOfRangeError("the sent gift's totals would overflow int64");
  }
  sum.first_sent_at_ms = std::min(sum.first_sent_at_ms, delta.first_sent_at_ms);
  sum.last_sent_at_ms = std::max(sum.last_sent_at_ms, delta.last_sent_at_ms);
  *total = sum;
  return absl::OkStatus();
}

absl::Status MergeSentRow(const SentRow& delta, SentRow* stored) {
  SentRow merged = *stored;
  if (absl::Status s = AddSent(delta.all, &merged.all); !s.ok()) return s;
  if (absl::Status s = AddSent(delta.open, &merged.open); !s.ok()) return s;
  merged.anonymous = merged.anonymous || delta.anonymous;
  *stored = merged;
  return absl::OkStatus();
}

SentRow SentOf(const SenderRow& sender) {
  SentRow row;
  row.all = SentTotals{sender.sent_count, sender.sent_coins, 1, sender.first_sent_at_ms,
                       sender.last_sent_at_ms};
  if (!sender.anonymous) row.open = row.all;
  row.anonymous = sender.anonymous;
  return row;
}

absl::StatusOr<SentDeltas> SentDeltasOf(
    const WallDeltas& deltas, const std::map<WallKey, std::map<int64_t, SenderRow>>& merged) {
  SentDeltas out;
  std::set<SentKey> recount;
  for (const auto& [key, delta] : deltas) {
    if (delta.senders.empty()) continue;
    const std::map<int64_t, SenderRow>& after_merge = merged.at(key);
    for (const auto& [sender, row] : delta.senders) {
      const SenderRow& after = after_merge.at(sender);
      const bool fresh = after.sent_count == row.sent_count;
      SentRow part;
      part.all = SentTotals{row.sent_count, row.sent_coins, fresh ? 1 : 0, row.first_sent_at_ms,
                            row.last_sent_at_ms};
      part.anonymous = row.anonymous;
      SentKey sent_key{sender, key.gift_id, key.period};
      // A period's open part is not kept: whether a wall shows a sender is decided by their
      // all-time sender row (§2.18), which a period's sends alone do not say.
      if (key.period.empty()) {
        if (!after.anonymous) {
          part.open = part.all;  // open before too: the flag is sticky
        } else if (!fresh && row.anonymous) {
          recount.insert(sent_key);  // was it open until this send? the sum will say
        }
      }
      if (absl::Status s = MergeSentRow(part, &out.rows[sent_key]); !s.ok()) return s;
    }
  }
  out.recount_open.assign(recount.begin(), recount.end());
  return out;
}

std::vector<WallDifference> DiffSentWalls(const SentWall& expected, const SentWall& actual,
                                          int64_t* rows_compared) {
  std::vector<WallDifference> out;
  auto missing = [&out](absl::string_view want, absl::string_view got) {
    return [&out, want, got](const auto& row) {
      out.push_back({row.first.gift_id, row.first.sender_user_id, "row", std::string(want),
                     std::string(got), SentWallName(row.first.period)});
    };
  };
  int64_t rows =
      MergeWalk(expected, actual, missing("present", "absent"), missing("absent", "present"),
                [&out](const auto& e, const auto& a) {
                  DiffTotals(e.first, "", e.second.all, a.second.all, out);
                  DiffTotals(e.first, "open_", e.second.open, a.second.open, out);
                  Differs(out, e.first, "anonymous", e.second.anonymous, a.second.anonymous);
                });
  if (rows_compared != nullptr) *rows_compared = rows;
  return out;
}

SentView SentViewFor(const Viewer& viewer, int64_t sender_user_id, bool sender_opted_out) {
  if (viewer.sees_everyone || (viewer.user_id != 0 && viewer.user_id == sender_user_id)) {
    return SentView::kWhole;
  }
  return sender_opted_out ? SentView::kNothing : SentView::kInTheOpen;
}

const SentTotals& ShownOf(SentView view, const SentRow& row) {
  switch (view) {
    case SentView::kWhole:
      return row.all;
    case SentView::kInTheOpen:
      return row.open;
    case SentView::kNothing:
      return kNone;
  }
  return kNone;
}

}  // namespace giftwall::domain
