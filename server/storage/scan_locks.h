// The catch-up scan's per-app locks: MySQL named locks (GET_LOCK), so that one replica at a time
// scans an app however many run the scan. A replica keeps the locks it took on a session of its
// own for as long as it runs; when it dies its session goes, the locks with it, and the next
// replica to try takes over.
#ifndef GIFTWALL_SERVER_STORAGE_SCAN_LOCKS_H_
#define GIFTWALL_SERVER_STORAGE_SCAN_LOCKS_H_

#include <memory>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/storage/mysql_url.h"
#include "server/storage/sql_connection.h"

namespace giftwall::storage {

// The name of the scan lock of `app_code` (the rebuild's are apart): a statement fragment that
// takes the app code as its one parameter. Named locks are server-wide, so the name includes the
// database; MySQL limits names to 64 characters, so the variable part is hashed.
inline constexpr absl::string_view kScanLockName =
    "CONCAT('giftwall.scan.', SHA1(CONCAT(DATABASE(), '/', ?)))";

// Not thread-safe: one scanner uses it.
class ScanLocks {
 public:
  ScanLocks(MysqlEndpoint endpoint, SessionOptions session)
      : endpoint_(std::move(endpoint)), session_(session) {}

  // Whether this process holds the scan lock of `app_code` now, taking it if it is free. A lock
  // held by another replica is not waited for.
  absl::StatusOr<bool> Hold(absl::string_view app_code);

  // The app codes whose locks this process holds (as of the last Hold).
  const std::set<std::string>& held() const { return held_; }

 private:
  const MysqlEndpoint endpoint_;
  const SessionOptions session_;
  std::unique_ptr<SqlConnection> conn_;  // holds the locks; closing it releases them
  std::set<std::string> held_;
};

}  // namespace giftwall::storage

#endif  // GIFTWALL_SERVER_STORAGE_SCAN_LOCKS_H_
