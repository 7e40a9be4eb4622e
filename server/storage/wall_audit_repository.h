// Verify and rebuild: the wall recomputed from the events the ledger says are done, and compared
// with (or written over) what the wall holds (DESIGN §3, VerifyGiftWall and RebuildGiftWall).
#ifndef GIFTWALL_SERVER_STORAGE_WALL_AUDIT_REPOSITORY_H_
#define GIFTWALL_SERVER_STORAGE_WALL_AUDIT_REPOSITORY_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/domain/backoff.h"
#include "server/domain/wall_cap.h"
#include "server/domain/wall_fold.h"
#include "server/storage/connection_pool.h"

namespace giftwall::storage {

struct WallDrift {
  int64_t user_id = 0;
  domain::WallDifference difference;
};

struct VerifyReport {
  int64_t users_checked = 0;
  int64_t rows_checked = 0;
  int64_t drifted = 0;                      // rows that differ
  std::vector<int64_t> drifted_users;       // ascending
  std::vector<int64_t> unverifiable_users;  // ascending
  std::vector<WallDrift> samples;           // the first few differences
};

// Holds the database-wide "one rebuild per app" lock until destroyed.
class RebuildLock {
 public:
  RebuildLock(RebuildLock&& other) noexcept
      : conn_(std::exchange(other.conn_, std::nullopt)), app_code_(std::move(other.app_code_)) {}
  RebuildLock& operator=(RebuildLock&&) = delete;
  ~RebuildLock();

 private:
  friend class WallAuditRepository;
  RebuildLock(PooledConnection conn, std::string app_code)
      : conn_(std::move(conn)), app_code_(std::move(app_code)) {}
  std::optional<PooledConnection> conn_;
  std::string app_code_;
};

class WallAuditRepository {
 public:
  // `max_wall_gifts`: rebuild keeps a wall within the cap as projection does (DESIGN §2.14).
  WallAuditRepository(ConnectionPool& pool, domain::RetryPolicy retry,
                      int64_t max_wall_gifts = domain::kDefaultMaxWallGifts)
      : pool_(pool), retry_(retry), max_wall_gifts_(max_wall_gifts) {}

  // Compares the walls of one app (or one user, if user_id > 0) with the fold of their done
  // events, all read in one consistent snapshot. Users with done events whose outbox rows are
  // gone (or no longer parse) cannot be recomputed: they are listed as unverifiable and not
  // compared.
  // `cancelled`, if given, is asked between chunks of users: true ends the verify (CANCELLED).
  absl::StatusOr<VerifyReport> Verify(absl::string_view app_code, int64_t user_id,
                                      const std::function<bool()>& cancelled = nullptr,
                                      size_t max_samples = 20);

  // Rebuilds one user's wall: locks the user's wall and sender rows (and the gaps between them,
  // so a concurrent projection of a new gift waits too), folds the user's done events as
  // committed at that moment, and replaces the rows that differ. A projection that was waiting
  // applies on top. Returns false, changing nothing, if the user cannot be recomputed.
  absl::StatusOr<bool> RebuildUser(absl::string_view app_code, int64_t user_id);

  // Every user of the app with a ledger row or a wall row, ascending.
  absl::StatusOr<std::vector<int64_t>> ListUsers(absl::string_view app_code);

  // Takes the app's rebuild lock, or FAILED_PRECONDITION if another rebuild (in any process)
  // holds it.
  absl::StatusOr<RebuildLock> LockRebuild(absl::string_view app_code);

 private:
  ConnectionPool& pool_;
  const domain::RetryPolicy retry_;
  const int64_t max_wall_gifts_;
};

}  // namespace giftwall::storage

#endif  // GIFTWALL_SERVER_STORAGE_WALL_AUDIT_REPOSITORY_H_
