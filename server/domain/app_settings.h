// What an app keeps besides its all-time wall (DESIGN §2.15): the period kinds, and its time zone
// over time. Deciding a change of them, and which periods an event writes, is here; storing them
// is storage's (settings_repository), running a change projection's (app_settings).
#ifndef GIFTWALL_SERVER_DOMAIN_APP_SETTINGS_H_
#define GIFTWALL_SERVER_DOMAIN_APP_SETTINGS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "server/domain/period.h"

namespace giftwall::domain {

struct AppSettings {
  std::vector<PeriodKind> kinds;  // kept, in kPeriodKinds' order
  std::vector<ZoneChange> zones;  // in order; the first covers all of history
  int64_t changed_at_ms = 0;      // when they last changed (database clock)
  std::string changed_by;
  bool keep_sent_wall = false;  // keep the sent wall (DESIGN §2.19)

  bool Keeps(PeriodKind kind) const;
  const std::string& zone() const { return zones.back().zone; }
};

// "day,week,month" (any order, no repeats): the kinds in kPeriodKinds' order. INVALID_ARGUMENT
// naming an unknown kind.
absl::StatusOr<std::vector<PeriodKind>> ParsePeriodKinds(absl::Span<const std::string> names);
std::string PeriodKindsList(absl::Span<const PeriodKind> kinds);  // "week,month"

// What SetAppSettings asks for.
struct SettingsRequest {
  std::string time_zone;
  std::vector<std::string> period_kinds;
  std::string caller;
  std::optional<bool> keep_sent_wall = std::nullopt;  // none: as it is (off for a new app)
};

// A change decided: the settings to store, and what the caller is told.
struct SettingsChange {
  AppSettings settings;
  bool changed = false;         // anything differs from what was stored
  bool zone_changed = false;    // a new zone was appended
  bool rebuild_needed = false;  // periods of events folded before the change lack its effect
  std::string note;             // for the answer and the CLI
};

// Decides SetAppSettings at `now_ms` (the database's clock) against the stored settings, if any.
// INVALID_ARGUMENT for a zone this server cannot load or an unknown kind, naming it;
// FAILED_PRECONDITION for a zone change while the previous one has not yet taken effect for
// every kind (one key never mixes two zones' boundaries, and one switch is pending at most).
absl::StatusOr<SettingsChange> DecideSettingsChange(const std::optional<AppSettings>& current,
                                                    const SettingsRequest& request, int64_t now_ms);

// How many past periods of each kind are kept (--period_retention), besides the current one.
struct PeriodRetention {
  std::map<PeriodKind, int> past = {
      {PeriodKind::kDay, 31}, {PeriodKind::kWeek, 26}, {PeriodKind::kMonth, 12}};
};
// "month=12,week=26,day=31" (any subset; the others keep their defaults). INVALID_ARGUMENT
// naming what is wrong.
absl::StatusOr<PeriodRetention> ParsePeriodRetention(absl::string_view text);
std::string PeriodRetentionText(const PeriodRetention& retention);

// The oldest period of `kind` still retained at `now_ms`.
Period OldestRetained(const AppCalendar& calendar, const PeriodRetention& retention,
                      PeriodKind kind, int64_t now_ms);

// The periods an app writes its events into at one moment (a group's transaction), besides the
// all-time wall: for each kept kind, the period an event falls in, if it is retained then (from
// the oldest retained to the one after the current, for a wallet clock a little ahead). An older
// event counts all-time only.
class PeriodsToWrite {
 public:
  // UNAVAILABLE if a zone of the app cannot be loaded (AppCalendar::Make).
  static absl::StatusOr<PeriodsToWrite> Make(const AppSettings& settings,
                                             const PeriodRetention& retention, int64_t now_ms);
  std::vector<Period> Of(int64_t occurred_at_ms) const;
  // The period `name` ("month:2026-12") names, if it is one written now: of a kept kind, and
  // retained.
  std::optional<Period> Written(absl::string_view name) const;

 private:
  struct Window {
    PeriodKind kind;
    int64_t first_start_ms;
    int64_t last_start_ms;
  };
  explicit PeriodsToWrite(AppCalendar calendar) : calendar_(std::move(calendar)) {}

  AppCalendar calendar_;
  std::vector<Window> windows_;
};

// The period a reader asks for (GetGiftWall, ListGiftWallSenders): "" the all-time wall;
// "day", "week", "month" the current one in the app's zone; "month:2026-12" one by its key.
struct PeriodSpec {
  std::optional<PeriodKind> kind;  // none: all-time
  std::string key;                 // empty: the current one

  bool all_time() const { return !kind.has_value(); }
  std::string Text() const;  // as parsed: "", "month", "month:2026-12"
};

// INVALID_ARGUMENT naming what is wrong: an unknown kind, a key that names no period.
absl::StatusOr<PeriodSpec> ParsePeriodSpec(absl::string_view text);

// The period a later page reads, given the request's and the one its page token was issued for
// ("month:2026-12", "" for all-time): the token's, if it is what the request asked for (a
// request for the current month keeps paging the month it started in, even once a new one has
// begun). INVALID_ARGUMENT if the token was issued for another period.
absl::StatusOr<PeriodSpec> ContinuePeriod(const PeriodSpec& requested,
                                          absl::string_view token_period);

// The period `spec` names for an app, at `now_ms` (the database's clock) for the current one;
// none for all-time. INVALID_ARGUMENT if the app does not keep the kind (naming the kinds it
// keeps); UNAVAILABLE if its zone cannot be loaded.
absl::StatusOr<std::optional<Period>> ResolvePeriod(const PeriodSpec& spec,
                                                    absl::string_view app_code,
                                                    const std::optional<AppSettings>& settings,
                                                    int64_t now_ms);

// The past periods of one kind whose 冠名 are history (ListSponsorHistory): from the oldest
// retained to the one before the current, and the app's calendar to name them.
struct HistoryWindow {
  AppCalendar calendar;
  Period oldest;   // the oldest retained period
  Period current;  // the current one, which is not history yet
};

// The history window of `kind` for an app at `now_ms` (the database's clock). INVALID_ARGUMENT
// if the app does not keep the kind, as ResolvePeriod; UNAVAILABLE if its zone cannot be loaded.
absl::StatusOr<HistoryWindow> ResolveHistory(PeriodKind kind, absl::string_view app_code,
                                             const std::optional<AppSettings>& settings,
                                             const PeriodRetention& retention, int64_t now_ms);

}  // namespace giftwall::domain

#endif  // GIFTWALL_SERVER_DOMAIN_APP_SETTINGS_H_
