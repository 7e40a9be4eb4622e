#include "server/projection/group_store.h"

#include <utility>

#include "server/storage/sent_wall_store.h"

namespace giftwall::projection {
namespace {

class MysqlGroupSession final : public GroupSession {
 public:
  explicit MysqlGroupSession(storage::PooledConnection conn)
      : conn_(std::move(conn)), store_(*conn_) {}

  absl::StatusOr<storage::LedgerSnapshot> ReadLedger(
      absl::string_view app_code, absl::Span<const std::string> event_ids) override {
    return store_.ReadLedger(app_code, event_ids);
  }
  absl::StatusOr<storage::AppSettingsSnapshot> ReadSettings(
      absl::Span<const std::string> app_codes) override {
    return storage::ReadAppSettings(*conn_, app_codes, /*shared_lock=*/true);
  }
  absl::Status Begin() override {
    tx_.reset();
    absl::StatusOr<storage::Transaction> tx = storage::Transaction::Begin(*conn_);
    if (!tx.ok()) return tx.status();
    tx_.emplace(*std::move(tx));
    return absl::OkStatus();
  }
  absl::Status Commit() override {
    absl::Status s = tx_->Commit();
    tx_.reset();
    return s;
  }
  void Rollback() override { tx_.reset(); }

  absl::StatusOr<std::vector<std::string>> InsertLedger(
      absl::string_view app_code, absl::Span<const storage::LedgerWrite> rows) override {
    return store_.InsertLedger(app_code, rows);
  }
  absl::Status InsertLedgerIfAbsent(absl::string_view app_code,
                                    absl::Span<const storage::LedgerWrite> rows) override {
    return store_.InsertLedgerIfAbsent(app_code, rows);
  }
  absl::StatusOr<int64_t> UpdateLedger(absl::string_view app_code,
                                       absl::Span<const storage::LedgerWrite> rows) override {
    return store_.UpdateLedger(app_code, rows);
  }
  absl::StatusOr<storage::MergedSenders> MergeSenders(absl::string_view app_code,
                                                      const domain::WallDeltas& deltas) override {
    return store_.MergeSenders(app_code, deltas);
  }
  absl::StatusOr<int64_t> MergeWalls(
      absl::string_view app_code, const domain::WallDeltas& deltas,
      const std::map<domain::WallKey, domain::SenderMerge>& senders) override {
    return store_.MergeWalls(app_code, deltas, senders);
  }
  absl::Status MergeSent(absl::string_view app_code, const domain::SentDeltas& deltas) override {
    return storage::SentStatements(*conn_).Merge(app_code, deltas);
  }
  absl::StatusOr<std::map<int64_t, int64_t>> WallsOverCap(absl::string_view app_code,
                                                          absl::Span<const int64_t> user_ids,
                                                          int64_t cap) override {
    return store_.WallsOverCap(app_code, user_ids, cap);
  }
  absl::StatusOr<std::map<domain::WallKey, int64_t>> GiftCounts(
      absl::string_view app_code, absl::Span<const domain::WallKey> keys) override {
    return store_.GiftCounts(app_code, keys);
  }
  bool broken() const override { return conn_->broken(); }

 private:
  storage::PooledConnection conn_;
  storage::ProjectionStore store_;
  std::optional<storage::Transaction> tx_;  // declared last: rolled back before the session goes
};

}  // namespace

absl::StatusOr<std::unique_ptr<GroupSession>> MysqlGroupStore::Open() {
  absl::StatusOr<storage::PooledConnection> conn = pool_.Acquire();
  if (!conn.ok()) return conn.status();
  return std::make_unique<MysqlGroupSession>(*std::move(conn));
}

}  // namespace giftwall::projection
