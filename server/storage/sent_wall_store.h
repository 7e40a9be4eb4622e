// The sent wall's rows (DESIGN §2.19): user_gift_sent, all-time and per period, and its
// receivers, which are the walls' sender rows read by sender (the by-sender indexes of
// user_gift_wall_sender and user_gift_wall_period_sender). A period is named as a
// domain::Period's Name() ("month:2026-12"), "" for all-time. SentStatements run on the caller's
// session, in its transaction (the projection's merge, verify and repair); SentWallRepository
// reads pages on a pool. Rows only: who sees what is domain/sent_wall's.
#ifndef GIFTWALL_SERVER_STORAGE_SENT_WALL_STORE_H_
#define GIFTWALL_SERVER_STORAGE_SENT_WALL_STORE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "server/domain/sent_wall.h"
#include "server/storage/connection_pool.h"
#include "server/storage/sql_connection.h"

namespace giftwall::storage {

class SentStatements {
 public:
  explicit SentStatements(SqlConnection& conn) : conn_(conn) {}

  // Adds each delta to its sent row (inserting new ones), in key order, in one statement; then
  // sets the open part of the rows to recount to the sum of their open sender rows, as committed
  // (and written by this transaction). Strict mode makes an overflowing sum an error (1690).
  absl::Status Merge(absl::string_view app_code, const domain::SentDeltas& deltas);

  // The end of the next chunk of senders after `after`: (after, end] holds the sender rows of at
  // most a chunk's worth of senders; INT64_MAX past the last one (sent rows without sender rows
  // are in that chunk).
  absl::StatusOr<int64_t> NextSenderChunkEnd(absl::string_view app_code, int64_t after);
  // What the sender rows of the senders in (lo, hi] make of their sent rows, all-time and of
  // every period: summed.
  absl::StatusOr<domain::SentWall> SumSenderRows(absl::string_view app_code, int64_t lo,
                                                 int64_t hi);
  // The sent rows of the senders in (lo, hi], all-time and of every period.
  absl::StatusOr<domain::SentWall> SentRows(absl::string_view app_code, int64_t lo, int64_t hi);

  // Sets each sent row of `keys` (in key order) to what the sender rows make of it, or removes
  // it if they make none. Each row is locked (inserted empty if absent) before its sender rows
  // are summed as committed: a projection that merged one of them but has not reached the sent
  // row yet adds its part after this transaction, one that has is waited for. Run in the
  // caller's READ COMMITTED transaction.
  absl::Status Recompute(absl::string_view app_code, absl::Span<const domain::SentKey> keys);

 private:
  SqlConnection& conn_;
};

// One sent gift as a reader sees it.
struct SentGift {
  std::string gift_id;
  domain::SentRow row;
};

struct SentPage {
  std::vector<SentGift> gifts;
  bool has_more = false;
};

// One receiver of a sent gift: a wall's sender row of that sender and gift.
struct SentReceiver {
  int64_t user_id = 0;
  domain::SenderRow sent;
};

struct ReceiverPage {
  std::vector<SentReceiver> receivers;
  bool has_more = false;
};

// The SQL of ListSent and ListReceivers, exposed so that their plans can be checked (EXPLAIN).
absl::string_view SentGiftsQuery(bool after_cursor, bool shown_only);
absl::string_view OpenSentQuery(bool after_cursor);
absl::string_view SentReceiversQuery(bool period, bool after_cursor, bool open_only);

class SentWallRepository {
 public:
  explicit SentWallRepository(SessionSource& pool) : pool_(pool) {}

  // A page of a sender's sent gifts of `period` in gift_id order, after `after_gift` if given;
  // with `shown_only`, only those with an open part (all-time: a period's is not kept).
  absl::StatusOr<SentPage> ListSent(absl::string_view app_code, int64_t sender_user_id,
                                    absl::string_view period,
                                    const std::optional<std::string>& after_gift, bool shown_only,
                                    int limit);

  // A page of the open parts of a sender's gifts in one period (not "": the all-time rows keep
  // theirs), in gift_id order: summed from the period's sender rows whose walls show the sender
  // (their all-time sender row is not anonymous, §2.18), in `open`.
  absl::StatusOr<SentPage> ListOpenSent(absl::string_view app_code, int64_t sender_user_id,
                                        absl::string_view period,
                                        const std::optional<std::string>& after_gift, int limit);

  // A page of the receivers of one sent gift in `period`, by receiver id, after `after_receiver`
  // if given; with `open_only`, those whose walls show the sender (their all-time sender row is
  // not anonymous).
  absl::StatusOr<ReceiverPage> ListReceivers(absl::string_view app_code, int64_t sender_user_id,
                                             absl::string_view period, absl::string_view gift_id,
                                             std::optional<int64_t> after_receiver, bool open_only,
                                             int limit);

 private:
  // A page of sent gifts read by `sql` (ListSent's or ListOpenSent's, whose parameters are the
  // same), in gift_id order.
  absl::StatusOr<SentPage> ReadPage(absl::string_view sql, absl::string_view app_code,
                                    int64_t sender_user_id, absl::string_view period,
                                    const std::optional<std::string>& after_gift, int limit);

  SessionSource& pool_;
};

}  // namespace giftwall::storage

#endif  // GIFTWALL_SERVER_STORAGE_SENT_WALL_STORE_H_
