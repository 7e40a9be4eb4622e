// Reads of the gift wall: users' whole walls (a page and its summary are cut from one, see
// domain/wall_page.h), and the senders of one gift in the top-sender order.
#ifndef GIFTWALL_SERVER_STORAGE_WALL_REPOSITORY_H_
#define GIFTWALL_SERVER_STORAGE_WALL_REPOSITORY_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "server/domain/period.h"
#include "server/domain/viewer.h"
#include "server/domain/wall_page.h"
#include "server/storage/app_settings_store.h"
#include "server/storage/connection_pool.h"
#include "server/storage/row_set.h"

namespace giftwall::storage {

using domain::SenderCursor;

struct SenderPage {
  std::vector<domain::SenderStats> senders;
  bool has_more = false;
};

// One gift's 冠名 in one past period, and in how many of the window's periods they were.
struct SponsorRecord {
  std::string period_key;
  std::string gift_id;
  domain::SenderStats sponsor;
  int64_t periods_won = 0;
};

// Which history, and where its page starts.
struct SponsorHistoryQuery {
  domain::PeriodKind kind = domain::PeriodKind::kMonth;
  std::string oldest_key;              // the oldest period read
  std::string current_key;             // the current period: read up to, not including, it
  std::optional<std::string> gift_id;  // only this gift's
  std::optional<std::pair<std::string, std::string>> after;  // (period_key, gift_id)
  int limit = 0;
};

struct SponsorHistoryPage {
  std::vector<SponsorRecord> records;
  bool has_more = false;
};

// What GetSenderStanding reads of one gift on one wall.
struct StandingRead {
  std::optional<domain::SenderStats> sent;     // the sender's row
  std::optional<domain::SenderStats> sponsor;  // the gift's 冠名
  // Senders ranked above the sender, counted up to domain::kExactRankLimit; none if the sender
  // sent none or is the 冠名.
  std::optional<int64_t> senders_ahead;
};

// The SQL of a gift's senders page, all-time or of a period: the first, or the page after a
// cursor. Exposed so that its plan can be checked (EXPLAIN) against a real server.
absl::string_view SendersQuery(bool period, bool after_cursor);

// The SQL of ReadWalls, ListSponsorHistory and the rank of ReadStanding, for the same reason.
const RowsSql& WallQuery(bool period);
const RowsSql& AnonymousSendersQuery();
absl::string_view SponsorHistoryQuerySql(bool one_gift, bool after_cursor);
absl::string_view SendersAheadQuery(bool period);
const RowsSql& HiddenSendersQuery();

class WallRepository {
 public:
  explicit WallRepository(SessionSource& pool) : pool_(pool) {}

  // Every gift of each of the walls of `user_ids` (of one app; all-time, or of one period), in
  // one statement: one snapshot, a primary-key range per wall. Unordered within a wall; a user
  // without gifts has none. Each gift says whether its top and first sender sent it anonymously
  // (DESIGN §2.18): a second statement reads the walls' anonymous senders, along their index.
  absl::StatusOr<std::map<int64_t, std::vector<domain::WallItem>>> ReadWalls(
      absl::string_view app_code, const std::optional<domain::Period>& period,
      absl::Span<const int64_t> user_ids);

  // Up to `limit` senders of one gift on one wall: sent_count descending, then last_sent_at_ms
  // ascending (who reached the count first), then sender_user_id ascending. The first sender
  // of the first page is the gift's top sender.
  absl::StatusOr<SenderPage> ListSenders(absl::string_view app_code, int64_t user_id,
                                         const std::optional<domain::Period>& period,
                                         absl::string_view gift_id,
                                         const std::optional<SenderCursor>& after, int limit);

  // A page of the 冠名 of a user's past periods of one kind (those with a sender), newest period
  // first and gifts ascending within one, each with how many of the queried periods its sponsor
  // won the gift: one statement, reading the user's rows of the queried periods (a primary-key
  // range of at most retention x wall cap rows).
  absl::StatusOr<SponsorHistoryPage> ListSponsorHistory(absl::string_view app_code, int64_t user_id,
                                                        const SponsorHistoryQuery& query);

  // A sender's row of one gift and the gift's 冠名 (two primary-key reads in one statement),
  // then, unless the sender sent none or is the 冠名, how many senders rank above them (a range
  // of the rank index, at most domain::kExactRankLimit entries).
  absl::StatusOr<StandingRead> ReadStanding(absl::string_view app_code, int64_t user_id,
                                            const std::optional<domain::Period>& period,
                                            absl::string_view gift_id, int64_t sender_user_id);

  // Which of `senders` of gifts on `user_id`'s wall hid (DESIGN §2.18), one answer each: those
  // whose all-time row of that gift on that wall is anonymous (whatever period is read: the
  // safe side), or who opted out (giftwall_sender_privacy). One statement of primary-key reads.
  absl::StatusOr<std::vector<bool>> HiddenSenders(absl::string_view app_code, int64_t user_id,
                                                  absl::Span<const domain::ShownSender> senders);

  // The app's settings and the database's clock, for resolving the period a reader names.
  absl::StatusOr<AppSettingsSnapshot> ReadSettings(absl::string_view app_code);

 private:
  SessionSource& pool_;
};

}  // namespace giftwall::storage

#endif  // GIFTWALL_SERVER_STORAGE_WALL_REPOSITORY_H_
