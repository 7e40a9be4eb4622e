#include "server/projection/audit_plan.h"

#include <set>
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

void CompareUser(int64_t user_id, UserEvidence& evidence, size_t max_samples,
                 VerifyReport& report) {
  ++report.users_checked;
  absl::StatusOr<domain::UserWall> expected = ExpectedWall(evidence);
  if (!expected.ok()) {
    report.unverifiable_users.push_back(user_id);
    return;
  }
  int64_t rows = 0;
  std::vector<domain::WallDifference> diffs =
      domain::DiffUserWalls(*expected, evidence.actual, &rows);
  report.rows_checked += rows;
  if (diffs.empty()) return;
  report.drifted_users.push_back(user_id);
  std::set<std::pair<std::string, int64_t>> drifted_rows;
  for (domain::WallDifference& d : diffs) {
    drifted_rows.insert({d.gift_id, d.sender_user_id});
    if (report.samples.size() < max_samples) report.samples.push_back({user_id, std::move(d)});
  }
  report.drifted += static_cast<int64_t>(drifted_rows.size());
}

absl::StatusOr<RebuildPlan> PlanRebuild(UserEvidence& evidence, int64_t max_wall_gifts) {
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
  return plan;
}

}  // namespace giftwall::projection
