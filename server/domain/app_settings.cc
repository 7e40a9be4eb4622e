#include "server/domain/app_settings.h"

#include <algorithm>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"

namespace giftwall::domain {
namespace {

std::string ClockText(int64_t ms) {
  return absl::FormatTime("%Y-%m-%d %H:%M:%E3SZ", absl::FromUnixMillis(ms), absl::UTCTimeZone());
}

// When the last zone change takes effect for every kind; INT64_MIN without one.
absl::StatusOr<int64_t> PendingSwitchMs(const AppSettings& settings) {
  if (settings.zones.size() < 2) return INT64_MIN;
  absl::StatusOr<AppCalendar> calendar = AppCalendar::Make(settings.zones);
  if (!calendar.ok()) return calendar.status();
  int64_t last = INT64_MIN;
  for (PeriodKind kind : kPeriodKinds) last = std::max(last, calendar->LastSwitchMs(kind));
  return last;
}

}  // namespace

bool AppSettings::Keeps(PeriodKind kind) const {
  return std::find(kinds.begin(), kinds.end(), kind) != kinds.end();
}

absl::StatusOr<std::vector<PeriodKind>> ParsePeriodKinds(absl::Span<const std::string> names) {
  std::set<PeriodKind> kinds;
  for (const std::string& name : names) {
    const std::optional<PeriodKind> kind = ParsePeriodKind(name);
    if (!kind.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown period kind \"", name, "\": the kinds are day, week and month"));
    }
    kinds.insert(*kind);
  }
  return std::vector<PeriodKind>(kinds.begin(), kinds.end());
}

std::string PeriodKindsList(absl::Span<const PeriodKind> kinds) {
  return absl::StrJoin(kinds, ",", [](std::string* out, PeriodKind kind) {
    absl::StrAppend(out, PeriodKindName(kind));
  });
}

absl::StatusOr<SettingsChange> DecideSettingsChange(const std::optional<AppSettings>& current,
                                                    const SettingsRequest& request,
                                                    int64_t now_ms) {
  absl::TimeZone zone;
  if (request.time_zone.empty()) {
    return absl::InvalidArgumentError("time_zone is required (an IANA name, e.g. Asia/Shanghai)");
  }
  if (!absl::LoadTimeZone(request.time_zone, &zone)) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown time zone \"", request.time_zone,
                     "\": give an IANA name this server's zone database has, e.g. Asia/Shanghai"));
  }
  SettingsChange change;
  absl::StatusOr<std::vector<PeriodKind>> kinds = ParsePeriodKinds(request.period_kinds);
  if (!kinds.ok()) return kinds.status();
  change.settings.kinds = *std::move(kinds);
  change.settings.keep_sent_wall =
      request.keep_sent_wall.value_or(current.has_value() && current->keep_sent_wall);
  change.settings.changed_by = request.caller;
  if (!current.has_value()) {
    change.settings.zones = {{INT64_MIN, request.time_zone}};
    change.changed = true;
  } else {
    change.settings.zones = current->zones;
    change.settings.changed_at_ms = current->changed_at_ms;
    if (request.time_zone != current->zone()) {
      absl::StatusOr<int64_t> pending = PendingSwitchMs(*current);
      if (!pending.ok()) return pending.status();
      if (*pending > now_ms) {
        return absl::FailedPreconditionError(
            absl::StrCat("the change of time zone to ", current->zone(),
                         " takes effect for every period kind only at ", ClockText(*pending),
                         ": change the zone again after that"));
      }
      change.settings.zones.push_back({now_ms, request.time_zone});
      change.zone_changed = true;
    }
    change.changed = change.zone_changed || change.settings.kinds != current->kinds ||
                     change.settings.keep_sent_wall != current->keep_sent_wall;
  }
  if (!change.changed) {
    change.note = "settings unchanged";
    return change;
  }
  change.settings.changed_at_ms = now_ms;
  std::vector<PeriodKind> added;
  for (PeriodKind kind : change.settings.kinds) {
    if (!current.has_value() || !current->Keeps(kind)) added.push_back(kind);
  }
  const bool periods_need_rebuild = !added.empty() || change.zone_changed;
  const bool sent_wall_started =
      change.settings.keep_sent_wall && (!current.has_value() || !current->keep_sent_wall);
  change.rebuild_needed = periods_need_rebuild || sent_wall_started;
  std::vector<std::string> notes;
  if (change.zone_changed) {
    notes.push_back(
        "the new time zone takes effect for each kind at the end of its current period");
  }
  if (periods_need_rebuild) {
    notes.push_back(
        absl::StrCat("periods hold only the events folded from now on",
                     added.empty() ? "" : absl::StrCat(" (new: ", PeriodKindsList(added), ")"),
                     ": run RebuildGiftWall to fold the earlier events into them"));
  } else if (current.has_value() && current->kinds != change.settings.kinds) {
    notes.push_back("period kinds no longer kept are no longer written or read");
  }
  if (sent_wall_started) {
    notes.push_back(
        "the sent wall holds only the events folded from now on: run RebuildGiftWall to add the "
        "earlier ones");
  } else if (current.has_value() && current->keep_sent_wall && !change.settings.keep_sent_wall) {
    notes.push_back("the sent wall is no longer written or read");
  }
  change.note = absl::StrJoin(notes, "; ");
  return change;
}

absl::StatusOr<PeriodRetention> ParsePeriodRetention(absl::string_view text) {
  PeriodRetention retention;
  if (text.empty()) return retention;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    const std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(item, '=');
    const std::optional<PeriodKind> kind = ParsePeriodKind(kv.first);
    int past = 0;
    if (!kind.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat("\"", item, "\": the kinds are day, week and month (e.g. month=12)"));
    }
    if (!absl::SimpleAtoi(kv.second, &past) || past < 0 || past > 1000) {
      return absl::InvalidArgumentError(
          absl::StrCat("\"", item, "\": past periods kept must be a count from 0 to 1000"));
    }
    retention.past[*kind] = past;
  }
  return retention;
}

std::string PeriodRetentionText(const PeriodRetention& retention) {
  std::vector<std::string> items;
  for (PeriodKind kind : {PeriodKind::kMonth, PeriodKind::kWeek, PeriodKind::kDay}) {
    items.push_back(absl::StrCat(PeriodKindName(kind), "=", retention.past.at(kind)));
  }
  return absl::StrJoin(items, ",");
}

Period OldestRetained(const AppCalendar& calendar, const PeriodRetention& retention,
                      PeriodKind kind, int64_t now_ms) {
  Period period = calendar.Of(kind, now_ms);
  for (int i = 0; i < retention.past.at(kind); ++i) period = calendar.Before(period);
  return period;
}

absl::StatusOr<PeriodsToWrite> PeriodsToWrite::Make(const AppSettings& settings,
                                                    const PeriodRetention& retention,
                                                    int64_t now_ms) {
  absl::StatusOr<AppCalendar> calendar = AppCalendar::Make(settings.zones);
  if (!calendar.ok()) return calendar.status();
  PeriodsToWrite periods(*std::move(calendar));
  for (PeriodKind kind : settings.kinds) {
    const Period next = periods.calendar_.After(periods.calendar_.Of(kind, now_ms));
    periods.windows_.push_back(
        {kind, OldestRetained(periods.calendar_, retention, kind, now_ms).start_ms, next.start_ms});
  }
  return periods;
}

std::vector<Period> PeriodsToWrite::Of(int64_t occurred_at_ms) const {
  std::vector<Period> periods;
  for (const Window& window : windows_) {
    Period period = calendar_.Of(window.kind, occurred_at_ms);
    if (period.start_ms >= window.first_start_ms && period.start_ms <= window.last_start_ms) {
      periods.push_back(std::move(period));
    }
  }
  return periods;
}

std::optional<Period> PeriodsToWrite::Written(absl::string_view name) const {
  absl::StatusOr<PeriodSpec> spec = ParsePeriodSpec(name);
  if (!spec.ok() || spec->all_time() || spec->key.empty()) return std::nullopt;
  for (const Window& window : windows_) {
    if (window.kind != *spec->kind) continue;
    std::optional<Period> period = calendar_.Named(window.kind, spec->key);
    if (period.has_value() && period->start_ms >= window.first_start_ms &&
        period->start_ms <= window.last_start_ms) {
      return period;
    }
  }
  return std::nullopt;
}

std::string PeriodSpec::Text() const {
  if (all_time()) return "";
  if (key.empty()) return std::string(PeriodKindName(*kind));
  return absl::StrCat(PeriodKindName(*kind), ":", key);
}

absl::StatusOr<PeriodSpec> ParsePeriodSpec(absl::string_view text) {
  PeriodSpec spec;
  if (text.empty()) return spec;
  const size_t colon = text.find(':');
  const absl::string_view kind = text.substr(0, colon);
  spec.kind = ParsePeriodKind(kind);
  if (!spec.kind.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("period \"", text, "\": unknown kind \"", kind,
                     "\" (the kinds are day, week and month; \"\" for all-time)"));
  }
  if (colon == absl::string_view::npos) return spec;
  spec.key = std::string(text.substr(colon + 1));
  if (!ParseKey(*spec.kind, spec.key).has_value()) {
    static constexpr absl::string_view kExamples[] = {"day:2026-12-03", "week:2026-W49",
                                                      "month:2026-12"};
    return absl::InvalidArgumentError(absl::StrCat("period \"", text, "\" names no ", kind,
                                                   " (e.g. \"",
                                                   kExamples[static_cast<int>(*spec.kind)], "\")"));
  }
  return spec;
}

absl::StatusOr<PeriodSpec> ContinuePeriod(const PeriodSpec& requested,
                                          absl::string_view token_period) {
  if (token_period == requested.Text()) return requested;
  absl::StatusOr<PeriodSpec> issued = ParsePeriodSpec(token_period);
  if (issued.ok() && requested.key.empty() && issued->kind == requested.kind &&
      !issued->key.empty()) {
    return *std::move(issued);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "page_token was issued for period \"", token_period, "\", not \"", requested.Text(),
      "\": pass it only with the period of the request that returned it"));
}

namespace {

// The calendar of an app that keeps `kind`; INVALID_ARGUMENT naming `asked` (the request's
// period) and what the app keeps if it does not.
absl::StatusOr<AppCalendar> CalendarKeeping(PeriodKind kind, absl::string_view asked,
                                            absl::string_view app_code,
                                            const std::optional<AppSettings>& settings) {
  if (!settings.has_value() || !settings->Keeps(kind)) {
    return absl::InvalidArgumentError(absl::StrCat(
        asked, ": app ", app_code, " keeps no ", PeriodKindName(kind), " walls (it keeps ",
        settings.has_value() && !settings->kinds.empty()
            ? absl::StrCat(PeriodKindsList(settings->kinds), " and all-time")
            : "the all-time wall only",
        "; see giftwall admin settings)"));
  }
  return AppCalendar::Make(settings->zones);
}

}  // namespace

absl::StatusOr<std::optional<Period>> ResolvePeriod(const PeriodSpec& spec,
                                                    absl::string_view app_code,
                                                    const std::optional<AppSettings>& settings,
                                                    int64_t now_ms) {
  if (spec.all_time()) return std::nullopt;
  absl::StatusOr<AppCalendar> calendar =
      CalendarKeeping(*spec.kind, absl::StrCat("period \"", spec.Text(), "\""), app_code, settings);
  if (!calendar.ok()) return calendar.status();
  if (spec.key.empty()) return calendar->Of(*spec.kind, now_ms);
  return calendar->Named(*spec.kind, spec.key);
}

absl::StatusOr<HistoryWindow> ResolveHistory(PeriodKind kind, absl::string_view app_code,
                                             const std::optional<AppSettings>& settings,
                                             const PeriodRetention& retention, int64_t now_ms) {
  absl::StatusOr<AppCalendar> calendar = CalendarKeeping(
      kind, absl::StrCat("period_kind \"", PeriodKindName(kind), "\""), app_code, settings);
  if (!calendar.ok()) return calendar.status();
  Period oldest = OldestRetained(*calendar, retention, kind, now_ms);
  Period current = calendar->Of(kind, now_ms);
  return HistoryWindow{*std::move(calendar), std::move(oldest), std::move(current)};
}

}  // namespace giftwall::domain
