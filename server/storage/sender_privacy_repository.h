// Senders' opt-outs (DESIGN §2.18): giftwall_sender_privacy, one row per sender who set it. Wall
// reads take an app's opt-outs from reads::OptOutCache (ListHidden); the senders, history and
// standing reads look them up with their page (WallRepository::HiddenSenders).
#ifndef GIFTWALL_SERVER_STORAGE_SENDER_PRIVACY_REPOSITORY_H_
#define GIFTWALL_SERVER_STORAGE_SENDER_PRIVACY_REPOSITORY_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/storage/connection_pool.h"

namespace giftwall::storage {

class SenderPrivacyRepository {
 public:
  explicit SenderPrivacyRepository(ConnectionPool& pool) : pool_(pool) {}

  // Records whether `sender_user_id` hides from strangers on the app's walls, `by` as who set
  // it; true if that changed it (a sender without a row did not hide).
  absl::StatusOr<bool> Set(absl::string_view app_code, int64_t sender_user_id, bool hidden,
                           absl::string_view by);

  // Every sender of the app who hides now: a primary-key range, one row per opt-out.
  absl::StatusOr<std::vector<int64_t>> ListHidden(absl::string_view app_code);

 private:
  ConnectionPool& pool_;
};

}  // namespace giftwall::storage

#endif  // GIFTWALL_SERVER_STORAGE_SENDER_PRIVACY_REPOSITORY_H_
