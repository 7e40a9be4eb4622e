#include "server/projection/outbox_codes.h"

#include <utility>

#include "absl/time/clock.h"
#include "server/common/status_macros.h"

namespace giftwall::projection {

absl::StatusOr<domain::OutboxAppCodes> OutboxCodes::All() {
  ASSIGN_OR_RETURN(std::vector<std::string> raw, outbox_.AppCodes());
  return domain::GroupOutboxAppCodes(std::move(raw));
}

absl::StatusOr<std::vector<std::string>> OutboxCodes::Of(const std::string& app_code) {
  ASSIGN_OR_RETURN(const domain::OutboxAppCodes codes, All());
  return codes.Of(app_code);
}

absl::StatusOr<std::vector<std::string>> OutboxCodes::RecentCodesOf(const std::string& app_code) {
  absl::MutexLock lock(&mu_);
  if (!listed_.has_value() || absl::Now() - listed_at_ > kListingTtl) {
    ASSIGN_OR_RETURN(listed_, All());
    listed_at_ = absl::Now();
  }
  return listed_->Of(app_code);
}

absl::StatusOr<std::optional<storage::OutboxRow>> OutboxCodes::FindRow(absl::string_view app_code,
                                                                       absl::string_view event_id) {
  ASSIGN_OR_RETURN(std::optional<storage::OutboxRow> found,
                   outbox_.Find(app_code, app_code, event_id));
  if (found.has_value()) return found;
  ASSIGN_OR_RETURN(const std::vector<std::string> codes, RecentCodesOf(std::string(app_code)));
  for (const std::string& code : codes) {
    if (code == app_code) continue;  // looked under it already
    ASSIGN_OR_RETURN(found, outbox_.Find(code, app_code, event_id));
    if (found.has_value()) return found;
  }
  return found;
}

}  // namespace giftwall::projection
