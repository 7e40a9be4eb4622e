// What verify and rebuild decide, without the database (DESIGN §3, VerifyGiftWall and
// RebuildGiftWall): which users can be recomputed from their done events and why not, the wall
// those events fold into, how a wall drifted from it, and what a rebuild rewrites (the gifts
// that differ, and the cap's share: gifts beyond it come off, their events go dead).
#ifndef GIFTWALL_SERVER_PROJECTION_AUDIT_PLAN_H_
#define GIFTWALL_SERVER_PROJECTION_AUDIT_PLAN_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/domain/app_settings.h"
#include "server/domain/sent_wall.h"
#include "server/domain/wall_fold.h"
#include "server/storage/wall_audit_repository.h"

namespace giftwall::projection {

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
  int64_t repaired = 0;                     // drifted users rebuilt (VerifyAndRepair)
  // The sent wall (DESIGN §2.19), for an app that keeps one: its rows that differ from the sum
  // of their sender rows, in key order, and how many of them the repair set again.
  std::vector<domain::SentKey> drifted_sent;
  int64_t sent_repaired = 0;
};

// What the database holds for one user, and what its done events say it should hold.
struct UserEvidence {
  std::map<std::string, domain::FoldEvent> events;  // by event id
  std::string unverifiable;  // why the user cannot be recomputed; empty if it can
  domain::UserWall actual;
  std::map<std::string, domain::UserWall> actual_periods;  // by period name
};

// The period walls an audit covers (DESIGN §2.15): those the app's events write now (kept kinds,
// retained periods), and of those, only the ones that began at or after `from_ms`. Verify starts
// at the settings' last change (periods before it lack what was folded before it: not drift);
// rebuild covers them all.
struct AuditPeriods {
  std::optional<domain::PeriodsToWrite> written;  // none: the app keeps no period walls
  int64_t from_ms = INT64_MIN;

  // The names of the covered periods an event falls in.
  std::vector<std::string> Of(int64_t occurred_at_ms) const;
  bool Covers(const std::string& period_name) const;
};

// Adds done events to their users' evidence, with the same rules as every path that projects
// (envelope, then payload): an event whose outbox row is gone, or no longer folds into its
// user, makes the user unverifiable.
void AddDoneEvents(absl::string_view app_code, std::vector<storage::DoneEventRow> rows,
                   std::map<int64_t, UserEvidence>& users);

// The fold of a user's events, or FAILED_PRECONDITION saying why it cannot be computed (also
// recorded in `evidence.unverifiable`). A user with wall rows but no done events at all has no
// evidence in the ledger (pruned, or from before it): left alone too.
absl::StatusOr<domain::UserWall> ExpectedWall(UserEvidence& evidence);

// What the user's covered period walls must hold: the fold of its events, less `left_out` (the
// events of gifts beyond the cap, which go dead).
absl::StatusOr<std::map<std::string, domain::UserWall>> ExpectedPeriodWalls(
    const UserEvidence& evidence, const AuditPeriods& periods,
    const std::set<std::string>& left_out = {});

// Compares one user's wall, and its covered period walls, with the fold of its events into
// `report`, keeping at most `max_samples` differences in all.
void CompareUser(int64_t user_id, UserEvidence& evidence, const AuditPeriods& periods,
                 size_t max_samples, VerifyReport& report);

// Compares the sent rows of some senders with what their sender rows sum to (`expected`), into
// `report`: the rows compared and drifted, the drifted keys, samples with the sender as user_id
// and period "sent".
void CompareSent(const domain::SentWall& expected, const domain::SentWall& actual,
                 size_t max_samples, VerifyReport& report);

// What a rebuild of one user writes.
struct RebuildPlan {
  // The gifts to rewrite, with the row each must hold (none: removed).
  std::map<std::string, std::optional<domain::WallRow>> gifts;
  // The same for the covered period walls, by (period name, gift).
  std::map<std::pair<std::string, std::string>, std::optional<domain::WallRow>> period_gifts;
  size_t gifts_beyond_cap = 0;
  std::vector<std::string> killed;  // done events of the gifts beyond the cap: to go dead

  // The sent rows (§2.19) whose sums the rewrite changes, given the rows the walls held
  // (`actual`, all-time, and `actual_periods`, by period name): the senders of each rewritten
  // gift, before and after, all-time and of each rewritten period.
  std::vector<domain::SentKey> SentKeys(
      const domain::UserWall& actual,
      const std::map<std::string, domain::UserWall>& actual_periods) const;
};

// Only the gifts that differ are rewritten; a wall is kept within `max_wall_gifts` as live
// projection would have kept it. FAILED_PRECONDITION if the user cannot be recomputed.
absl::StatusOr<RebuildPlan> PlanRebuild(UserEvidence& evidence, const AuditPeriods& periods,
                                        int64_t max_wall_gifts);

}  // namespace giftwall::projection

#endif  // GIFTWALL_SERVER_PROJECTION_AUDIT_PLAN_H_
