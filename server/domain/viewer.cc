#include "server/domain/viewer.h"

#include "absl/strings/str_cat.h"

namespace giftwall::domain {

bool SeesAsIs(const Viewer& viewer, int64_t owner_user_id, int64_t sender_user_id) {
  if (sender_user_id == 0 || viewer.sees_everyone) return true;
  return viewer.user_id != 0 &&
         (viewer.user_id == owner_user_id || viewer.user_id == sender_user_id);
}

void MarkHidden(std::vector<WallItem>& items,
                absl::FunctionRef<bool(const std::string& gift_id, int64_t sender_user_id)> hid) {
  for (WallItem& item : items) {
    if (item.top_sender.has_value() && hid(item.gift_id, item.top_sender->user_id)) {
      item.top_sender_hidden = true;
    }
    if (item.first_sender_user_id != 0 && hid(item.gift_id, item.first_sender_user_id)) {
      item.first_sender_hidden = true;
    }
  }
}

void MarkOptedOut(const OptOuts& opted_out, std::vector<WallItem>& items) {
  if (opted_out.empty()) return;
  MarkHidden(items, [&](const std::string&, int64_t sender) { return opted_out.contains(sender); });
}

absl::StatusOr<std::vector<bool>> MaskedFor(const Viewer& viewer, int64_t owner_user_id,
                                            absl::Span<const ShownSender> senders,
                                            const HiddenSendersFn& hidden) {
  std::vector<bool> masked(senders.size(), false);
  std::vector<ShownSender> asked;
  std::vector<size_t> asked_at;
  for (size_t i = 0; i < senders.size(); ++i) {
    if (SeesAsIs(viewer, owner_user_id, senders[i].sender_user_id)) continue;
    asked.push_back(senders[i]);
    asked_at.push_back(i);
  }
  if (asked.empty()) return masked;
  absl::StatusOr<std::vector<bool>> answers = hidden(asked);
  if (!answers.ok()) return answers.status();
  if (answers->size() != asked.size()) {
    return absl::InternalError(absl::StrCat("asked whether ", asked.size(), " senders hid, got ",
                                            answers->size(), " answers"));
  }
  for (size_t j = 0; j < asked_at.size(); ++j) {
    masked[asked_at[j]] = (*answers)[j];
  }
  return masked;
}

}  // namespace giftwall::domain
