#include "server/domain/wall_cap.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/str_cat.h"

namespace giftwall::domain {

std::set<std::string> RefusedNewGifts(int64_t gifts_with_new, std::vector<std::string> new_gifts,
                                      int64_t cap) {
  std::sort(new_gifts.begin(), new_gifts.end());
  const int64_t before = gifts_with_new - static_cast<int64_t>(new_gifts.size());
  const int64_t room = std::max<int64_t>(0, cap - before);
  std::set<std::string> refused;
  for (size_t i = static_cast<size_t>(std::min<int64_t>(room, new_gifts.size()));
       i < new_gifts.size(); ++i) {
    refused.insert(std::move(new_gifts[i]));
  }
  return refused;
}

std::set<std::string> GiftsBeyondCap(const UserWall& wall, int64_t cap) {
  std::vector<std::pair<int64_t, const std::string*>> arrival;
  arrival.reserve(wall.size());
  for (const auto& [gift_id, row] : wall) arrival.emplace_back(row.first_received_at_ms, &gift_id);
  std::sort(arrival.begin(), arrival.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first, *a.second) < std::tie(b.first, *b.second);
  });
  std::set<std::string> beyond;
  for (size_t i = static_cast<size_t>(std::max<int64_t>(cap, 0)); i < arrival.size(); ++i) {
    beyond.insert(*arrival[i].second);
  }
  return beyond;
}

std::string WallCapReason(int64_t user_id, int64_t cap) {
  return absl::StrCat("the wall of user ", user_id, " already holds ", cap,
                      " distinct gifts, the most --max_wall_gifts allows: this gift is not "
                      "added (raise the cap, then requeue this event)");
}

}  // namespace giftwall::domain
