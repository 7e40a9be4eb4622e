#include "server/domain/wall_cap.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace giftwall::domain {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(WallCap, Rule14_NewGiftsUnderTheCapAreAllKept) {
  EXPECT_THAT(RefusedNewGifts(/*gifts_with_new=*/3, {"b", "a"}, /*cap=*/3), IsEmpty());
}

TEST(WallCap, Rule14_NewGiftsPastTheCapAreRefusedByGiftId) {
  // 998 gifts before, three new: room for two, the first two by gift_id.
  EXPECT_THAT(RefusedNewGifts(1001, {"rose", "car", "lion"}, 1000), ElementsAre("rose"));
}

TEST(WallCap, Rule14_AWallAlreadyAtOrPastTheCapTakesNoNewGift) {
  EXPECT_THAT(RefusedNewGifts(1001, {"x"}, 1000), ElementsAre("x"));
  // Over the cap already (a wall from before it, or concurrent groups): nothing new either.
  EXPECT_THAT(RefusedNewGifts(1205, {"x", "y"}, 1000), ElementsAre("x", "y"));
}

TEST(WallCap, Rule14_RebuildKeepsTheFirstGiftsToArrive) {
  UserWall wall;
  wall["late"].first_received_at_ms = 30;
  wall["early"].first_received_at_ms = 10;
  wall["tie-b"].first_received_at_ms = 20;
  wall["tie-a"].first_received_at_ms = 20;
  EXPECT_THAT(GiftsBeyondCap(wall, 2), ElementsAre("late", "tie-b"));
  EXPECT_THAT(GiftsBeyondCap(wall, 4), IsEmpty());
  EXPECT_THAT(GiftsBeyondCap(wall, 0).size(), 4);
}

TEST(WallCap, Rule14_TheReasonNamesTheCapAndWhatToDo) {
  const std::string reason = WallCapReason(7, 1000);
  EXPECT_THAT(reason, HasSubstr("user 7"));
  EXPECT_THAT(reason, HasSubstr("1000 distinct gifts"));
  EXPECT_THAT(reason, HasSubstr("--max_wall_gifts"));
  EXPECT_THAT(reason, HasSubstr("requeue"));
}

}  // namespace
}  // namespace giftwall::domain
