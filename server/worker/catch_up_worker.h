// The background catch-up scan (DESIGN §2.11): every interval, for each app code, finds outbox
// events the relay never delivered, failed events whose backoff has passed and expired leases,
// and projects them (projected_by = scan). Every replica runs it; each app is scanned by the one
// that holds its scan lease (storage::ScanLeases), so replicas scale without multiplying scans.
// Were two to scan at once anyway, the ledger would keep every event to one effect.
#ifndef GIFTWALL_SERVER_WORKER_CATCH_UP_WORKER_H_
#define GIFTWALL_SERVER_WORKER_CATCH_UP_WORKER_H_

#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "server/domain/scan_horizon.h"
#include "server/projection/outbox_codes.h"
#include "server/projection/period_pruner.h"
#include "server/projection/recovery.h"
#include "server/storage/ledger_repository.h"
#include "server/storage/outbox_repository.h"
#include "server/storage/scan_leases.h"

namespace giftwall::worker {

struct CatchUpOptions {
  absl::Duration interval = absl::Seconds(2);
  // Empty: every app code that has gift events in the outbox. Outbox rows under a code that
  // normalizes to one of these ("APP3X" for app3x) are scanned as the app's.
  std::vector<std::string> app_codes;
  // Events younger than this are left to the relay.
  absl::Duration min_age = absl::Seconds(10);
  absl::Duration safety_margin = absl::Minutes(5);
  absl::Duration full_sweep_every = absl::Hours(1);
  // Candidates per pass (1..100), and passes per app per round.
  int batch = 100;
  int max_passes = 50;
  // How often the status (lag, dead events) of an app this replica scans is reported.
  absl::Duration status_every = absl::Seconds(30);
  // How often the period rows past retention of an app this replica scans are pruned.
  absl::Duration prune_every = absl::Minutes(10);
};

// Told, now and then, the projection status (lag, dead events) of each app this replica scans:
// measured by the one replica that scans it, so that replicas do not multiply the SQL it needs.
class AppStatusSink {
 public:
  virtual ~AppStatusSink() = default;
  virtual void Report(const std::string& app_code, const storage::ProjectionStatus& status) = 0;
  // This replica no longer scans the app: its figures are another's to report.
  virtual void Forget(const std::string& app_code) = 0;
  // Gift events in the outbox under app codes that do not normalize ("BAD CODE"): no path can
  // project them (the relay's calls get INVALID_ARGUMENT), so they are counted, not scanned.
  virtual void ReportInvalidAppCodeEvents(int64_t events) = 0;
};

// What one round did, summed over its app codes.
struct CatchUpRound {
  int apps = 0;     // scanned by this replica
  int skipped = 0;  // scanned by another replica (it holds their leases)
  int projected = 0;
  int dead = 0;
  int errors = 0;
};

class CatchUpWorker {
 public:
  // `leases` may be null: then this worker scans every app, whatever other replicas do.
  CatchUpWorker(projection::Recovery& recovery, storage::LedgerRepository& ledger,
                storage::OutboxRepository& outbox, storage::ScanLeases* leases,
                CatchUpOptions options);
  ~CatchUpWorker() { Stop(); }

  // Reports the status of the apps it scans to `sink` (which must outlive the worker). Before
  // Start.
  void ReportStatusTo(AppStatusSink* sink) { sink_ = sink; }
  // Prunes the period rows past retention (DESIGN §2.15) of the apps it scans, every
  // prune_every, with `pruner` (which must outlive the worker). Before Start.
  void PrunePeriodsWith(projection::PeriodPruner* pruner) { pruner_ = pruner; }

  // Runs a round now and then every interval, on a thread of its own.
  void Start();
  // Asks the worker to stop after the pass in progress, without waiting.
  void RequestStop();
  // Stops and waits for the pass in progress; idempotent.
  void Stop();

  // One round over every app code; what the thread runs.
  CatchUpRound RunRound() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // Scans one app (its outbox rows under each of `outbox_codes`) if this replica holds its lease.
  void ScanApp(const std::string& app, const std::vector<std::string>& outbox_codes,
               CatchUpRound& round) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Reports the app's status to the sink, if it is due.
  void ReportStatus(const std::string& app, const std::vector<std::string>& outbox_codes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Prunes the app's period rows, if it is due.
  void PrunePeriods(const std::string& app) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Reports the events under invalid app codes to the sink, if it is due.
  void ReportInvalidAppCodes(const std::vector<std::string>& codes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  projection::Recovery& recovery_;
  storage::LedgerRepository& ledger_;
  storage::OutboxRepository& outbox_;
  projection::OutboxCodes outbox_codes_;
  storage::ScanLeases* const leases_ ABSL_PT_GUARDED_BY(mu_);
  const CatchUpOptions options_;
  absl::Mutex mu_;  // one round at a time
  // By outbox app code.
  std::map<std::string, domain::ScanHorizon> horizons_ ABSL_GUARDED_BY(mu_);
  AppStatusSink* sink_ = nullptr;
  projection::PeriodPruner* pruner_ = nullptr;
  std::map<std::string, absl::Time> pruned_ ABSL_GUARDED_BY(mu_);    // when, by app
  std::map<std::string, absl::Time> reported_ ABSL_GUARDED_BY(mu_);  // when, by app
  absl::Time invalid_reported_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  std::once_flag stop_once_;
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace giftwall::worker

#endif  // GIFTWALL_SERVER_WORKER_CATCH_UP_WORKER_H_
