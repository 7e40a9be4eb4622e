// Apps' gift catalogues (DESIGN §2.16): giftwall_gift_catalog, one row per gift, and
// giftwall_gift_catalogs, one per app, whose lock a write takes first.
#ifndef GIFTWALL_SERVER_STORAGE_CATALOG_REPOSITORY_H_
#define GIFTWALL_SERVER_STORAGE_CATALOG_REPOSITORY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/domain/gift_catalog.h"
#include "server/storage/connection_pool.h"

namespace giftwall::storage {

// What a write did.
struct CatalogWrite {
  int64_t upserted = 0;
  int64_t removed = 0;
  int64_t catalog_gifts = 0;  // held afterwards
};

struct CatalogPage {
  std::vector<domain::CatalogGift> gifts;
  bool has_more = false;
};

class CatalogRepository {
 public:
  explicit CatalogRepository(ConnectionPool& pool) : pool_(pool) {}

  // Upserts `gifts` (checked: domain::CheckCatalogItems), and with `replace` removes the app's
  // other gifts, in one transaction that first locks the app's catalogue row, so that writes of
  // one app take turns and a reader sees the catalogue before or after, never half. `by` is
  // recorded as the last writer. FAILED_PRECONDITION, with nothing written, if the catalogue
  // would hold more than domain::kMaxCatalogGifts gifts.
  absl::StatusOr<CatalogWrite> Put(absl::string_view app_code,
                                   const std::vector<domain::CatalogGift>& gifts, bool replace,
                                   absl::string_view by);

  // Up to `limit` gifts of the app's catalogue in catalogue order, after `after` (sort_order,
  // gift_id) if given; has_more says whether more follow.
  absl::StatusOr<CatalogPage> List(absl::string_view app_code,
                                   const std::optional<std::pair<int64_t, std::string>>& after,
                                   int limit);

 private:
  ConnectionPool& pool_;
};

}  // namespace giftwall::storage

#endif  // GIFTWALL_SERVER_STORAGE_CATALOG_REPOSITORY_H_
