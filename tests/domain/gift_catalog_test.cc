#include "server/domain/gift_catalog.h"

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace giftwall::domain {
namespace {

using ::testing::HasSubstr;

CatalogItemInput Item(const std::string& gift_id) {
  CatalogItemInput item;
  item.gift_id = gift_id;
  item.name = "Rose";
  item.icon = "https://cdn/rose.png";
  item.unlit_icon = "https://cdn/rose-grey.png";
  item.price_coins = 10;
  item.series = "flowers";
  item.tier = "common";
  item.sort_order = 3;
  return item;
}

TEST(GiftCatalog, Rule16_ItemsAreCheckedAndGiftIdsTrimmedAsPayloadsAre) {
  std::vector<CatalogItemInput> items = {Item(" rose "), Item("crown")};
  items[1].status = "retired";
  absl::StatusOr<std::vector<CatalogGift>> gifts = CheckCatalogItems(items);
  ASSERT_TRUE(gifts.ok()) << gifts.status();
  ASSERT_EQ(gifts->size(), 2u);
  EXPECT_EQ((*gifts)[0].gift_id, "rose");
  EXPECT_EQ((*gifts)[0].status, GiftStatus::kOnSale) << "an empty status is on sale";
  EXPECT_EQ((*gifts)[0].price_coins, 10);
  EXPECT_EQ((*gifts)[1].status, GiftStatus::kRetired);
}

// A bad item is named with its field; nothing of the write is kept.
TEST(GiftCatalog, Rule16_ABadItemIsInvalidNamingTheItemAndField) {
  struct Case {
    std::function<void(CatalogItemInput&)> spoil;
    std::string says;
  };
  const std::vector<Case> cases = {
      {[](CatalogItemInput& i) { i.gift_id = "  "; }, "items[1].gift_id is required"},
      {[](CatalogItemInput& i) { i.gift_id = std::string(65, 'g'); },
       "items[1].gift_id is 65 bytes, at most 64"},
      {[](CatalogItemInput& i) { i.gift_id = "rose"; }, "items[1].gift_id \"rose\" is items[0]'s"},
      {[](CatalogItemInput& i) { i.name = std::string(129, 'n'); }, "items[1].name is 129 bytes"},
      {[](CatalogItemInput& i) { i.icon = std::string(513, 'i'); }, "items[1].icon is 513 bytes"},
      {[](CatalogItemInput& i) { i.unlit_icon = std::string(513, 'i'); },
       "items[1].unlit_icon is 513 bytes"},
      {[](CatalogItemInput& i) { i.series = std::string(65, 's'); }, "items[1].series is 65"},
      {[](CatalogItemInput& i) { i.tier = std::string(33, 't'); }, "items[1].tier is 33"},
      {[](CatalogItemInput& i) { i.price_coins = -1; },
       "items[1].price_coins must be >= 0, got -1"},
      {[](CatalogItemInput& i) { i.status = "sold_out"; },
       "items[1].status \"sold_out\" is not on_sale or retired"},
      // The wall's catalogue order keeps this value for gifts the catalogue lacks.
      {[](CatalogItemInput& i) { i.sort_order = std::numeric_limits<int64_t>::max(); },
       "items[1].sort_order must be below 9223372036854775807"},
  };
  for (const Case& c : cases) {
    std::vector<CatalogItemInput> items = {Item("rose"), Item("lily")};
    c.spoil(items[1]);
    absl::StatusOr<std::vector<CatalogGift>> gifts = CheckCatalogItems(items);
    ASSERT_FALSE(gifts.ok()) << c.says;
    EXPECT_EQ(gifts.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(gifts.status().message(), HasSubstr(c.says));
  }
}

TEST(GiftCatalog, Rule16_ACatalogueHoldsAtMostFiveThousandGifts) {
  std::vector<CatalogItemInput> items;
  for (size_t i = 0; i < kMaxCatalogGifts; ++i) items.push_back(Item("g" + std::to_string(i)));
  EXPECT_TRUE(CheckCatalogItems(items).ok());
  items.push_back(Item("one-more"));
  absl::StatusOr<std::vector<CatalogGift>> gifts = CheckCatalogItems(items);
  EXPECT_EQ(gifts.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(gifts.status().message(),
              HasSubstr("items has 5001 gifts, a catalogue holds at most 5000"));
}

TEST(GiftCatalog, CatalogueOrderIsSortOrderThenGiftId) {
  CatalogGift a{"b", "", "", "", 0, "", "", GiftStatus::kOnSale, 1};
  CatalogGift b{"a", "", "", "", 0, "", "", GiftStatus::kOnSale, 2};
  CatalogGift c{"c", "", "", "", 0, "", "", GiftStatus::kOnSale, 1};
  EXPECT_TRUE(CatalogOrderLess(a, b));
  EXPECT_TRUE(CatalogOrderLess(a, c));
  EXPECT_FALSE(CatalogOrderLess(b, c));
  EXPECT_EQ(ParseGiftStatus("on_sale"), GiftStatus::kOnSale);
  EXPECT_EQ(ParseGiftStatus(""), GiftStatus::kOnSale);
  EXPECT_EQ(ParseGiftStatus("retired"), GiftStatus::kRetired);
  EXPECT_EQ(ParseGiftStatus("Retired"), std::nullopt);
  EXPECT_EQ(GiftStatusName(GiftStatus::kRetired), "retired");
}

}  // namespace
}  // namespace giftwall::domain
