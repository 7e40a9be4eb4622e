// The projection as the server wires it, on a test database's pool, without gRPC.
#ifndef GIFTWALL_TESTS_SUPPORT_TEST_PROJECTION_H_
#define GIFTWALL_TESTS_SUPPORT_TEST_PROJECTION_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/domain/app_settings.h"
#include "server/domain/backoff.h"
#include "server/projection/group_projector.h"
#include "server/projection/recovery.h"
#include "server/storage/app_settings_store.h"
#include "server/storage/connection_pool.h"
#include "server/storage/ledger_repository.h"
#include "server/storage/outbox_repository.h"

namespace giftwall::testing {

// The default policy, with contention pauses short enough for tests.
inline domain::RetryPolicy FastRetry() {
  domain::RetryPolicy retry;
  retry.contention_base = absl::Milliseconds(1);
  return retry;
}

struct TestProjection {
  explicit TestProjection(storage::ConnectionPool& pool, domain::RetryPolicy retry = FastRetry(),
                          int64_t max_wall_gifts = domain::kDefaultMaxWallGifts,
                          domain::PeriodRetention retention = {})
      : projector(pool, retry, max_wall_gifts, std::move(retention)),
        outbox(pool),
        ledger(pool),
        recovery(projector, outbox, ledger) {}

  projection::GroupProjector projector;
  storage::OutboxRepository outbox;
  storage::LedgerRepository ledger;
  projection::Recovery recovery;
};

// Changes an app's settings as SetAppSettings does.
inline absl::Status UpdateSettings(storage::ConnectionPool& pool, const std::string& app_code,
                                   const domain::SettingsRequest& request) {
  return storage::SettingsRepository(pool)
      .Update(app_code,
              [&](const std::optional<domain::AppSettings>& current,
                  int64_t now_ms) -> absl::StatusOr<domain::AppSettings> {
                absl::StatusOr<domain::SettingsChange> change =
                    domain::DecideSettingsChange(current, request, now_ms);
                if (!change.ok()) return change.status();
                return change->settings;
              })
      .status();
}

}  // namespace giftwall::testing

#endif  // GIFTWALL_TESTS_SUPPORT_TEST_PROJECTION_H_
