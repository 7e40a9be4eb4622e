// The bound on one wall (DESIGN §2.14): at most --max_wall_gifts distinct gifts. A gift new to a
// wall that already holds the cap goes dead with a reason naming the cap, and can be requeued
// once the cap is raised; gifts already on the wall always project.
#ifndef GIFTWALL_SERVER_DOMAIN_WALL_CAP_H_
#define GIFTWALL_SERVER_DOMAIN_WALL_CAP_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "server/domain/wall_fold.h"

namespace giftwall::domain {

// Real catalogues hold hundreds of gifts.
inline constexpr int64_t kDefaultMaxWallGifts = 1000;

// The gifts of `new_gifts` (new to one wall) that the cap refuses, when the wall holds
// `gifts_with_new` distinct gifts once they are added: the first of them by gift_id that fit
// under `cap` are kept, the rest refused.
std::set<std::string> RefusedNewGifts(int64_t gifts_with_new, std::vector<std::string> new_gifts,
                                      int64_t cap);

// The gifts of a wall recomputed from its events that lie beyond the cap: the first `cap` gifts
// to arrive (first_received_at_ms, then gift_id) are kept, as live projection would have.
std::set<std::string> GiftsBeyondCap(const UserWall& wall, int64_t cap);

// The reason an event whose gift the cap refuses dies with.
std::string WallCapReason(int64_t user_id, int64_t cap);

}  // namespace giftwall::domain

#endif  // GIFTWALL_SERVER_DOMAIN_WALL_CAP_H_
