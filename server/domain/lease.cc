#include "server/domain/lease.h"

#include "absl/strings/str_cat.h"

namespace giftwall::domain {

LeaseDecision DecideLease(const LeaseRow& current, absl::string_view holder, int64_t now_ms,
                          int64_t duration_ms) {
  const int64_t expires_at_ms = now_ms + duration_ms;
  if (current.holder == holder) {
    return {LeaseDecision::Kind::kRenew, LeaseRow{current.holder, current.token, expires_at_ms}};
  }
  if (current.expires_at_ms <= now_ms) {
    return {LeaseDecision::Kind::kTake,
            LeaseRow{std::string(holder), current.token + 1, expires_at_ms}};
  }
  return {LeaseDecision::Kind::kRefused, current};
}

std::string DescribeHolder(const LeaseRow& row, int64_t now_ms) {
  return absl::StrCat("held by ", row.holder, " for another ", row.expires_at_ms - now_ms, " ms");
}

}  // namespace giftwall::domain
