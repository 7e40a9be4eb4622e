// The codes an app's events sit under in the wallet's outbox, resolved in one place: the
// outbox lists the codes as written, domain::GroupOutboxAppCodes says which app each belongs
// to, and this class answers with them (catch-up, status, requeue and the outbox payloads).
#ifndef GIFTWALL_SERVER_PROJECTION_OUTBOX_CODES_H_
#define GIFTWALL_SERVER_PROJECTION_OUTBOX_CODES_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/domain/app_code.h"
#include "server/storage/outbox_repository.h"

namespace giftwall::projection {

class OutboxCodes {
 public:
  explicit OutboxCodes(storage::OutboxRepository& outbox) : outbox_(outbox) {}

  // Every app's codes, listed now.
  absl::StatusOr<domain::OutboxAppCodes> All();
  // One (normalized) app's codes, listed now.
  absl::StatusOr<std::vector<std::string>> Of(const std::string& app_code);

  // The outbox row of one event of `app_code`: under app_code itself, or else under another
  // of the app's codes. A miss (common with --payload_source=outbox, where a relay's message
  // may come before its row commits) does not list the codes every time: the other codes come
  // from a listing at most kListingTtl old.
  absl::StatusOr<std::optional<storage::OutboxRow>> FindRow(absl::string_view app_code,
                                                            absl::string_view event_id);

  static constexpr absl::Duration kListingTtl = absl::Seconds(10);

 private:
  absl::StatusOr<std::vector<std::string>> RecentCodesOf(const std::string& app_code);

  storage::OutboxRepository& outbox_;
  absl::Mutex mu_;
  std::optional<domain::OutboxAppCodes> listed_ ABSL_GUARDED_BY(mu_);
  absl::Time listed_at_ ABSL_GUARDED_BY(mu_);
};

}  // namespace giftwall::projection

#endif  // GIFTWALL_SERVER_PROJECTION_OUTBOX_CODES_H_
