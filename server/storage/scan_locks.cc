#include "server/storage/scan_locks.h"

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

namespace giftwall::storage {
namespace {

// 1 if this session holds the lock already (GET_LOCK again would nest it), else GET_LOCK without
// waiting: 1 taken, 0 held by another session.
const std::string& HoldLockSql() {
  static const auto* const sql = new std::string(
      absl::StrCat("SELECT COALESCE(IF(IS_USED_LOCK(", kScanLockName, ") = CONNECTION_ID(), 1, ",
                   "GET_LOCK(", kScanLockName, ", 0)), 0)"));
  return *sql;
}

}  // namespace

absl::StatusOr<bool> ScanLocks::Hold(absl::string_view app_code) {
  int64_t mine = 0;
  // Twice at most: a session found dead on the first try is replaced once.
  for (int attempt = 0;; ++attempt) {
    if (conn_ != nullptr && conn_->broken()) {
      // The session is gone, and its locks with it: another replica may have them by now.
      LOG(WARNING) << "catch-up: lost the session that held the scan locks of " << held_.size()
                   << " app(s)";
      conn_.reset();
      held_.clear();
    }
    if (conn_ == nullptr) {
      absl::StatusOr<std::unique_ptr<SqlConnection>> opened =
          SqlConnection::Open(endpoint_, session_);
      if (!opened.ok()) return opened.status();
      conn_ = *std::move(opened);
    }
    absl::Status s = conn_->Query(HoldLockSql(), {app_code, app_code},
                                  [&](const SqlRow& row) { mine = row.Int(0); });
    if (s.ok()) break;
    if (!conn_->broken() || attempt > 0) return s;
  }
  const std::string app(app_code);
  if (mine == 1) {
    if (held_.insert(app).second) LOG(INFO) << "catch-up: this replica scans app " << app;
    return true;
  }
  if (held_.erase(app) > 0) LOG(WARNING) << "catch-up: another replica scans app " << app;
  return false;
}

}  // namespace giftwall::storage
