// What a projection group needs of the database, as the group state machine sees it: one
// session per attempt, with the set-based statements of storage::ProjectionStore. The service
// runs it on MySQL/MariaDB (MysqlGroupStore); unit tests drive the machine with a fake. Errors
// carry their kind (storage::ErrorKindOf), which is all the machine looks at.
#ifndef GIFTWALL_SERVER_PROJECTION_GROUP_STORE_H_
#define GIFTWALL_SERVER_PROJECTION_GROUP_STORE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "server/domain/sent_wall.h"
#include "server/domain/wall_fold.h"
#include "server/storage/app_settings_store.h"
#include "server/storage/connection_pool.h"
#include "server/storage/projection_store.h"

namespace giftwall::projection {

// One session. Reads run outside a transaction; writes inside the one Begin opens. A
// transaction that is not committed is rolled back by Rollback or when the session goes.
class GroupSession {
 public:
  virtual ~GroupSession() = default;

  virtual absl::StatusOr<storage::LedgerSnapshot> ReadLedger(
      absl::string_view app_code, absl::Span<const std::string> event_ids) = 0;

  // The settings of `app_codes` (those that have any), share-locked until the transaction ends:
  // a group folds with the settings it read in its own transaction (DESIGN §2.15).
  virtual absl::StatusOr<storage::AppSettingsSnapshot> ReadSettings(
      absl::Span<const std::string> app_codes) = 0;

  virtual absl::Status Begin() = 0;
  virtual absl::Status Commit() = 0;
  virtual void Rollback() = 0;

  // Returns the event ids whose rows existed (storage::ProjectionStore::InsertLedger).
  virtual absl::StatusOr<std::vector<std::string>> InsertLedger(
      absl::string_view app_code, absl::Span<const storage::LedgerWrite> rows) = 0;
  virtual absl::Status InsertLedgerIfAbsent(absl::string_view app_code,
                                            absl::Span<const storage::LedgerWrite> rows) = 0;
  virtual absl::StatusOr<int64_t> UpdateLedger(absl::string_view app_code,
                                               absl::Span<const storage::LedgerWrite> rows) = 0;
  virtual absl::StatusOr<storage::MergedSenders> MergeSenders(absl::string_view app_code,
                                                              const domain::WallDeltas& deltas) = 0;
  virtual absl::StatusOr<int64_t> MergeWalls(
      absl::string_view app_code, const domain::WallDeltas& deltas,
      const std::map<domain::WallKey, domain::SenderMerge>& senders) = 0;
  // Adds the deltas to the senders' sent rows (storage::SentStatements::Merge).
  virtual absl::Status MergeSent(absl::string_view app_code, const domain::SentDeltas& deltas) = 0;
  virtual absl::StatusOr<std::map<int64_t, int64_t>> WallsOverCap(
      absl::string_view app_code, absl::Span<const int64_t> user_ids, int64_t cap) = 0;
  virtual absl::StatusOr<std::map<domain::WallKey, int64_t>> GiftCounts(
      absl::string_view app_code, absl::Span<const domain::WallKey> keys) = 0;

  // Whether the session is gone (lost, killed): nothing more can be written on it.
  virtual bool broken() const = 0;
};

class GroupStore {
 public:
  virtual ~GroupStore() = default;
  // A session for one attempt; UNAVAILABLE when none can be had.
  virtual absl::StatusOr<std::unique_ptr<GroupSession>> Open() = 0;
};

// The store on a pool of MySQL/MariaDB sessions.
class MysqlGroupStore final : public GroupStore {
 public:
  explicit MysqlGroupStore(storage::ConnectionPool& pool) : pool_(pool) {}
  absl::StatusOr<std::unique_ptr<GroupSession>> Open() override;

 private:
  storage::ConnectionPool& pool_;
};

}  // namespace giftwall::projection

#endif  // GIFTWALL_SERVER_PROJECTION_GROUP_STORE_H_
