#include "server/projection/audit_plan.h"

#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/domain/envelope.h"
#include "server/domain/gift_payload.h"
#include "server/domain/wall_cap.h"

namespace giftwall::projection {

void AddDoneEvents(absl::string_view app_code, std::vector<storage::DoneEventRow> rows,
                   std::map<int64_t, UserEvidence>& users) {
  for (storage::DoneEventRow& e : rows) {
    UserEvidence& evidence = users[e.user_id];
    if (!evidence.unverifiable.empty()) continue;
    if (!e.in_outbox) {
      evidence.unverifiable = absl::StrCat("the outbox row of done event ", e.event_id, " is gone");
      continue;
    }
    absl::StatusOr<domain::GiftPayload> gift = domain::ParseGiftEvent(domain::GiftEvent{
        std::string(app_code), e.event_id, std::move(e.payload), e.created_at_ms});
    if (!domain::IsGiftEvent(e.event_type) || !gift.ok() || gift->target_user_id != e.user_id) {
      evidence.unverifiable =
          absl::StrCat("the outbox row of done event ", e.event_id, " no longer folds into it");
      continue;
    }
    evidence.events[e.event_id] = domain::FoldEvent{e.event_id, e.created_at_ms, *std::move(gift)};
  }
}

absl::StatusOr<domain::UserWall> ExpectedWall(UserEvidence& evidence) {
  if (evidence.unverifiable.empty() && evidence.events.empty() && !evidence.actual.empty()) {
    evidence.unverifiable = "wall rows but no done events in the ledger";
  }
  if (!evidence.unverifiable.empty()) return absl::FailedPreconditionError(evidence.unverifiable);
  std::vector<domain::FoldEvent> events;
  events.reserve(evidence.events.size());
  for (const auto& [id, e] : evidence.events) events.push_back(e);
  absl::StatusOr<domain::UserWall> wall = domain::FoldUserWall(events);
  if (!wall.ok()) {
    evidence.unverifiable = std::string(wall.status().message());
    return absl::FailedPreconditionError(evidence.unverifiable);
  }
  return wall;
}

std::vector<std::string> AuditPeriods::Of(int64_t occurred_at_ms) const {
  std::vector<std::string> names;
  if (!written.has_value()) return names;
  for (const domain::Period& period : written->Of(occurred_at_ms)) {
    if (period.start_ms >= from_ms) names.push_back(period.Name());
  }
  return names;
}

bool AuditPeriods::Covers(const std::string& period_name) const {
  if (!written.has_value()) return false;
  const std::optional<domain::Period> period = written->Written(period_name);
  return period.has_value() && period->start_ms >= from_ms;
}

absl::StatusOr<std::map<std::string, domain::UserWall>> ExpectedPeriodWalls(
    const UserEvidence& evidence, const AuditPeriods& periods,
    const std::set<std::string>& left_out) {
  std::vector<domain::FoldEvent> events;
  for (const auto& [id, e] : evidence.events) {
    if (left_out.count(id) > 0) continue;
    domain::FoldEvent event = e;
    event.periods = periods.Of(e.occurred_at_ms);
    if (!event.periods.empty()) events.push_back(std::move(event));
  }
  return domain::FoldUserPeriodWalls(events);
}

namespace {

// The covered period walls the user holds.
std::map<std::string, domain::UserWall> ActualPeriodWalls(const UserEvidence& evidence,
                                                          const AuditPeriods& periods) {
  std::map<std::string, domain::UserWall> actual;
  for (const auto& [name, wall] : evidence.actual_periods) {
    if (periods.Covers(name)) actual.emplace(name, wall);
  }
  return actual;
}

// Every period either side has, in order.
std::set<std::string> PeriodsOfEither(const std::map<std::string, domain::UserWall>& a,
                                      const std::map<std::string, domain::UserWall>& b) {
  std::set<std::string> names;
  for (const auto& [name, wall] : a) names.insert(name);
  for (const auto& [name, wall] : b) names.insert(name);
  return names;
}

const domain::UserWall& WallOf(const std::map<std::string, domain::UserWall>& walls,
                               const std::string& period) {
  static const auto* const kEmpty = new domain::UserWall();
  auto it = walls.find(period);
  return it == walls.end() ? *kEmpty : it->second;
}

}  // namespace

void CompareUser(int64_t user_id, UserEvidence& evidence, const AuditPeriods& periods,
                 size_t max_samples, VerifyReport& report) {
  ++report.users_checked;
  absl::StatusOr<domain::UserWall> expected = ExpectedWall(evidence);
  absl::StatusOr<std::map<std::string, domain::UserWall>> expected_periods =
      expected.ok() ? ExpectedPeriodWalls(evidence, periods) : expected.status();
  if (!expected_periods.ok()) {
    report.unverifiable_users.push_back(user_id);
    return;
  }
  int64_t rows = 0;
  std::vector<domain::WallDifference> diffs =
      domain::DiffUserWalls(*expected, evidence.actual, &rows);
  const std::map<std::string, domain::UserWall> actual_periods =
      ActualPeriodWalls(evidence, periods);
  for (const std::string& period : PeriodsOfEither(*expected_periods, actual_periods)) {
    int64_t period_rows = 0;
    for (domain::WallDifference& d : domain::DiffUserWalls(
             WallOf(*expected_periods, period), WallOf(actual_periods, period), &period_rows)) {
      d.period = period;
      diffs.push_back(std::move(d));
    }
    rows += period_rows;
  }
  report.rows_checked += rows;
  if (diffs.empty()) return;
  report.drifted_users.push_back(user_id);
  std::set<std::tuple<std::string, std::string, int64_t>> drifted_rows;
  for (domain::WallDifference& d : diffs) {
    drifted_rows.insert({d.period, d.gift_id, d.sender_user_id});
    if (report.samples.size() < max_samples) report.samples.push_back({user_id, std::move(d)});
  }
  report.drifted += static_cast<int64_t>(drifted_rows.size());
}

void CompareSent(const domain::SentWall& expected, const domain::SentWall& actual,
                 size_t max_samples, VerifyReport& report) {
  int64_t rows = 0;
  std::vector<domain::WallDifference> diffs = domain::DiffSentWalls(expected, actual, &rows);
  report.rows_checked += rows;
  if (diffs.empty()) return;
  // The rows that differ, in key order: those on one side only, and those whose values differ.
  std::set<domain::SentKey> drifted;
  for (const auto* side : {&expected, &actual}) {
    const domain::SentWall& other = side == &expected ? actual : expected;
    for (const auto& [key, row] : *side) {
      auto it = other.find(key);
      if (it == other.end() || !(it->second == row)) drifted.insert(key);
    }
  }
  report.drifted += static_cast<int64_t>(drifted.size());
  report.drifted_sent.insert(report.drifted_sent.end(), drifted.begin(), drifted.end());
  for (domain::WallDifference& d : diffs) {
    if (report.samples.size() >= max_samples) break;
    const int64_t sender = d.sender_user_id;
    report.samples.push_back({sender, std::move(d)});
  }
}

std::vector<domain::SentKey> RebuildPlan::SentKeys(
    const domain::UserWall& actual,
    const std::map<std::string, domain::UserWall>& actual_periods) const {
  std::set<domain::SentKey> keys;
  for (const auto& [gift_id, row] : gifts) {
    if (auto it = actual.find(gift_id); it != actual.end()) {
      for (const auto& [sender, sent] : it->second.senders) keys.insert({sender, gift_id});
    }
    if (row.has_value()) {
      for (const auto& [sender, sent] : row->senders) keys.insert({sender, gift_id});
    }
  }
  for (const auto& [period_gift, row] : period_gifts) {
    const auto& [period, gift_id] = period_gift;
    if (auto wall = actual_periods.find(period); wall != actual_periods.end()) {
      if (auto it = wall->second.find(gift_id); it != wall->second.end()) {
        for (const auto& [sender, sent] : it->second.senders)
          keys.insert({sender, gift_id, period});
      }
    }
    if (row.has_value()) {
      for (const auto& [sender, sent] : row->senders) keys.insert({sender, gift_id, period});
    }
  }
  return std::vector<domain::SentKey>(keys.begin(), keys.end());
}

absl::StatusOr<RebuildPlan> PlanRebuild(UserEvidence& evidence, const AuditPeriods& periods,
                                        int64_t max_wall_gifts) {
  absl::StatusOr<domain::UserWall> expected = ExpectedWall(evidence);
  if (!expected.ok()) return expected.status();
  RebuildPlan plan;
  const std::set<std::string> beyond = domain::GiftsBeyondCap(*expected, max_wall_gifts);
  plan.gifts_beyond_cap = beyond.size();
  for (const std::string& gift_id : beyond) expected->erase(gift_id);
  for (const auto& [id, event] : evidence.events) {
    if (beyond.count(event.gift.gift_id) > 0) plan.killed.push_back(id);
  }
  for (const domain::WallDifference& d : domain::DiffUserWalls(*expected, evidence.actual)) {
    auto it = expected->find(d.gift_id);
    plan.gifts[d.gift_id] =
        it == expected->end() ? std::nullopt : std::optional<domain::WallRow>(it->second);
  }
  const std::set<std::string> killed(plan.killed.begin(), plan.killed.end());
  absl::StatusOr<std::map<std::string, domain::UserWall>> expected_periods =
      ExpectedPeriodWalls(evidence, periods, killed);
  if (!expected_periods.ok()) return expected_periods.status();
  const std::map<std::string, domain::UserWall> actual_periods =
      ActualPeriodWalls(evidence, periods);
  for (const std::string& period : PeriodsOfEither(*expected_periods, actual_periods)) {
    const domain::UserWall& wall = WallOf(*expected_periods, period);
    for (const domain::WallDifference& d :
         domain::DiffUserWalls(wall, WallOf(actual_periods, period))) {
      auto it = wall.find(d.gift_id);
      plan.period_gifts[{period, d.gift_id}] =
          it == wall.end() ? std::nullopt : std::optional<domain::WallRow>(it->second);
    }
  }
  return plan;
}

}  // namespace giftwall::projection
