#include "server/storage/sender_privacy_repository.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "server/common/status_macros.h"
#include "server/storage/db_clock.h"

namespace giftwall::storage {
namespace {

// Affected rows (without CLIENT_FOUND_ROWS): 1 inserted, 2 changed, 0 already so. The time and
// the writer move only with a change, so they say when and by whom it was last changed.
const std::string& SetSql() {
  static const auto* const sql = new std::string(absl::StrCat(R"sql(
INSERT INTO giftwall_sender_privacy (app_code, sender_user_id, hidden, updated_at_ms, updated_by)
VALUES (?, ?, ?, )sql",
                                                              GIFTWALL_DB_NOW_MS, R"sql(, ?)
ON DUPLICATE KEY UPDATE
  updated_at_ms = IF(hidden = VALUES(hidden), updated_at_ms, VALUES(updated_at_ms)),
  updated_by = IF(hidden = VALUES(hidden), updated_by, VALUES(updated_by)),
  hidden = VALUES(hidden))sql"));
  return *sql;
}

constexpr absl::string_view kListHiddenSql =
    "SELECT sender_user_id FROM giftwall_sender_privacy WHERE app_code = ? AND hidden = 1";

}  // namespace

absl::StatusOr<std::vector<int64_t>> SenderPrivacyRepository::ListHidden(
    absl::string_view app_code) {
  ASSIGN_OR_RETURN(PooledConnection conn, pool_.Acquire());
  std::vector<int64_t> hidden;
  RETURN_IF_ERROR(conn->Query(kListHiddenSql, {app_code},
                              [&](const SqlRow& row) { hidden.push_back(row.Int(0)); }));
  return hidden;
}

absl::StatusOr<bool> SenderPrivacyRepository::Set(absl::string_view app_code,
                                                  int64_t sender_user_id, bool hidden,
                                                  absl::string_view by) {
  ASSIGN_OR_RETURN(PooledConnection conn, pool_.Acquire());
  ASSIGN_OR_RETURN(const int64_t affected, conn->Execute(SetSql(), {app_code, sender_user_id,
                                                                    int64_t{hidden ? 1 : 0}, by}));
  return affected == 2 || (affected == 1 && hidden);
}

}  // namespace giftwall::storage
