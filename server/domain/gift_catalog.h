// An app's gift catalogue (DESIGN §2.16): what each gift is called and shown as, its price,
// series and tier, whether it is on sale, and where it sorts. Checking what a writer sends is
// here; storing it is storage's (catalog_repository).
#ifndef GIFTWALL_SERVER_DOMAIN_GIFT_CATALOG_H_
#define GIFTWALL_SERVER_DOMAIN_GIFT_CATALOG_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace giftwall::domain {

// The gifts an app's catalogue holds at most.
inline constexpr size_t kMaxCatalogGifts = 5000;
inline constexpr size_t kMaxSeriesBytes = 64;
inline constexpr size_t kMaxTierBytes = 32;

enum class GiftStatus { kOnSale, kRetired };

absl::string_view GiftStatusName(GiftStatus status);  // "on_sale", "retired"
// "" is on sale; nullopt for anything but "", "on_sale" and "retired".
std::optional<GiftStatus> ParseGiftStatus(absl::string_view name);

struct CatalogGift {
  std::string gift_id;  // trimmed, 1..64 bytes
  std::string name;
  std::string icon;
  std::string unlit_icon;
  int64_t price_coins = 0;
  std::string series;
  std::string tier;
  GiftStatus status = GiftStatus::kOnSale;
  int64_t sort_order = 0;

  bool operator==(const CatalogGift& o) const;
};

// What a writer sends for one gift, before it is checked.
struct CatalogItemInput {
  std::string gift_id;
  std::string name;
  std::string icon;
  std::string unlit_icon;
  int64_t price_coins = 0;
  std::string series;
  std::string tier;
  std::string status;
  int64_t sort_order = 0;
};

// The gifts `items` describe, gift ids trimmed as payloads' are. INVALID_ARGUMENT naming the
// first bad item and field ("items[3].price_coins must be >= 0, got -1"), a gift id listed twice,
// or more than kMaxCatalogGifts items.
absl::StatusOr<std::vector<CatalogGift>> CheckCatalogItems(
    const std::vector<CatalogItemInput>& items);

// Catalogue order: sort_order ascending, then gift_id.
bool CatalogOrderLess(const CatalogGift& a, const CatalogGift& b);

}  // namespace giftwall::domain

#endif  // GIFTWALL_SERVER_DOMAIN_GIFT_CATALOG_H_
