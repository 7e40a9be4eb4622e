// Which wall a reader's `period` names (DESIGN §2.15): "" all-time, "month" the current month in
// the app's zone by the database's clock, "month:2026-12" one month; and whether the app keeps a
// sent wall to read (§2.19). The app's settings and the database's clock are read at most once
// per `max_age` per app, so a period read costs no more statements than an all-time one; a
// change of settings reaches readers within that.
#ifndef GIFTWALL_SERVER_READS_PERIOD_RESOLVER_H_
#define GIFTWALL_SERVER_READS_PERIOD_RESOLVER_H_

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/domain/app_settings.h"
#include "server/storage/app_settings_store.h"

namespace giftwall::reads {

class PeriodResolver {
 public:
  // The app's settings and the database's clock (storage::WallRepository::ReadSettings).
  using ReadSettingsFn =
      std::function<absl::StatusOr<storage::AppSettingsSnapshot>(absl::string_view app_code)>;

  // `retention` (--period_retention) says which past periods are history.
  PeriodResolver(ReadSettingsFn read_settings, domain::PeriodRetention retention,
                 absl::Duration max_age = absl::Seconds(1))
      : read_settings_(std::move(read_settings)),
        retention_(std::move(retention)),
        max_age_(max_age) {}

  // None for all-time, without reading anything. Otherwise as domain::ResolvePeriod; may block
  // on a read of the app's settings.
  absl::StatusOr<std::optional<domain::Period>> Resolve(const std::string& app_code,
                                                        const domain::PeriodSpec& spec)
      ABSL_LOCKS_EXCLUDED(mu_);

  // OK if the app's settings keep the sent wall (DESIGN §2.19), FAILED_PRECONDITION naming the
  // setting if not; may block on a read of the app's settings.
  absl::Status CheckKeepsSentWall(const std::string& app_code) ABSL_LOCKS_EXCLUDED(mu_);

  // As domain::ResolveHistory; may block on a read of the app's settings.
  absl::StatusOr<domain::HistoryWindow> History(const std::string& app_code,
                                                domain::PeriodKind kind) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Known {
    std::optional<domain::AppSettings> settings;
    absl::Duration database_ahead;  // the database's clock minus this host's, when read
    absl::Time read_at;
  };
  // The app's settings, read at most once per max_age_.
  absl::StatusOr<Known> Lookup(const std::string& app_code) ABSL_LOCKS_EXCLUDED(mu_);
  static int64_t DatabaseNowMs(const Known& known) {
    return absl::ToUnixMillis(absl::Now() + known.database_ahead);
  }
  // Apps remembered at most: any caller may name any app, and each costs a little memory.
  static constexpr size_t kMaxApps = 4096;

  const ReadSettingsFn read_settings_;
  const domain::PeriodRetention retention_;
  const absl::Duration max_age_;
  absl::Mutex mu_;
  std::map<std::string, Known> known_ ABSL_GUARDED_BY(mu_);
};

}  // namespace giftwall::reads

#endif  // GIFTWALL_SERVER_READS_PERIOD_RESOLVER_H_
