#include "server/storage/wall_repository.h"

#include <limits>
#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"

namespace giftwall::storage {
namespace {

constexpr absl::string_view kWallColumns =
    "SELECT gift_id, gift_count, first_received_at_ms, last_received_at_ms FROM user_gift_wall ";

// One sort: its column and direction, and the index that serves it in that order.
struct SortSpec {
  absl::string_view column;
  bool descending;
  absl::string_view index;
};

SortSpec SpecOf(domain::WallSort sort) {
  switch (sort) {
    case domain::WallSort::kCountDesc:
      return {"gift_count", true, "idx_user_gift_wall_count"};
    case domain::WallSort::kLastReceivedDesc:
      return {"last_received_at_ms", true, "idx_user_gift_wall_last_received"};
  }
  LOG(FATAL) << "unknown wall sort " << static_cast<int>(sort);
}

}  // namespace

// Keyset conditions are spelled out as `a < x OR (a = x AND b > y)`, which MariaDB seeks on the
// index (it does not seek row comparisons). Built once per sort and kept: each connection
// caches the prepared statement.
const std::string& PageQuery(domain::WallSort sort, bool after) {
  static const auto* const queries = [] {
    auto* q = new std::map<std::pair<domain::WallSort, bool>, std::string>();
    for (domain::WallSort s : {domain::WallSort::kCountDesc, domain::WallSort::kLastReceivedDesc}) {
      const SortSpec spec = SpecOf(s);
      const absl::string_view cmp = spec.descending ? "<" : ">";
      const absl::string_view dir = spec.descending ? "DESC" : "ASC";
      const std::string head = absl::StrCat(kWallColumns, "FORCE INDEX (", spec.index,
                                            ") WHERE app_code = ? AND user_id = ? ");
      const std::string tail =
          absl::StrCat("ORDER BY ", spec.column, " ", dir, ", gift_id ASC LIMIT ?");
      (*q)[{s, false}] = absl::StrCat(head, tail);
      (*q)[{s, true}] = absl::StrCat(head, "AND (", spec.column, " ", cmp, " ? OR (", spec.column,
                                     " = ? AND gift_id > ?)) ", tail);
    }
    return q;
  }();
  return queries->at({sort, after});
}

namespace {

// SUM over BIGINT is DECIMAL on both servers, so the total cannot wrap in SQL; it is read as
// text and saturated here.
constexpr absl::string_view kSummary = R"sql(
SELECT COUNT(*), CAST(COALESCE(SUM(gift_count), 0) AS CHAR), COALESCE(MAX(last_received_at_ms), 0)
FROM user_gift_wall WHERE app_code = ? AND user_id = ?)sql";

int64_t SaturatedInt64(absl::string_view decimal) {
  int64_t value = 0;
  if (absl::SimpleAtoi(decimal, &value)) return value;
  return decimal.substr(0, 1) == "-" ? std::numeric_limits<int64_t>::min()
                                     : std::numeric_limits<int64_t>::max();
}

}  // namespace

int64_t SortValue(const WallItem& item, domain::WallSort sort) {
  switch (sort) {
    case domain::WallSort::kCountDesc:
      return item.gift_count;
    case domain::WallSort::kLastReceivedDesc:
      return item.last_received_at_ms;
  }
  LOG(FATAL) << "unknown wall sort " << static_cast<int>(sort);
}

absl::StatusOr<WallPage> WallRepository::ListWall(absl::string_view app_code, int64_t user_id,
                                                  domain::WallSort sort,
                                                  const std::optional<WallCursor>& after,
                                                  int limit) {
  absl::StatusOr<PooledConnection> conn = pool_.Acquire();
  if (!conn.ok()) return conn.status();
  WallPage page;
  auto on_row = [&](const SqlRow& row) {
    page.items.push_back(WallItem{row.Str(0), row.Int(1), row.Int(2), row.Int(3)});
  };
  // One row more than asked for says whether there is a next page.
  const int64_t fetch = int64_t{limit} + 1;
  absl::Status s = after.has_value()
                       ? (*conn)->Query(PageQuery(sort, true),
                                        {app_code, user_id, after->sort_value, after->sort_value,
                                         after->gift_id, fetch},
                                        on_row)
                       : (*conn)->Query(PageQuery(sort, false), {app_code, user_id, fetch}, on_row);
  if (!s.ok()) return s;
  if (page.items.size() > static_cast<size_t>(limit)) {
    page.items.resize(static_cast<size_t>(limit));
    page.has_more = true;
  }
  return page;
}

absl::StatusOr<WallSummary> WallRepository::Summarize(absl::string_view app_code, int64_t user_id) {
  absl::StatusOr<PooledConnection> conn = pool_.Acquire();
  if (!conn.ok()) return conn.status();
  WallSummary summary;
  absl::Status s = (*conn)->Query(kSummary, {app_code, user_id}, [&](const SqlRow& row) {
    summary.distinct_gifts = row.Int(0);
    summary.total_gift_count = SaturatedInt64(row.Str(1));
    summary.last_received_at_ms = row.Int(2);
  });
  if (!s.ok()) return s;
  return summary;
}

}  // namespace giftwall::storage
