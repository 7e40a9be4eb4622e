#include "server/storage/wall_repository.h"

#include <limits>
#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "server/storage/paging.h"

namespace giftwall::storage {
namespace {

constexpr absl::string_view kWallColumns = R"sql(
SELECT gift_id, gift_count, total_coins, first_received_at_ms, last_received_at_ms, gift_name,
       gift_icon, sender_count, top_sender_user_id, top_sender_count, top_sender_coins,
       top_sender_first_sent_at_ms, top_sender_last_sent_at_ms, first_sender_user_id
FROM user_gift_wall )sql";

WallItem ReadWallItem(const SqlRow& row) {
  WallItem item;
  item.gift_id = row.Str(0);
  item.gift_count = row.Int(1);
  item.total_coins = row.Int(2);
  item.first_received_at_ms = row.Int(3);
  item.last_received_at_ms = row.Int(4);
  item.gift_name = row.Str(5);
  item.gift_icon = row.Str(6);
  item.sender_count = row.Int(7);
  if (const int64_t top = row.Int(8); top != 0) {
    item.top_sender = SenderStats{top, row.Int(9), row.Int(10), row.Int(11), row.Int(12)};
  }
  item.first_sender_user_id = row.Int(13);
  return item;
}

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
    case domain::WallSort::kCoinsDesc:
      return {"total_coins", true, "idx_user_gift_wall_coins"};
    case domain::WallSort::kFirstReceivedAsc:
      return {"first_received_at_ms", false, "idx_user_gift_wall_first_received"};
  }
  LOG(FATAL) << "unknown wall sort " << static_cast<int>(sort);
}

// SUM over BIGINT is DECIMAL on both servers, so totals cannot wrap in SQL; they are read as
// text and saturated here.
constexpr absl::string_view kSummary = R"sql(
SELECT COUNT(*), CAST(COALESCE(SUM(gift_count), 0) AS CHAR),
       CAST(COALESCE(SUM(total_coins), 0) AS CHAR), COALESCE(MAX(last_received_at_ms), 0)
FROM user_gift_wall WHERE app_code = ? AND user_id = ?)sql";

// The top-sender order, read from idx_user_gift_wall_sender_rank.
constexpr absl::string_view kSendersFirstPage = R"sql(
SELECT sender_user_id, sent_count, sent_coins, first_sent_at_ms, last_sent_at_ms
FROM user_gift_wall_sender FORCE INDEX (idx_user_gift_wall_sender_rank)
WHERE app_code = ? AND user_id = ? AND gift_id = ?
ORDER BY sent_count DESC, last_sent_at_ms ASC, sender_user_id ASC
LIMIT ?)sql";

constexpr absl::string_view kSendersNextPage = R"sql(
SELECT sender_user_id, sent_count, sent_coins, first_sent_at_ms, last_sent_at_ms
FROM user_gift_wall_sender FORCE INDEX (idx_user_gift_wall_sender_rank)
WHERE app_code = ? AND user_id = ? AND gift_id = ?
  AND (sent_count < ? OR (sent_count = ? AND (last_sent_at_ms > ?
       OR (last_sent_at_ms = ? AND sender_user_id > ?))))
ORDER BY sent_count DESC, last_sent_at_ms ASC, sender_user_id ASC
LIMIT ?)sql";

int64_t SaturatedInt64(absl::string_view decimal) {
  int64_t value = 0;
  if (absl::SimpleAtoi(decimal, &value)) return value;
  return decimal.substr(0, 1) == "-" ? std::numeric_limits<int64_t>::min()
                                     : std::numeric_limits<int64_t>::max();
}

}  // namespace

// Keyset conditions are spelled out as `a < x OR (a = x AND b > y)`, which MariaDB seeks on the
// index (it does not seek row comparisons). Built once per sort and kept: each connection
// caches the prepared statement.
const std::string& PageQuery(domain::WallSort sort, bool after) {
  static const auto* const queries = [] {
    auto* q = new std::map<std::pair<domain::WallSort, bool>, std::string>();
    for (domain::WallSort s : domain::kAllWallSorts) {
      const SortSpec spec = SpecOf(s);
      const absl::string_view cmp = spec.descending ? "<" : ">";
      const absl::string_view dir = spec.descending ? "DESC" : "ASC";
      const std::string head = absl::StrCat(kWallColumns, "FORCE INDEX (", spec.index,
                                            ")\nWHERE app_code = ? AND user_id = ?\n");
      const std::string tail =
          absl::StrCat("ORDER BY ", spec.column, " ", dir, ", gift_id ASC\nLIMIT ?");
      (*q)[{s, false}] = absl::StrCat(head, tail);
      (*q)[{s, true}] = absl::StrCat(head, "  AND (", spec.column, " ", cmp, " ? OR (", spec.column,
                                     " = ? AND gift_id > ?))\n", tail);
    }
    return q;
  }();
  return queries->at({sort, after});
}

absl::string_view SendersQuery(bool after) { return after ? kSendersNextPage : kSendersFirstPage; }

int64_t SortValue(const WallItem& item, domain::WallSort sort) {
  switch (sort) {
    case domain::WallSort::kCountDesc:
      return item.gift_count;
    case domain::WallSort::kLastReceivedDesc:
      return item.last_received_at_ms;
    case domain::WallSort::kCoinsDesc:
      return item.total_coins;
    case domain::WallSort::kFirstReceivedAsc:
      return item.first_received_at_ms;
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
  auto on_row = [&](const SqlRow& row) { page.items.push_back(ReadWallItem(row)); };
  const int64_t fetch = RowsToFetch(limit);
  absl::Status s = after.has_value()
                       ? (*conn)->Query(PageQuery(sort, true),
                                        {app_code, user_id, after->sort_value, after->sort_value,
                                         after->gift_id, fetch},
                                        on_row)
                       : (*conn)->Query(PageQuery(sort, false), {app_code, user_id, fetch}, on_row);
  if (!s.ok()) return s;
  page.has_more = TrimToPage(&page.items, limit);
  return page;
}

absl::StatusOr<WallSummary> WallRepository::Summarize(absl::string_view app_code, int64_t user_id) {
  absl::StatusOr<PooledConnection> conn = pool_.Acquire();
  if (!conn.ok()) return conn.status();
  WallSummary summary;
  absl::Status s = (*conn)->Query(kSummary, {app_code, user_id}, [&](const SqlRow& row) {
    summary.distinct_gifts = row.Int(0);
    summary.total_gift_count = SaturatedInt64(row.Str(1));
    summary.total_coins = SaturatedInt64(row.Str(2));
    summary.last_received_at_ms = row.Int(3);
  });
  if (!s.ok()) return s;
  return summary;
}

absl::StatusOr<SenderPage> WallRepository::ListSenders(absl::string_view app_code, int64_t user_id,
                                                       absl::string_view gift_id,
                                                       const std::optional<SenderCursor>& after,
                                                       int limit) {
  absl::StatusOr<PooledConnection> conn = pool_.Acquire();
  if (!conn.ok()) return conn.status();
  SenderPage page;
  auto on_row = [&](const SqlRow& row) {
    page.senders.push_back(SenderStats{row.Int(0), row.Int(1), row.Int(2), row.Int(3), row.Int(4)});
  };
  const int64_t fetch = RowsToFetch(limit);
  absl::Status s =
      after.has_value()
          ? (*conn)->Query(
                kSendersNextPage,
                {app_code, user_id, gift_id, after->sent_count, after->sent_count,
                 after->last_sent_at_ms, after->last_sent_at_ms, after->sender_user_id, fetch},
                on_row)
          : (*conn)->Query(kSendersFirstPage, {app_code, user_id, gift_id, fetch}, on_row);
  if (!s.ok()) return s;
  page.has_more = TrimToPage(&page.senders, limit);
  return page;
}

}  // namespace giftwall::storage
