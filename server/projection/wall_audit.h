// Verify and rebuild (DESIGN §3, VerifyGiftWall and RebuildGiftWall): the wall recomputed from
// the events the ledger says are done, and compared with (or written over) what the wall holds.
// audit_plan decides; this reads and writes through storage::AuditStatements.
#ifndef GIFTWALL_SERVER_PROJECTION_WALL_AUDIT_H_
#define GIFTWALL_SERVER_PROJECTION_WALL_AUDIT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "server/domain/app_settings.h"
#include "server/domain/backoff.h"
#include "server/domain/wall_cap.h"
#include "server/projection/audit_plan.h"
#include "server/storage/connection_pool.h"
#include "server/storage/lease_store.h"
#include "server/storage/wall_audit_repository.h"

namespace giftwall::projection {

class WallAudit {
 public:
  // `max_wall_gifts`: rebuild keeps a wall within the cap as projection does (DESIGN §2.14).
  // `retention`: the period walls covered are those projection writes (DESIGN §2.15).
  // `lease`: who takes the rebuild leases, for how long (DESIGN §2.20).
  WallAudit(storage::ConnectionPool& pool, domain::RetryPolicy retry,
            int64_t max_wall_gifts = domain::kDefaultMaxWallGifts,
            domain::PeriodRetention retention = {}, storage::LeaseOptions lease = {})
      : pool_(pool),
        repository_(pool),
        retry_(retry),
        max_wall_gifts_(max_wall_gifts),
        retention_(std::move(retention)),
        lease_(std::move(lease)) {}

  // Compares the walls of one app (or one user, if user_id > 0) with the fold of their done
  // events, each chunk of users read in one consistent snapshot. Users with done events whose
  // outbox rows are gone (or no longer parse) cannot be recomputed: they are listed as
  // unverifiable and not compared. Period walls are compared from the settings' last change on
  // (AuditPeriods); UNAVAILABLE if the app's zone cannot be loaded.
  // `cancelled`, if given, is asked between chunks of users: true ends the verify (CANCELLED).
  absl::StatusOr<VerifyReport> Verify(absl::string_view app_code, int64_t user_id,
                                      const std::function<bool()>& cancelled = nullptr,
                                      size_t max_samples = 20);

  // VerifyGiftWall: Verify, then, with `repair`, RebuildUser for each drifted user (`cancelled`
  // is asked between two).
  absl::StatusOr<VerifyReport> VerifyAndRepair(absl::string_view app_code, int64_t user_id,
                                               bool repair,
                                               const std::function<bool()>& cancelled = nullptr);

  // Rebuilds one user's wall: locks the user's wall and sender rows (and the gaps between them,
  // so a concurrent projection of a new gift waits too), then its period rows, folds the user's
  // done events as committed at that moment, and replaces the rows that differ, of every
  // retained period of a kept kind too. A projection that was waiting applies on top. Returns
  // false, changing nothing, if the user cannot be recomputed. With `fence` (a rebuild's lease),
  // the transaction checks the lease first: FAILED_PRECONDITION, changing nothing, once lost.
  absl::StatusOr<bool> RebuildUser(absl::string_view app_code, int64_t user_id,
                                   const storage::Lease* fence = nullptr);

  // Sets the sent rows of `keys` (in key order) to the sum of their sender rows, a chunk of keys
  // per transaction (each checking `fence` first, if given); returns how many were set.
  absl::StatusOr<int64_t> RecomputeSent(absl::string_view app_code,
                                        absl::Span<const domain::SentKey> keys,
                                        const storage::Lease* fence = nullptr);
  // RebuildGiftWall's last step, after every user's wall: the sent rows that differ from the sum
  // of their sender rows are set again, under `fence`. Returns how many.
  absl::StatusOr<int64_t> RebuildSentWall(absl::string_view app_code,
                                          const std::function<bool()>& cancelled,
                                          const storage::Lease* fence);

  // Every user of the app with a ledger row or a wall row, ascending.
  absl::StatusOr<std::vector<int64_t>> ListUsers(absl::string_view app_code) {
    return repository_.ListUsers(app_code);
  }
  // The app's rebuild lease (`rebuild/<app>`), kept until destroyed; FAILED_PRECONDITION if
  // another rebuild (in any process, through any database node) holds it.
  absl::StatusOr<std::unique_ptr<storage::LeaseKeeper>> LockRebuild(absl::string_view app_code);

 private:
  // Verifies the users in (after, hi] into `report`, on a snapshot of their own.
  absl::Status VerifyChunk(storage::AuditStatements& rows, absl::string_view app_code,
                           const std::vector<std::string>& outbox_codes,
                           const AuditPeriods& periods, int64_t after, int64_t hi,
                           size_t max_samples, VerifyReport& report);
  // What the app's settings say the audit compares, read on `conn`: the period walls its events
  // write now (from the settings' last change on, or all of them), and whether it keeps a sent
  // wall.
  struct AuditedSettings {
    AuditPeriods periods;
    bool keeps_sent_wall = false;
  };
  absl::StatusOr<AuditedSettings> SettingsOf(storage::SqlConnection& conn,
                                             absl::string_view app_code,
                                             bool from_settings_change) const;
  // The sent wall (DESIGN §2.19), of an app that keeps one: its rows of every sender (or of one,
  // if sender_user_id > 0), in the periods `periods` writes, compared with the sum of their
  // sender rows, each chunk of senders in one snapshot on `conn`, into `report`.
  absl::Status VerifySent(storage::SqlConnection& conn, absl::string_view app_code,
                          int64_t sender_user_id, const AuditPeriods& periods,
                          const std::function<bool()>& cancelled, size_t max_samples,
                          VerifyReport& report);
  // The rebuild's transaction, under the locks: `before` is what was read before them.
  absl::StatusOr<bool> RebuildLocked(storage::SqlConnection& conn, absl::string_view app_code,
                                     int64_t user_id, const std::vector<std::string>& outbox_codes,
                                     const UserEvidence& before, const storage::Lease* fence,
                                     std::vector<domain::SentKey>& sent_keys);

  storage::ConnectionPool& pool_;
  storage::WallAuditRepository repository_;
  const domain::RetryPolicy retry_;
  const int64_t max_wall_gifts_;
  const domain::PeriodRetention retention_;
  const storage::LeaseOptions lease_;
};

}  // namespace giftwall::projection

#endif  // GIFTWALL_SERVER_PROJECTION_WALL_AUDIT_H_
