#include "server/storage/catalog_repository.h"

#include "absl/strings/str_cat.h"
#include "server/common/status_macros.h"
#include "server/domain/text.h"
#include "server/storage/columns.h"
#include "server/storage/db_clock.h"
#include "server/storage/paging.h"
#include "server/storage/row_set.h"
#include "server/storage/sql_connection.h"

namespace giftwall::storage {
namespace {

// A write's gifts, as JSON rows.
enum CatalogItemColumn {
  kGift,
  kName,
  kIcon,
  kUnlitIcon,
  kPrice,
  kSeries,
  kTier,
  kStatus,
  kSortOrder,
};
constexpr RowColumn kCatalogItemColumns[] = {
    {kGift, "j_gift", "VARCHAR(128) CHARACTER SET ascii"},
    {kName, "j_name", "VARCHAR(128) CHARACTER SET utf8mb4"},
    {kIcon, "j_icon", "VARCHAR(512) CHARACTER SET utf8mb4"},
    {kUnlitIcon, "j_unlit_icon", "VARCHAR(512) CHARACTER SET utf8mb4"},
    {kPrice, "j_price", "BIGINT"},
    {kSeries, "j_series", "VARCHAR(64) CHARACTER SET utf8mb4"},
    {kTier, "j_tier", "VARCHAR(32) CHARACTER SET utf8mb4"},
    {kStatus, "j_status", "VARCHAR(16) CHARACTER SET ascii"},
    {kSortOrder, "j_sort_order", "BIGINT"},
};
static_assert(InPositionOrder(kCatalogItemColumns));

// The gift ids alone: a prefix of the same rows.
constexpr RowColumn kGiftIdColumns[] = {kCatalogItemColumns[kGift]};

// Takes the app's catalogue row lock (creating the row), recording the writer.
constexpr absl::string_view kLockCatalog = R"sql(
INSERT INTO giftwall_gift_catalogs (app_code, version, updated_at_ms, updated_by)
VALUES (?, 1, )sql" GIFTWALL_DB_NOW_MS R"sql(, ?)
ON DUPLICATE KEY UPDATE version = version + 1, updated_at_ms = VALUES(updated_at_ms),
  updated_by = VALUES(updated_by))sql";

const RowsSql& UpsertSql() {
  static const auto* const sql =
      new RowsSql(kCatalogItemColumns, absl::StrCat(R"sql(
INSERT INTO giftwall_gift_catalog (app_code, gift_id, gift_name, gift_icon, unlit_icon,
  price_coins, series, tier, status, sort_order, updated_at_ms)
SELECT ?, UNHEX(jt.j_gift), jt.j_name, jt.j_icon, jt.j_unlit_icon, jt.j_price, jt.j_series,
  jt.j_tier, jt.j_status, jt.j_sort_order, )sql",
                                                    GIFTWALL_DB_NOW_MS, "\nFROM ", kRowsTable,
                                                    R"sql(
ON DUPLICATE KEY UPDATE gift_name = VALUES(gift_name), gift_icon = VALUES(gift_icon),
  unlit_icon = VALUES(unlit_icon), price_coins = VALUES(price_coins), series = VALUES(series),
  tier = VALUES(tier), status = VALUES(status), sort_order = VALUES(sort_order),
  updated_at_ms = VALUES(updated_at_ms))sql"));
  return *sql;
}

// A replace: the app's gifts that the write does not list go.
const RowsSql& RemoveOthersSql() {
  static const auto* const sql =
      new RowsSql(kGiftIdColumns,
                  absl::StrCat("DELETE FROM giftwall_gift_catalog WHERE app_code = ? AND "
                               "gift_id NOT IN (SELECT UNHEX(jt.j_gift) FROM ",
                               kRowsTable, ")"),
                  RowsSql::kWhole);
  return *sql;
}

constexpr absl::string_view kCountSql =
    "SELECT COUNT(*) FROM giftwall_gift_catalog WHERE app_code = ?";

enum CatalogColumn {
  kColGift,
  kColName,
  kColIcon,
  kColUnlitIcon,
  kColPrice,
  kColSeries,
  kColTier,
  kColStatus,
  kColSortOrder,
};
constexpr ResultColumn kCatalogColumns[] = {
    {kColGift, "gift_id"},
    {kColName, "gift_name"},
    {kColIcon, "gift_icon"},
    {kColUnlitIcon, "unlit_icon"},
    {kColPrice, "price_coins"},
    {kColSeries, "series"},
    {kColTier, "tier"},
    {kColStatus, "status"},
    {kColSortOrder, "sort_order"},
};
static_assert(InPositionOrder(kCatalogColumns));

// A page in catalogue order: the first, or the one after a gift. An app's gifts are at most
// 5,000: a primary-key range, sorted.
std::string ListSql(bool after) {
  return absl::StrCat("SELECT ", SelectList(kCatalogColumns),
                      "\nFROM giftwall_gift_catalog WHERE app_code = ?",
                      after ? " AND (sort_order > ? OR (sort_order = ? AND gift_id > ?))" : "",
                      "\nORDER BY sort_order, gift_id\nLIMIT ?");
}

const std::string& ListSqlOf(bool after) {
  static const auto* const sqls = new std::string[2]{ListSql(false), ListSql(true)};
  return sqls[after ? 1 : 0];
}

}  // namespace

absl::StatusOr<CatalogWrite> CatalogRepository::Put(absl::string_view app_code,
                                                    const std::vector<domain::CatalogGift>& gifts,
                                                    bool replace, absl::string_view by) {
  RowSet rows(kCatalogItemColumns);
  RowSet ids(kGiftIdColumns);
  for (const domain::CatalogGift& gift : gifts) {
    rows.Row()
        .Bytes(kGift, gift.gift_id)
        .Text(kName, gift.name)
        .Text(kIcon, gift.icon)
        .Text(kUnlitIcon, gift.unlit_icon)
        .Int(kPrice, gift.price_coins)
        .Text(kSeries, gift.series)
        .Text(kTier, gift.tier)
        .Text(kStatus, domain::GiftStatusName(gift.status))
        .Int(kSortOrder, gift.sort_order);
    ids.Row().Bytes(kGift, gift.gift_id);
  }
  ASSIGN_OR_RETURN(PooledConnection conn, pool_.Acquire());
  ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(*conn));
  // The column holds 256 characters; a caller's name may be longer.
  RETURN_IF_ERROR(conn->Execute(kLockCatalog, {app_code, domain::TruncateUtf8(by, 256)}).status());
  CatalogWrite write;
  write.upserted = static_cast<int64_t>(gifts.size());
  if (!rows.empty()) RETURN_IF_ERROR(conn->Execute(UpsertSql(), {app_code, &rows}).status());
  if (replace) {
    ASSIGN_OR_RETURN(write.removed, conn->Execute(RemoveOthersSql(), {app_code, &ids}));
  }
  RETURN_IF_ERROR(conn->Query(kCountSql, {app_code},
                              [&](const SqlRow& row) { write.catalog_gifts = row.Int(0); }));
  if (write.catalog_gifts > static_cast<int64_t>(domain::kMaxCatalogGifts)) {
    RETURN_IF_ERROR(tx.Rollback());
    return absl::FailedPreconditionError(absl::StrCat(
        "the catalogue of ", app_code, " would hold ", write.catalog_gifts, " gifts, at most ",
        domain::kMaxCatalogGifts, ": remove some (replace) first"));
  }
  RETURN_IF_ERROR(tx.Commit());
  return write;
}

absl::StatusOr<CatalogPage> CatalogRepository::List(
    absl::string_view app_code, const std::optional<std::pair<int64_t, std::string>>& after,
    int limit) {
  std::vector<SqlParam> params = {app_code};
  if (after.has_value()) {
    params.emplace_back(after->first);
    params.emplace_back(after->first);
    params.emplace_back(after->second);
  }
  params.emplace_back(RowsToFetch(limit));
  ASSIGN_OR_RETURN(PooledConnection conn, pool_.Acquire());
  CatalogPage page;
  RETURN_IF_ERROR(conn->Query(ListSqlOf(after.has_value()), params, [&](const SqlRow& row) {
    domain::CatalogGift gift;
    gift.gift_id = row.Str(kColGift);
    gift.name = row.Str(kColName);
    gift.icon = row.Str(kColIcon);
    gift.unlit_icon = row.Str(kColUnlitIcon);
    gift.price_coins = row.Int(kColPrice);
    gift.series = row.Str(kColSeries);
    gift.tier = row.Str(kColTier);
    gift.status =
        domain::ParseGiftStatus(row.Str(kColStatus)).value_or(domain::GiftStatus::kOnSale);
    gift.sort_order = row.Int(kColSortOrder);
    page.gifts.push_back(std::move(gift));
  }));
  page.has_more = TrimToPage(&page.gifts, limit);
  return page;
}

}  // namespace giftwall::storage
