#include "client/wall_table.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"

namespace giftwall::client {
namespace {

// Renders rows as columns padded to their widest cell (by bytes: gift ids are mostly ASCII).
std::string Table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()));
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      absl::StrAppend(&line, row[i]);
      if (i + 1 < row.size()) line.append(widths[i] - row[i].size() + 2, ' ');
    }
    absl::StrAppend(&out, line, "\n");
  }
  return out;
}

}  // namespace

std::string FormatTimeMs(int64_t ms) {
  if (ms == 0) return "-";
  return absl::FormatTime("%Y-%m-%d %H:%M:%E3SZ", absl::FromUnixMillis(ms), absl::UTCTimeZone());
}

std::string FormatWallTable(const v1::GetGiftWallResponse& page) {
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"GIFT", "COUNT", "FIRST RECEIVED", "LAST RECEIVED"});
  for (const v1::GiftWallItem& item : page.items()) {
    rows.push_back({item.gift_id(), absl::StrCat(item.gift_count()),
                    FormatTimeMs(item.first_received_at_ms()),
                    FormatTimeMs(item.last_received_at_ms())});
  }
  std::string out = page.items().empty() ? "(no gifts on this page)\n" : Table(rows);
  const v1::GiftWallSummary& s = page.summary();
  absl::StrAppendFormat(&out, "\ndistinct gifts: %d, received in all: %d, last received: %s\n",
                        s.distinct_gifts(), s.total_gift_count(),
                        FormatTimeMs(s.last_received_at_ms()));
  if (!page.next_page_token().empty()) {
    absl::StrAppend(&out, "more: --page_token=", page.next_page_token(), "\n");
  }
  return out;
}

}  // namespace giftwall::client
