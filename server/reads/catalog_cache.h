// Apps' gift catalogues as wall reads use them (AppCache): each read once per
// --catalog_cache_ttl and shared, never per wall.
#ifndef GIFTWALL_SERVER_READS_CATALOG_CACHE_H_
#define GIFTWALL_SERVER_READS_CATALOG_CACHE_H_

#include <functional>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "server/domain/gift_catalog.h"
#include "server/domain/wall_page.h"
#include "server/reads/app_cache.h"

namespace giftwall::reads {

// The whole catalogue of an app (empty without one): storage::CatalogRepository::List, or a
// test's.
using LoadCatalogFn =
    std::function<absl::StatusOr<std::vector<domain::CatalogGift>>(absl::string_view app_code)>;

class CatalogCache : public AppCache<domain::CatalogIndex> {
 public:
  CatalogCache(
      const LoadCatalogFn& load, absl::Duration ttl,
      std::function<absl::Time()> now = [] { return absl::Now(); })
      : AppCache(
            [load](absl::string_view app_code)
                -> absl::StatusOr<std::shared_ptr<const domain::CatalogIndex>> {
              absl::StatusOr<std::vector<domain::CatalogGift>> gifts = load(app_code);
              if (!gifts.ok()) return gifts.status();
              return std::make_shared<const domain::CatalogIndex>(*std::move(gifts));
            },
            ttl, std::move(now)) {}
};

}  // namespace giftwall::reads

#endif  // GIFTWALL_SERVER_READS_CATALOG_CACHE_H_
