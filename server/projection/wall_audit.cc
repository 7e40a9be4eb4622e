#include "server/projection/wall_audit.h"

#include <limits>
#include <map>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "server/common/status_macros.h"
#include "server/domain/app_code.h"
#include "server/domain/wall_cap.h"
#include "server/storage/app_settings_store.h"
#include "server/storage/contention.h"
#include "server/storage/sent_wall_store.h"

namespace giftwall::projection {

using storage::AuditStatements;
using storage::Transaction;

namespace {

// The codes the outbox holds `app_code`'s events under, listed on the audit's session.
absl::StatusOr<std::vector<std::string>> OutboxCodesOf(AuditStatements& rows,
                                                       absl::string_view app_code) {
  ASSIGN_OR_RETURN(std::vector<std::string> raw, rows.OutboxAppCodes());
  return domain::GroupOutboxAppCodes(std::move(raw)).Of(std::string(app_code));
}

}  // namespace

absl::StatusOr<WallAudit::AuditedSettings> WallAudit::SettingsOf(storage::SqlConnection& conn,
                                                                 absl::string_view app_code,
                                                                 bool from_settings_change) const {
  const std::string app(app_code);
  ASSIGN_OR_RETURN(storage::AppSettingsSnapshot snapshot,
                   storage::ReadAppSettings(conn, {app}, /*shared_lock=*/false));
  AuditedSettings audited;
  auto settings = snapshot.apps.find(app);
  if (settings == snapshot.apps.end()) return audited;
  audited.keeps_sent_wall = settings->second.keep_sent_wall;
  if (settings->second.kinds.empty()) return audited;
  ASSIGN_OR_RETURN(audited.periods.written,
                   domain::PeriodsToWrite::Make(settings->second, retention_, snapshot.now_ms));
  if (from_settings_change) audited.periods.from_ms = settings->second.changed_at_ms;
  return audited;
}

absl::StatusOr<VerifyReport> WallAudit::Verify(absl::string_view app_code, int64_t user_id,
                                               const std::function<bool()>& cancelled,
                                               size_t max_samples) {
  ASSIGN_OR_RETURN(storage::PooledConnection conn, pool_.Acquire());
  AuditStatements rows(*conn);
  ASSIGN_OR_RETURN(const std::vector<std::string> outbox_codes, OutboxCodesOf(rows, app_code));
  ASSIGN_OR_RETURN(const AuditedSettings settings,
                   SettingsOf(*conn, app_code, /*from_settings_change=*/true));
  const AuditPeriods& periods = settings.periods;
  VerifyReport report;
  int64_t after = user_id > 0 ? user_id - 1 : 0;
  for (;;) {
    if (cancelled && cancelled()) return absl::CancelledError("the verify was cancelled");
    // A snapshot per chunk of users: each user is compared within one (a projection committing
    // meanwhile is not half seen), and no snapshot lasts a whole app, which on a large one would
    // hold InnoDB's purge back for as long.
    ASSIGN_OR_RETURN(const Transaction chunk,
                     Transaction::Begin(*conn, Transaction::Isolation::kConsistentSnapshot));
    int64_t hi = user_id;
    if (user_id <= 0) {
      ASSIGN_OR_RETURN(hi, rows.NextChunkEnd(app_code, after));
      if (hi == after) break;
    }
    RETURN_IF_ERROR(
        VerifyChunk(rows, app_code, outbox_codes, periods, after, hi, max_samples, report));
    if (user_id > 0 || hi == std::numeric_limits<int64_t>::max()) break;
    after = hi;
  }
  if (settings.keeps_sent_wall) {
    RETURN_IF_ERROR(VerifySent(*conn, app_code, user_id, periods, cancelled, max_samples, report));
  }
  return report;
}

absl::Status WallAudit::VerifySent(storage::SqlConnection& conn, absl::string_view app_code,
                                   int64_t sender_user_id, const AuditPeriods& periods,
                                   const std::function<bool()>& cancelled, size_t max_samples,
                                   VerifyReport& report) {
  // The periods compared are those the app's events write now (kept kinds, retained periods):
  // retention prunes the others' rows, the sent rows and the sender rows apart. Only which
  // periods are written counts here, not since when.
  auto uncovered = [&](const domain::SentKey& key) {
    return !key.period.empty() &&
           (!periods.written.has_value() || !periods.written->Written(key.period).has_value());
  };
  storage::SentStatements rows(conn);
  int64_t after = sender_user_id > 0 ? sender_user_id - 1 : 0;
  for (;;) {
    if (cancelled && cancelled()) return absl::CancelledError("the verify was cancelled");
    // The sent rows and the sender rows they sum are written in one transaction: one snapshot
    // sees them agree.
    ASSIGN_OR_RETURN(const Transaction chunk,
                     Transaction::Begin(conn, Transaction::Isolation::kConsistentSnapshot));
    int64_t hi = sender_user_id;
    if (sender_user_id <= 0) {
      ASSIGN_OR_RETURN(hi, rows.NextSenderChunkEnd(app_code, after));
      if (hi == after) break;
    }
    ASSIGN_OR_RETURN(domain::SentWall expected, rows.SumSenderRows(app_code, after, hi));
    ASSIGN_OR_RETURN(domain::SentWall actual, rows.SentRows(app_code, after, hi));
    for (domain::SentWall* wall : {&expected, &actual}) {
      for (auto it = wall->begin(); it != wall->end();) {
        it = uncovered(it->first) ? wall->erase(it) : std::next(it);
      }
    }
    CompareSent(expected, actual, max_samples, report);
    if (sender_user_id > 0 || hi == std::numeric_limits<int64_t>::max()) break;
    after = hi;
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> WallAudit::RecomputeSent(absl::string_view app_code,
                                                 absl::Span<const domain::SentKey> keys,
                                                 const storage::Lease* fence) {
  constexpr size_t kKeysPerTransaction = 100;
  int64_t set = 0;
  for (size_t begin = 0; begin < keys.size(); begin += kKeysPerTransaction) {
    const absl::Span<const domain::SentKey> chunk = keys.subspan(begin, kKeysPerTransaction);
    auto recompute = [&](storage::SqlConnection& conn) -> absl::StatusOr<bool> {
      ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(conn));
      if (fence != nullptr) RETURN_IF_ERROR(storage::LeaseStatements(conn).Fence(*fence));
      RETURN_IF_ERROR(storage::SentStatements(conn).Recompute(app_code, chunk));
      RETURN_IF_ERROR(tx.Commit());
      return true;
    };
    RETURN_IF_ERROR(storage::RunWithContentionRetries<bool>(pool_, retry_, recompute).status());
    set += static_cast<int64_t>(chunk.size());
  }
  return set;
}

absl::StatusOr<int64_t> WallAudit::RebuildSentWall(absl::string_view app_code,
                                                   const std::function<bool()>& cancelled,
                                                   const storage::Lease* fence) {
  VerifyReport report;
  {
    ASSIGN_OR_RETURN(storage::PooledConnection conn, pool_.Acquire());
    ASSIGN_OR_RETURN(const AuditedSettings settings,
                     SettingsOf(*conn, app_code, /*from_settings_change=*/false));
    if (!settings.keeps_sent_wall) return 0;
    RETURN_IF_ERROR(VerifySent(*conn, app_code, 0, settings.periods, cancelled, 0, report));
  }
  return RecomputeSent(app_code, report.drifted_sent, fence);
}

absl::StatusOr<std::unique_ptr<storage::LeaseKeeper>> WallAudit::LockRebuild(
    absl::string_view app_code) {
  const storage::PoolOptions& options = pool_.options();
  absl::StatusOr<std::unique_ptr<storage::LeaseKeeper>> lease = storage::LeaseKeeper::Take(
      options.endpoint, options.session, absl::StrCat("rebuild/", app_code),
      storage::NewLeaseHolder(lease_.who), lease_.duration);
  if (lease.status().code() == absl::StatusCode::kFailedPrecondition) {
    return absl::FailedPreconditionError(absl::StrCat("a rebuild of app_code ", app_code,
                                                      " is already running (",
                                                      lease.status().message(), ")"));
  }
  return lease;
}

absl::StatusOr<VerifyReport> WallAudit::VerifyAndRepair(absl::string_view app_code, int64_t user_id,
                                                        bool repair,
                                                        const std::function<bool()>& cancelled) {
  ASSIGN_OR_RETURN(VerifyReport report, Verify(app_code, user_id, cancelled));
  if (!repair) return report;
  for (int64_t user : report.drifted_users) {
    if (cancelled && cancelled()) return absl::CancelledError("cancelled");
    ASSIGN_OR_RETURN(const bool rebuilt, RebuildUser(app_code, user));
    report.repaired += rebuilt ? 1 : 0;
  }
  ASSIGN_OR_RETURN(report.sent_repaired, RecomputeSent(app_code, report.drifted_sent));
  return report;
}

absl::Status WallAudit::VerifyChunk(AuditStatements& rows, absl::string_view app_code,
                                    const std::vector<std::string>& outbox_codes,
                                    const AuditPeriods& periods, int64_t after, int64_t hi,
                                    size_t max_samples, VerifyReport& report) {
  std::map<int64_t, UserEvidence> users;
  ASSIGN_OR_RETURN(auto walls, rows.WallRows(app_code, after, hi, /*lock=*/false));
  for (auto& [user, wall] : walls) users[user].actual = std::move(wall);
  if (periods.written.has_value()) {
    ASSIGN_OR_RETURN(auto period_walls, rows.PeriodWallRows(app_code, after, hi, /*lock=*/false));
    for (auto& [user, of_user] : period_walls) users[user].actual_periods = std::move(of_user);
  }
  ASSIGN_OR_RETURN(auto done, rows.DoneEvents(app_code, outbox_codes, after, hi));
  AddDoneEvents(app_code, std::move(done), users);
  for (auto& [user, evidence] : users) {
    if (user <= 0) continue;  // dead events whose payload named no user
    CompareUser(user, evidence, periods, max_samples, report);
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> WallAudit::RebuildUser(absl::string_view app_code, int64_t user_id,
                                            const storage::Lease* fence) {
  // The bulk of the reading happens before any lock is taken, so that a user with a long
  // history does not hold up live projection while it is read: under the locks, only the events
  // done since are fetched.
  std::map<int64_t, UserEvidence> before;
  std::vector<std::string> outbox_codes;
  {
    ASSIGN_OR_RETURN(storage::PooledConnection conn, pool_.Acquire());
    AuditStatements rows(*conn);
    ASSIGN_OR_RETURN(outbox_codes, OutboxCodesOf(rows, app_code));
    ASSIGN_OR_RETURN(auto done, rows.DoneEvents(app_code, outbox_codes, user_id - 1, user_id));
    AddDoneEvents(app_code, std::move(done), before);
  }
  std::vector<domain::SentKey> sent_keys;
  ASSIGN_OR_RETURN(
      const bool rebuilt,
      storage::RunWithContentionRetries<bool>(pool_, retry_, [&](storage::SqlConnection& conn) {
        sent_keys.clear();
        return RebuildLocked(conn, app_code, user_id, outbox_codes, before[user_id], fence,
                             sent_keys);
      }));
  if (!sent_keys.empty()) {
    // The walls' sender rows this rebuild rewrote are summed into their senders' sent rows
    // again, once it has committed them. The wall is rebuilt whatever happens here: a failure
    // leaves those sent rows for the next verify --repair (or rebuild), said in the log.
    absl::Status sent = RecomputeSent(app_code, sent_keys, fence).status();
    LOG_IF(WARNING, !sent.ok()) << "rebuild of app " << app_code << " user " << user_id << ": "
                                << sent_keys.size()
                                << " sent-wall row(s) of its senders were not set again (verify "
                                   "--repair sets them): "
                                << sent;
  }
  return rebuilt;
}

absl::StatusOr<bool> WallAudit::RebuildLocked(storage::SqlConnection& conn,
                                              absl::string_view app_code, int64_t user_id,
                                              const std::vector<std::string>& outbox_codes,
                                              const UserEvidence& before,
                                              const storage::Lease* fence,
                                              std::vector<domain::SentKey>& sent_keys) {
  // REPEATABLE READ: the locking reads take next-key locks, so that a projection of a gift new
  // to this wall waits too, not only those of gifts already on it.
  ASSIGN_OR_RETURN(Transaction tx,
                   Transaction::Begin(conn, Transaction::Isolation::kRepeatableRead));
  // A write (it takes no snapshot): a rebuild whose lease went to another writes nothing.
  if (fence != nullptr) RETURN_IF_ERROR(storage::LeaseStatements(conn).Fence(*fence));
  AuditStatements rows(conn);
  std::map<int64_t, UserEvidence> users;
  UserEvidence& evidence = users[user_id] = before;
  ASSIGN_OR_RETURN(auto walls, rows.WallRows(app_code, user_id - 1, user_id, /*lock=*/true));
  evidence.actual = std::move(walls[user_id]);
  ASSIGN_OR_RETURN(auto period_walls,
                   rows.PeriodWallRows(app_code, user_id - 1, user_id, /*lock=*/true));
  evidence.actual_periods = std::move(period_walls[user_id]);
  // The first plain read: the snapshot is taken now, with every lock held.
  ASSIGN_OR_RETURN(const std::set<std::string> done, rows.DoneEventIds(app_code, user_id));
  for (auto it = evidence.events.begin(); it != evidence.events.end();) {
    it = done.count(it->first) > 0 ? std::next(it) : evidence.events.erase(it);
  }
  for (const std::string& id : done) {
    if (evidence.events.count(id) > 0 || !evidence.unverifiable.empty()) continue;
    ASSIGN_OR_RETURN(auto event, rows.DoneEvent(app_code, outbox_codes, id));
    AddDoneEvents(app_code, std::move(event), users);
  }
  ASSIGN_OR_RETURN(const AuditedSettings settings,
                   SettingsOf(conn, app_code, /*from_settings_change=*/false));
  absl::StatusOr<RebuildPlan> plan = PlanRebuild(evidence, settings.periods, max_wall_gifts_);
  if (!plan.ok()) return false;
  if (!plan->killed.empty()) {
    LOG(WARNING) << "rebuild of app " << app_code << " user " << user_id << ": "
                 << plan->gifts_beyond_cap << " gift(s) beyond the cap of " << max_wall_gifts_
                 << ", their " << plan->killed.size() << " event(s) go dead";
    RETURN_IF_ERROR(rows.KillDoneEvents(app_code, plan->killed,
                                        domain::WallCapReason(user_id, max_wall_gifts_)));
  }
  for (const auto& [gift_id, row] : plan->gifts) {
    RETURN_IF_ERROR(rows.ReplaceGift(app_code, user_id, "", gift_id, row ? &*row : nullptr));
  }
  if (settings.keeps_sent_wall) {
    sent_keys = plan->SentKeys(evidence.actual, evidence.actual_periods);
  }
  for (const auto& [period_gift, row] : plan->period_gifts) {
    const auto& [period, gift_id] = period_gift;
    RETURN_IF_ERROR(rows.ReplaceGift(app_code, user_id, period, gift_id, row ? &*row : nullptr));
  }
  RETURN_IF_ERROR(tx.Commit());
  return true;
}

}  // namespace giftwall::projection
