// A GroupStore in memory, for driving the group state machine without a database: the ledger,
// sender and wall rows of each app, merged as storage's statements merge them (with the fold's
// own functions), transactions that roll back to where they began, and failures injected per
// call with the kind storage would give them. Single-threaded.
#ifndef GIFTWALL_TESTS_PROJECTION_FAKE_GROUP_STORE_H_
#define GIFTWALL_TESTS_PROJECTION_FAKE_GROUP_STORE_H_

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/common/status_macros.h"
#include "server/domain/ledger_policy.h"
#include "server/domain/wall_fold.h"
#include "server/projection/group_store.h"
#include "server/storage/db_error.h"

namespace giftwall::projection::testing {

enum class Call {
  kOpen,
  kReadLedger,
  kReadSettings,
  kBegin,
  kCommit,
  kInsertLedger,
  kInsertLedgerIfAbsent,
  kUpdateLedger,
  kMergeSenders,
  kMergeWalls,
  kMergeSent,
  kWallsOverCap,
  kGiftCounts,
};

// An error of `kind`, as storage would return it.
inline absl::Status DbError(storage::DbErrorKind kind, absl::string_view what) {
  const absl::StatusCode code = kind == storage::DbErrorKind::kUnavailable
                                    ? absl::StatusCode::kUnavailable
                                : storage::IsContention(kind) ? absl::StatusCode::kAborted
                                                              : absl::StatusCode::kInternal;
  return storage::WithErrorKind(absl::Status(code, what), kind);
}

// A ledger row as the fake keeps it, with what a test looks at.
struct FakeLedgerRow {
  domain::LedgerRow row;
  int64_t retry_after_ms = 0;
  int requeue_count = 0;
};

struct FakeApp {
  std::map<std::string, FakeLedgerRow> ledger;       // by event id
  std::map<domain::WallKey, domain::WallRow> walls;  // all-time and period rows
  domain::SentWall sent;
};

class FakeGroupStore final : public GroupStore {
 public:
  // The next `times` calls of `call` fail with `status`; -1: every call from now on.
  void Fail(Call call, absl::Status status, int times = 1) {
    failures_[call].push_back({std::move(status), times});
  }
  int calls(Call call) const {
    auto it = calls_.find(call);
    return it == calls_.end() ? 0 : it->second;
  }
  // Called before each call's effect; may change the store (another caller's commit).
  void Before(Call call, std::function<void(FakeGroupStore&)> hook) {
    hooks_[call] = std::move(hook);
  }

  std::map<std::string, FakeApp>& apps() { return apps_; }
  // Apps' settings (DESIGN §2.15): none, the all-time wall only.
  std::map<std::string, domain::AppSettings> settings;
  FakeApp& app(const std::string& code = "demo") { return apps_[code]; }
  int64_t now_ms = 1'800'000'000'000;
  bool broken_sessions = false;  // sessions say they are broken once a call failed

  absl::StatusOr<std::unique_ptr<GroupSession>> Open() override;

  // For the session: counts `call`, runs its hook, and returns its injected failure, if any.
  absl::Status Enter(Call call) {
    ++calls_[call];
    if (auto hook = hooks_.find(call); hook != hooks_.end()) {
      auto run = std::move(hook->second);
      hooks_.erase(hook);
      run(*this);
    }
    auto it = failures_.find(call);
    if (it == failures_.end() || it->second.empty()) return absl::OkStatus();
    auto& [status, times] = it->second.front();
    absl::Status failure = status;
    if (times > 0 && --times == 0) it->second.pop_front();
    return failure;
  }

 private:
  std::map<std::string, FakeApp> apps_;
  std::map<Call, int> calls_;
  std::map<Call, std::deque<std::pair<absl::Status, int>>> failures_;
  std::map<Call, std::function<void(FakeGroupStore&)>> hooks_;
};

class FakeGroupSession final : public GroupSession {
 public:
  explicit FakeGroupSession(FakeGroupStore& store) : store_(store) {}
  ~FakeGroupSession() override { Rollback(); }

  absl::StatusOr<storage::LedgerSnapshot> ReadLedger(
      absl::string_view app_code, absl::Span<const std::string> event_ids) override {
    RETURN_IF_ERROR(Failure(Call::kReadLedger));
    storage::LedgerSnapshot snapshot;
    snapshot.now_ms = store_.now_ms;
    FakeApp& app = store_.apps()[std::string(app_code)];
    for (const std::string& id : event_ids) {
      if (auto it = app.ledger.find(id); it != app.ledger.end()) {
        snapshot.rows.emplace(id, it->second.row);
      }
    }
    return snapshot;
  }
  absl::StatusOr<storage::AppSettingsSnapshot> ReadSettings(
      absl::Span<const std::string> app_codes) override {
    RETURN_IF_ERROR(Failure(Call::kReadSettings));
    storage::AppSettingsSnapshot snapshot;
    snapshot.now_ms = store_.now_ms;
    for (const std::string& app : app_codes) {
      if (auto it = store_.settings.find(app); it != store_.settings.end()) {
        snapshot.apps.insert(*it);
      }
    }
    return snapshot;
  }
  absl::Status Begin() override {
    RETURN_IF_ERROR(Failure(Call::kBegin));
    began_ = store_.apps();
    return absl::OkStatus();
  }
  absl::Status Commit() override {
    RETURN_IF_ERROR(Failure(Call::kCommit));
    began_.reset();
    return absl::OkStatus();
  }
  void Rollback() override {
    if (began_.has_value()) store_.apps() = *std::move(began_);
    began_.reset();
  }

  // As on MariaDB: rows that exist are skipped and named. (MySQL's duplicate-key error is
  // injected with Fail.)
  absl::StatusOr<std::vector<std::string>> InsertLedger(
      absl::string_view app_code, absl::Span<const storage::LedgerWrite> rows) override {
    RETURN_IF_ERROR(Failure(Call::kInsertLedger));
    FakeApp& app = store_.apps()[std::string(app_code)];
    std::vector<std::string> existing;
    for (const storage::LedgerWrite& w : rows) {
      if (!app.ledger.try_emplace(w.event_id, Written(w, 0)).second) {
        existing.push_back(w.event_id);
      }
    }
    return existing;
  }
  absl::Status InsertLedgerIfAbsent(absl::string_view app_code,
                                    absl::Span<const storage::LedgerWrite> rows) override {
    RETURN_IF_ERROR(Failure(Call::kInsertLedgerIfAbsent));
    FakeApp& app = store_.apps()[std::string(app_code)];
    for (const storage::LedgerWrite& w : rows) app.ledger.try_emplace(w.event_id, Written(w, 0));
    return absl::OkStatus();
  }
  absl::StatusOr<int64_t> UpdateLedger(absl::string_view app_code,
                                       absl::Span<const storage::LedgerWrite> rows) override {
    RETURN_IF_ERROR(Failure(Call::kUpdateLedger));
    FakeApp& app = store_.apps()[std::string(app_code)];
    int64_t updated = 0;
    for (const storage::LedgerWrite& w : rows) {
      auto it = app.ledger.find(w.event_id);
      if (it == app.ledger.end()) continue;
      const domain::LedgerRow& now = it->second.row;
      if (now.status != w.expected.status || now.retry_count != w.expected.retry_count ||
          now.locked_until_ms != w.expected.locked_until_ms) {
        continue;
      }
      it->second = Written(w, it->second.requeue_count + (w.requeued ? 1 : 0));
      ++updated;
    }
    return updated;
  }
  absl::StatusOr<storage::MergedSenders> MergeSenders(absl::string_view app_code,
                                                      const domain::WallDeltas& deltas) override {
    RETURN_IF_ERROR(Failure(Call::kMergeSenders));
    FakeApp& app = store_.apps()[std::string(app_code)];
    storage::MergedSenders merged;
    for (const auto& [key, delta] : deltas) {
      if (delta.senders.empty()) continue;
      auto& stored = app.walls[key].senders;
      for (const auto& [sender, row] : delta.senders) {
        if (absl::Status s = domain::MergeSenderRow(row, &stored[sender]); !s.ok()) {
          return DbError(storage::DbErrorKind::kPermanent, s.message());
        }
        merged[key][sender] = stored[sender];
      }
    }
    return merged;
  }
  absl::StatusOr<int64_t> MergeWalls(
      absl::string_view app_code, const domain::WallDeltas& deltas,
      const std::map<domain::WallKey, domain::SenderMerge>& senders) override {
    RETURN_IF_ERROR(Failure(Call::kMergeWalls));
    FakeApp& app = store_.apps()[std::string(app_code)];
    int64_t added = 0;
    for (const auto& [key, delta] : deltas) {
      domain::WallRow& stored = app.walls[key];
      added += stored.empty() && key.period.empty() ? 1 : 0;  // the cap counts all-time rows
      auto merge = senders.find(key);
      absl::Status s = domain::MergeWallTotals(
          delta, merge == senders.end() ? domain::SenderMerge{} : merge->second, &stored);
      if (!s.ok()) return DbError(storage::DbErrorKind::kPermanent, s.message());
    }
    return added;
  }
  absl::Status MergeSent(absl::string_view app_code, const domain::SentDeltas& deltas) override {
    RETURN_IF_ERROR(Failure(Call::kMergeSent));
    FakeApp& app = store_.apps()[std::string(app_code)];
    for (const auto& [key, delta] : deltas.rows) {
      if (absl::Status s = domain::MergeSentRow(delta, &app.sent[key]); !s.ok()) {
        return DbError(storage::DbErrorKind::kPermanent, s.message());
      }
    }
    for (const domain::SentKey& key : deltas.recount_open) {
      domain::SentRow sum;
      for (const auto& [wall, row] : app.walls) {
        auto sender = row.senders.find(key.sender_user_id);
        if (wall.gift_id != key.gift_id || wall.period != key.period ||
            sender == row.senders.end()) {
          continue;
        }
        RETURN_IF_ERROR(domain::MergeSentRow(domain::SentOf(sender->second), &sum));
      }
      app.sent[key].open = sum.open;
    }
    return absl::OkStatus();
  }
  absl::StatusOr<std::map<int64_t, int64_t>> WallsOverCap(absl::string_view app_code,
                                                          absl::Span<const int64_t> user_ids,
                                                          int64_t cap) override {
    RETURN_IF_ERROR(Failure(Call::kWallsOverCap));
    std::map<int64_t, int64_t> gifts;
    for (const auto& [key, row] : store_.apps()[std::string(app_code)].walls) {
      if (!row.empty() && key.period.empty() &&
          std::find(user_ids.begin(), user_ids.end(), key.user_id) != user_ids.end()) {
        ++gifts[key.user_id];
      }
    }
    std::map<int64_t, int64_t> over;
    for (const auto& [user, count] : gifts) {
      if (count > cap) over[user] = count;
    }
    return over;
  }
  absl::StatusOr<std::map<domain::WallKey, int64_t>> GiftCounts(
      absl::string_view app_code, absl::Span<const domain::WallKey> keys) override {
    RETURN_IF_ERROR(Failure(Call::kGiftCounts));
    std::map<domain::WallKey, int64_t> counts;
    FakeApp& app = store_.apps()[std::string(app_code)];
    for (const domain::WallKey& key : keys) {
      if (auto it = app.walls.find(key); it != app.walls.end() && !it->second.empty()) {
        counts[key] = it->second.gift_count;
      }
    }
    return counts;
  }
  bool broken() const override { return broken_; }

 private:
  // The injected failure of `call`, if any; a session that failed may say it is broken.
  absl::Status Failure(Call call) {
    absl::Status s = store_.Enter(call);
    if (!s.ok() && store_.broken_sessions) broken_ = true;
    return s;
  }
  FakeLedgerRow Written(const storage::LedgerWrite& w, int requeue_count) const {
    FakeLedgerRow r;
    r.row.status = w.status;
    r.row.retry_count = w.retry_count;
    r.row.last_error = w.last_error;
    r.retry_after_ms = w.retry_after_ms;
    r.requeue_count = requeue_count;
    return r;
  }

  FakeGroupStore& store_;
  std::optional<std::map<std::string, FakeApp>> began_;
  bool broken_ = false;
};

inline absl::StatusOr<std::unique_ptr<GroupSession>> FakeGroupStore::Open() {
  if (absl::Status s = Enter(Call::kOpen); !s.ok()) return s;
  return std::make_unique<FakeGroupSession>(*this);
}

}  // namespace giftwall::projection::testing

#endif  // GIFTWALL_TESTS_PROJECTION_FAKE_GROUP_STORE_H_
