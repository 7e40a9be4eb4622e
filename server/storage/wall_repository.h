// Reads of the gift wall: pages in each sort order, the whole-wall summary, and the senders of
// one gift in the top-sender order.
#ifndef GIFTWALL_SERVER_STORAGE_WALL_REPOSITORY_H_
#define GIFTWALL_SERVER_STORAGE_WALL_REPOSITORY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/domain/page_token.h"
#include "server/storage/connection_pool.h"

namespace giftwall::storage {

// What one sender gave of one gift to one wall.
struct SenderStats {
  int64_t user_id = 0;
  int64_t sent_count = 0;
  int64_t sent_coins = 0;
  int64_t first_sent_at_ms = 0;
  int64_t last_sent_at_ms = 0;
};

struct WallItem {
  std::string gift_id;
  int64_t gift_count = 0;
  int64_t total_coins = 0;
  int64_t first_received_at_ms = 0;
  int64_t last_received_at_ms = 0;
  std::string gift_name;  // empty if no event carried one
  std::string gift_icon;
  int64_t sender_count = 0;
  std::optional<SenderStats> top_sender;  // the 冠名; none while the gift has no sender
  int64_t first_sender_user_id = 0;       // 0 while the gift has no sender
};

struct WallSummary {
  int64_t distinct_gifts = 0;
  int64_t total_gift_count = 0;  // saturates at the int64 maximum
  int64_t total_coins = 0;       // saturates at the int64 maximum
  int64_t last_received_at_ms = 0;
};

// Where a page starts: strictly after the gift with this sort value and gift_id.
struct WallCursor {
  int64_t sort_value = 0;
  std::string gift_id;
};

struct WallPage {
  std::vector<WallItem> items;
  bool has_more = false;
};

// Where a senders page starts: strictly after this sender in the top-sender order.
struct SenderCursor {
  int64_t sent_count = 0;
  int64_t last_sent_at_ms = 0;
  int64_t sender_user_id = 0;
};

struct SenderPage {
  std::vector<SenderStats> senders;
  bool has_more = false;
};

// The SQL of a page in `sort` order: the first page, or the page after a cursor. Exposed so that
// its plan can be checked (EXPLAIN) against a real server.
const std::string& PageQuery(domain::WallSort sort, bool after_cursor);
// Likewise for a gift's senders.
absl::string_view SendersQuery(bool after_cursor);

// The value a sort orders by, for building the next page's cursor.
int64_t SortValue(const WallItem& item, domain::WallSort sort);

class WallRepository {
 public:
  explicit WallRepository(ConnectionPool& pool) : pool_(pool) {}

  // Up to `limit` gifts of one wall in `sort` order (ties by gift_id ascending), after `after`.
  // Reads the sort's own index: no filesort.
  absl::StatusOr<WallPage> ListWall(absl::string_view app_code, int64_t user_id,
                                    domain::WallSort sort, const std::optional<WallCursor>& after,
                                    int limit);

  absl::StatusOr<WallSummary> Summarize(absl::string_view app_code, int64_t user_id);

  // Up to `limit` senders of one gift on one wall: sent_count descending, then last_sent_at_ms
  // ascending (who reached the count first), then sender_user_id ascending. The first sender
  // of the first page is the gift's top sender.
  absl::StatusOr<SenderPage> ListSenders(absl::string_view app_code, int64_t user_id,
                                         absl::string_view gift_id,
                                         const std::optional<SenderCursor>& after, int limit);

 private:
  ConnectionPool& pool_;
};

}  // namespace giftwall::storage

#endif  // GIFTWALL_SERVER_STORAGE_WALL_REPOSITORY_H_
