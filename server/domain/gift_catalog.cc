#include "server/domain/gift_catalog.h"

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "server/domain/gift_payload.h"
#include "server/domain/text.h"

namespace giftwall::domain {
namespace {

absl::Status BadItem(size_t i, absl::string_view field, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("items[", i, "].", field, " ", why));
}

// A text field of at most `max_bytes`.
absl::Status CheckText(size_t i, absl::string_view field, absl::string_view text,
                       size_t max_bytes) {
  if (text.size() > max_bytes) {
    return BadItem(i, field, absl::StrCat("is ", text.size(), " bytes, at most ", max_bytes));
  }
  return absl::OkStatus();
}

}  // namespace

absl::string_view GiftStatusName(GiftStatus status) {
  return status == GiftStatus::kRetired ? "retired" : "on_sale";
}

std::optional<GiftStatus> ParseGiftStatus(absl::string_view name) {
  if (name.empty() || name == "on_sale") return GiftStatus::kOnSale;
  if (name == "retired") return GiftStatus::kRetired;
  return std::nullopt;
}

bool CatalogGift::operator==(const CatalogGift& o) const {
  return std::tie(gift_id, name, icon, unlit_icon, price_coins, series, tier, status, sort_order) ==
         std::tie(o.gift_id, o.name, o.icon, o.unlit_icon, o.price_coins, o.series, o.tier,
                  o.status, o.sort_order);
}

absl::StatusOr<std::vector<CatalogGift>> CheckCatalogItems(
    const std::vector<CatalogItemInput>& items) {
  if (items.size() > kMaxCatalogGifts) {
    return absl::InvalidArgumentError(absl::StrCat(
        "items has ", items.size(), " gifts, a catalogue holds at most ", kMaxCatalogGifts));
  }
  std::vector<CatalogGift> gifts;
  gifts.reserve(items.size());
  std::map<std::string, size_t> seen;
  for (size_t i = 0; i < items.size(); ++i) {
    const CatalogItemInput& in = items[i];
    CatalogGift gift;
    gift.gift_id = std::string(TrimSpace(in.gift_id));
    if (gift.gift_id.empty()) return BadItem(i, "gift_id", "is required");
    if (absl::Status s = CheckText(i, "gift_id", gift.gift_id, kMaxGiftIdBytes); !s.ok()) return s;
    if (auto [it, fresh] = seen.emplace(gift.gift_id, i); !fresh) {
      return BadItem(
          i, "gift_id",
          absl::StrCat("\"", gift.gift_id, "\" is items[", it->second, "]'s too: each gift once"));
    }
    for (const auto& [field, text, max] :
         {std::make_tuple("name", &in.name, kMaxGiftNameBytes),
          std::make_tuple("icon", &in.icon, kMaxGiftIconBytes),
          std::make_tuple("unlit_icon", &in.unlit_icon, kMaxGiftIconBytes),
          std::make_tuple("series", &in.series, kMaxSeriesBytes),
          std::make_tuple("tier", &in.tier, kMaxTierBytes)}) {
      if (absl::Status s = CheckText(i, field, *text, max); !s.ok()) return s;
    }
    if (in.price_coins < 0) {
      return BadItem(i, "price_coins", absl::StrCat("must be >= 0, got ", in.price_coins));
    }
    // The wall's catalogue order puts gifts the catalogue lacks after every catalogued one, at
    // this value.
    if (in.sort_order == std::numeric_limits<int64_t>::max()) {
      return BadItem(i, "sort_order", absl::StrCat("must be below ", in.sort_order));
    }
    const std::optional<GiftStatus> status = ParseGiftStatus(in.status);
    if (!status.has_value()) {
      return BadItem(i, "status", absl::StrCat("\"", in.status, "\" is not on_sale or retired"));
    }
    gift.name = in.name;
    gift.icon = in.icon;
    gift.unlit_icon = in.unlit_icon;
    gift.price_coins = in.price_coins;
    gift.series = in.series;
    gift.tier = in.tier;
    gift.status = *status;
    gift.sort_order = in.sort_order;
    gifts.push_back(std::move(gift));
  }
  return gifts;
}

bool CatalogOrderLess(const CatalogGift& a, const CatalogGift& b) {
  return std::tie(a.sort_order, a.gift_id) < std::tie(b.sort_order, b.gift_id);
}

}  // namespace giftwall::domain
