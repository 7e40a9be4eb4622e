#include "server/domain/period.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace giftwall::domain {
namespace {

constexpr int KindIndex(PeriodKind kind) { return static_cast<int>(kind); }

// The ISO 8601 week-year and week of the week that starts on Monday `monday`: the week-year is
// the year of its Thursday.
std::pair<int64_t, int> IsoWeek(absl::CivilDay monday) {
  const absl::CivilDay thursday = monday + 3;
  return {thursday.year(), (absl::GetYearDay(thursday) - 1) / 7 + 1};
}

// Digits only, exactly `n` of them.
std::optional<int> Number(absl::string_view text, size_t n) {
  if (text.size() != n) return std::nullopt;
  int value = 0;
  for (char c : text) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

}  // namespace

absl::string_view PeriodKindName(PeriodKind kind) {
  switch (kind) {
    case PeriodKind::kDay:
      return "day";
    case PeriodKind::kWeek:
      return "week";
    case PeriodKind::kMonth:
      return "month";
  }
  return "unknown";
}

std::optional<PeriodKind> ParsePeriodKind(absl::string_view name) {
  for (PeriodKind kind : kPeriodKinds) {
    if (PeriodKindName(kind) == name) return kind;
  }
  return std::nullopt;
}

std::string Period::Name() const { return absl::StrCat(PeriodKindName(kind), ":", key); }

absl::CivilDay LabelOf(PeriodKind kind, absl::CivilDay day) {
  switch (kind) {
    case PeriodKind::kDay:
      return day;
    case PeriodKind::kWeek:
      // absl::Weekday counts from Monday.
      return day - static_cast<int>(absl::GetWeekday(day));
    case PeriodKind::kMonth:
      return absl::CivilDay(absl::CivilMonth(day));
  }
  return day;
}

absl::CivilDay NextLabel(PeriodKind kind, absl::CivilDay label) {
  switch (kind) {
    case PeriodKind::kDay:
      return label + 1;
    case PeriodKind::kWeek:
      return label + 7;
    case PeriodKind::kMonth:
      return absl::CivilDay(absl::CivilMonth(label) + 1);
  }
  return label;
}

absl::CivilDay PreviousLabel(PeriodKind kind, absl::CivilDay label) {
  switch (kind) {
    case PeriodKind::kDay:
      return label - 1;
    case PeriodKind::kWeek:
      return label - 7;
    case PeriodKind::kMonth:
      return absl::CivilDay(absl::CivilMonth(label) - 1);
  }
  return label;
}

std::string KeyOf(PeriodKind kind, absl::CivilDay label) {
  switch (kind) {
    case PeriodKind::kDay:
      return absl::StrFormat("%04d-%02d-%02d", label.year(), label.month(), label.day());
    case PeriodKind::kWeek: {
      const auto [year, week] = IsoWeek(label);
      return absl::StrFormat("%04d-W%02d", year, week);
    }
    case PeriodKind::kMonth:
      return absl::StrFormat("%04d-%02d", label.year(), label.month());
  }
  return "";
}

std::optional<absl::CivilDay> ParseKey(PeriodKind kind, absl::string_view key) {
  const std::optional<int> year = Number(key.substr(0, 4), 4);
  if (!year.has_value() || *year == 0 || key.size() < 5 || key[4] != '-') return std::nullopt;
  std::optional<absl::CivilDay> label;
  switch (kind) {
    case PeriodKind::kDay: {
      const std::optional<int> month = Number(key.substr(5, 2), 2);
      const std::optional<int> day =
          key.size() == 10 && key[7] == '-' ? Number(key.substr(8), 2) : std::nullopt;
      if (month.has_value() && day.has_value()) label = absl::CivilDay(*year, *month, *day);
      break;
    }
    case PeriodKind::kWeek: {
      const std::optional<int> week =
          key.size() == 8 && key[5] == 'W' ? Number(key.substr(6), 2) : std::nullopt;
      if (week.has_value() && *week >= 1) {
        // Week 1 is the week with the year's first Thursday, the one that holds January 4th.
        label = LabelOf(PeriodKind::kWeek, absl::CivilDay(*year, 1, 4)) + 7 * (*week - 1);
      }
      break;
    }
    case PeriodKind::kMonth: {
      const std::optional<int> month = Number(key.substr(5), 2);
      if (month.has_value()) label = absl::CivilDay(*year, *month, 1);
      break;
    }
  }
  // Civil times normalize what they are given ("2026-02-30" is March 2nd, week 54 the next
  // year's first): a key is well formed only if it names its label again.
  if (!label.has_value() || KeyOf(kind, *label) != key) return std::nullopt;
  return label;
}

int64_t DayStartMs(const absl::TimeZone& zone, absl::CivilDay day) {
  const absl::TimeZone::TimeInfo at = zone.At(absl::CivilSecond(day));
  // Skipped: 00:00 falls in a DST gap; the day starts where the gap ends.
  return absl::ToUnixMillis(at.kind == absl::TimeZone::TimeInfo::SKIPPED ? at.trans : at.pre);
}

absl::StatusOr<AppCalendar> AppCalendar::Make(std::vector<ZoneChange> zones) {
  if (zones.empty()) return absl::InvalidArgumentError("an app calendar needs a time zone");
  AppCalendar calendar;
  for (size_t i = 0; i < zones.size(); ++i) {
    if (i > 0 && zones[i].since_ms <= zones[i - 1].since_ms) {
      return absl::InvalidArgumentError("time zone changes are not in order");
    }
    absl::TimeZone zone;
    if (!absl::LoadTimeZone(zones[i].zone, &zone)) {
      return absl::UnavailableError(absl::StrCat("time zone \"", zones[i].zone,
                                                 "\" cannot be loaded: is the zone database "
                                                 "(tzdata, /usr/share/zoneinfo) installed?"));
    }
    for (PeriodKind kind : kPeriodKinds) {
      std::vector<Segment>& segments = calendar.segments_[KindIndex(kind)];
      Segment segment{zones[i].zone, zone, INT64_MIN, std::nullopt};
      if (i > 0) {
        // Takes effect when the period the change was made in ends, under the zone before it.
        const Period during = calendar.Of(kind, zones[i].since_ms);
        segment.from_ms = during.end_ms;
        segment.first_label = NextLabel(kind, *ParseKey(kind, during.key));
      }
      segments.push_back(std::move(segment));
    }
  }
  return calendar;
}

const std::vector<AppCalendar::Segment>& AppCalendar::SegmentsOf(PeriodKind kind) const {
  return segments_[KindIndex(kind)];
}

size_t AppCalendar::SegmentAt(const std::vector<Segment>& segments, int64_t at_ms) {
  size_t i = segments.size() - 1;
  while (i > 0 && segments[i].from_ms > at_ms) --i;
  return i;
}

absl::CivilDay AppCalendar::NaturalLabel(PeriodKind kind, const Segment& segment, int64_t at_ms) {
  return LabelOf(kind, absl::ToCivilDay(absl::FromUnixMillis(at_ms), segment.zone));
}

Period AppCalendar::InSegment(PeriodKind kind, const std::vector<Segment>& segments, size_t i,
                              absl::CivilDay label) {
  const Segment& segment = segments[i];
  Period period{kind, KeyOf(kind, label), DayStartMs(segment.zone, label),
                DayStartMs(segment.zone, NextLabel(kind, label))};
  // A segment's first period starts at the switch: under the label after the old zone's last
  // one, even where this zone's own midnight for it comes later (a zone behind the old one).
  if (segment.first_label.has_value() && label == *segment.first_label) {
    period.start_ms = segment.from_ms;
  }
  period.start_ms = std::max(period.start_ms, segment.from_ms);
  if (i + 1 < segments.size()) period.end_ms = std::min(period.end_ms, segments[i + 1].from_ms);
  // A label that a switch skipped (a zone far ahead of the old one) names no time.
  if (period.end_ms < period.start_ms) period.start_ms = period.end_ms;
  return period;
}

Period AppCalendar::Of(PeriodKind kind, int64_t at_ms) const {
  const std::vector<Segment>& segments = SegmentsOf(kind);
  const size_t i = SegmentAt(segments, at_ms);
  absl::CivilDay label = NaturalLabel(kind, segments[i], at_ms);
  if (segments[i].first_label.has_value()) label = std::max(label, *segments[i].first_label);
  return InSegment(kind, segments, i, label);
}

std::optional<Period> AppCalendar::Named(PeriodKind kind, absl::string_view key) const {
  const std::optional<absl::CivilDay> label = ParseKey(kind, key);
  if (!label.has_value()) return std::nullopt;
  const std::vector<Segment>& segments = SegmentsOf(kind);
  // The last segment whose first period's label is at or before this one.
  size_t i = segments.size() - 1;
  for (; i > 0; --i) {
    const absl::CivilDay first =
        std::max(NaturalLabel(kind, segments[i], segments[i].from_ms), *segments[i].first_label);
    if (first <= *label) break;
  }
  return InSegment(kind, segments, i, *label);
}

Period AppCalendar::Before(const Period& period) const {
  return *Named(period.kind,
                KeyOf(period.kind, PreviousLabel(period.kind, *ParseKey(period.kind, period.key))));
}

Period AppCalendar::After(const Period& period) const {
  return *Named(period.kind,
                KeyOf(period.kind, NextLabel(period.kind, *ParseKey(period.kind, period.key))));
}

int64_t AppCalendar::LastSwitchMs(PeriodKind kind) const { return SegmentsOf(kind).back().from_ms; }

int64_t AppCalendar::SwitchMs(PeriodKind kind, size_t zone) const {
  return SegmentsOf(kind).at(zone).from_ms;
}

absl::Status CheckZoneDatabase() {
  for (const char* name : {"Asia/Shanghai", "America/New_York"}) {
    absl::TimeZone zone;
    if (!absl::LoadTimeZone(name, &zone)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the time zone database is missing (time zone \"", name,
          "\" does not load): install tzdata (/usr/share/zoneinfo, or set TZDIR); period walls "
          "are kept in each app's zone, never as UTC"));
    }
  }
  return absl::OkStatus();
}

}  // namespace giftwall::domain
