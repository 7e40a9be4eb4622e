// The catch-up scan's per-app leases (`scan/<app>` in giftwall_leases, DESIGN §2.20), so that one
// replica at a time scans an app however many run the scan, on whatever database node. A replica
// renews the lease of an app it scans at the first pass after a third of the lease's duration;
// one that dies stops renewing, and the first pass of another after the lease's duration takes
// the app over.
//
// Nothing the scan writes is fenced by its lease: it writes only through the projection, which
// folds each event exactly once whoever delivers it (the relay does the same at any time). A
// scanner that paused past its lease costs only a second reading of the outbox.
#ifndef GIFTWALL_SERVER_STORAGE_SCAN_LEASES_H_
#define GIFTWALL_SERVER_STORAGE_SCAN_LEASES_H_

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "server/storage/lease_store.h"
#include "server/storage/mysql_url.h"
#include "server/storage/sql_connection.h"

namespace giftwall::storage {

// Not thread-safe: one scanner uses it.
class ScanLeases {
 public:
  // `lease.who` names the replica in the lease rows (with its process, to tell restarts apart).
  ScanLeases(MysqlEndpoint endpoint, SessionOptions session, const LeaseOptions& lease);
  // Releases the leases held, so that another replica takes the apps over at once.
  ~ScanLeases();
  ScanLeases(const ScanLeases&) = delete;
  ScanLeases& operator=(const ScanLeases&) = delete;

  // Whether this process holds the scan lease of `app_code` now, taking or renewing it. A lease
  // held by another replica is not waited for.
  absl::StatusOr<bool> Hold(absl::string_view app_code);

 private:
  const MysqlEndpoint endpoint_;
  const SessionOptions session_;
  const std::string holder_;
  const absl::Duration duration_;
  std::unique_ptr<SqlConnection> conn_;
  struct Held {
    Lease lease;
    std::chrono::steady_clock::time_point renewed;  // a clock that never jumps
  };
  std::map<std::string, Held> held_;  // by app code, as of the last renewal of each
};

}  // namespace giftwall::storage

#endif  // GIFTWALL_SERVER_STORAGE_SCAN_LEASES_H_
