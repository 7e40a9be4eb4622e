// Who is looking at a wall, and which senders they see masked (DESIGN §2.18): a sender is shown
// as they are to the wall's owner, to themself and to a moderator; to anyone else they are masked
// (user id 0, anonymous) when they opted out or sent any of that gift to that wall anonymously.
// Whether a sender hid is the database's to say; this decides whom to ask about and applies the
// answer. Pure: the asking is a function the caller passes.
#ifndef GIFTWALL_SERVER_DOMAIN_VIEWER_H_
#define GIFTWALL_SERVER_DOMAIN_VIEWER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "server/domain/wall_page.h"

namespace giftwall::domain {

struct Viewer {
  // The user the caller says is looking; 0 is nobody in particular, who sees every hidden
  // sender masked.
  int64_t user_id = 0;
  // A moderator sees every sender as they are.
  bool sees_everyone = false;
};

// One sender a reply shows: of gift `gift_id` on the wall read.
struct ShownSender {
  std::string gift_id;
  int64_t sender_user_id = 0;
};

// An app's senders who opted out.
using OptOuts = absl::flat_hash_set<int64_t>;

// Marks, in `items` (a wall as read), the top and first senders for whom `hid(gift_id, sender)`
// is true as hidden.
void MarkHidden(std::vector<WallItem>& items,
                absl::FunctionRef<bool(const std::string& gift_id, int64_t sender_user_id)> hid);

// MarkHidden for the senders who opted out.
void MarkOptedOut(const OptOuts& opted_out, std::vector<WallItem>& items);

// Which of `senders` (of one wall) hid from strangers: sent the gift anonymously to the wall, or
// opted out. One answer per sender, in order.
using HiddenSendersFn =
    std::function<absl::StatusOr<std::vector<bool>>(absl::Span<const ShownSender> senders)>;

// Whether `viewer` sees `sender_user_id` on `owner_user_id`'s wall as they are whatever they chose:
// a moderator, the wall's owner, or the sender themself. No sender (0) has nothing to mask.
bool SeesAsIs(const Viewer& viewer, int64_t owner_user_id, int64_t sender_user_id);

// Which of `senders` (of `owner_user_id`'s wall) `viewer` sees masked, one answer per sender:
// `hidden` is asked, once, about those the viewer does not see as they are, and not at all when
// there are none. Its error is returned as is.
absl::StatusOr<std::vector<bool>> MaskedFor(const Viewer& viewer, int64_t owner_user_id,
                                            absl::Span<const ShownSender> senders,
                                            const HiddenSendersFn& hidden);

}  // namespace giftwall::domain

#endif  // GIFTWALL_SERVER_DOMAIN_VIEWER_H_
