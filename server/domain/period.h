// Period walls (DESIGN §2.15): besides the all-time wall, an app may keep a wall per day, ISO
// week and month, in its own time zone, each with its own 冠名. A period is one more grouping key
// of the fold; this file says which period an event falls in and what a period's name means.
// Pure: zones come from the zone database through Abseil (tzdata), nothing here reads a clock.
#ifndef GIFTWALL_SERVER_DOMAIN_PERIOD_H_
#define GIFTWALL_SERVER_DOMAIN_PERIOD_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/civil_time.h"
#include "absl/time/time.h"

namespace giftwall::domain {

// Day: local 00:00 to the next 00:00. Week (ISO 8601): Monday 00:00 to the next Monday 00:00,
// named by its week-year ("2026-W53"). Month: the 1st 00:00 to the next 1st. Where 00:00 does
// not exist (a DST jump at midnight), a period starts at the first instant after it.
enum class PeriodKind { kDay, kWeek, kMonth };
inline constexpr PeriodKind kPeriodKinds[] = {PeriodKind::kDay, PeriodKind::kWeek,
                                              PeriodKind::kMonth};

absl::string_view PeriodKindName(PeriodKind kind);  // "day", "week", "month"
std::optional<PeriodKind> ParsePeriodKind(absl::string_view name);

// One period of one kind: its key ("2026-12-03", "2026-W49", "2026-12") and its bounds in Unix
// milliseconds, [start_ms, end_ms).
struct Period {
  PeriodKind kind = PeriodKind::kDay;
  std::string key;
  int64_t start_ms = 0;
  int64_t end_ms = 0;

  std::string Name() const;  // "month:2026-12"
  bool operator==(const Period& other) const {
    return kind == other.kind && key == other.key && start_ms == other.start_ms &&
           end_ms == other.end_ms;
  }
};

// A period's label: the civil day its first local day is, whatever the zone. Labels of one kind
// order as their periods do.
absl::CivilDay LabelOf(PeriodKind kind, absl::CivilDay day);
absl::CivilDay NextLabel(PeriodKind kind, absl::CivilDay label);
absl::CivilDay PreviousLabel(PeriodKind kind, absl::CivilDay label);
std::string KeyOf(PeriodKind kind, absl::CivilDay label);
// The label a key names; nullopt unless the key is well formed and names a real period
// ("2026-02-30", "2025-W53" and "2026-13" do not).
std::optional<absl::CivilDay> ParseKey(PeriodKind kind, absl::string_view key);

// Where an app's time zone changed: from `since_ms` on (the change), `zone` is the app's zone.
// The first of an app's zones has since_ms = INT64_MIN.
struct ZoneChange {
  int64_t since_ms = 0;
  std::string zone;
};

// An app's periods: its zones over time, for every kind (whether the app keeps it or not). A zone
// change takes effect, for each kind, at the end of the period it was made in (under the zone
// before it): the periods before that instant are the old zone's, those from it the new zone's,
// so no period mixes two zones' boundaries (DESIGN §2.15).
class AppCalendar {
 public:
  // UNAVAILABLE naming the zone if the zone database lacks one (a server whose tzdata went
  // missing must not fold events as UTC); INVALID_ARGUMENT if `zones` is empty or not in order.
  static absl::StatusOr<AppCalendar> Make(std::vector<ZoneChange> zones);

  // The period of `kind` that an instant falls in.
  Period Of(PeriodKind kind, int64_t at_ms) const;
  // The period `key` names; nullopt if the key is malformed.
  std::optional<Period> Named(PeriodKind kind, absl::string_view key) const;
  // The period before / after `period`, of its kind.
  Period Before(const Period& period) const;
  Period After(const Period& period) const;

  // When the last zone change takes (or took) effect for `kind`; INT64_MIN without a change.
  int64_t LastSwitchMs(PeriodKind kind) const;
  // When the `zone`-th zone (0: the first) takes or took effect for `kind`; INT64_MIN for the
  // first.
  int64_t SwitchMs(PeriodKind kind, size_t zone) const;
  const std::string& current_zone() const { return segments_[0].back().zone_name; }

 private:
  // A stretch of time in one zone. From `from_ms`, labels never go back past `first_label`:
  // the first period after a switch starts at the switch, under the label after the last one of
  // the zone before (a zone behind the old one would otherwise name a label it already had).
  struct Segment {
    std::string zone_name;
    absl::TimeZone zone;
    int64_t from_ms = INT64_MIN;
    std::optional<absl::CivilDay> first_label;
  };

  AppCalendar() = default;
  const std::vector<Segment>& SegmentsOf(PeriodKind kind) const;
  static size_t SegmentAt(const std::vector<Segment>& segments, int64_t at_ms);
  static Period InSegment(PeriodKind kind, const std::vector<Segment>& segments, size_t i,
                          absl::CivilDay label);
  static absl::CivilDay NaturalLabel(PeriodKind kind, const Segment& segment, int64_t at_ms);

  // Per kind, in kPeriodKinds' order.
  std::vector<Segment> segments_[3];
};

// OK if the zone database is there (a zone of each hemisphere loads). Without it, every zone but
// UTC fails to load: a server must refuse to start rather than fold events as UTC.
absl::Status CheckZoneDatabase();

// The instant a local civil day starts in `zone`: its 00:00, or the first instant after it where
// 00:00 does not exist.
int64_t DayStartMs(const absl::TimeZone& zone, absl::CivilDay day);

}  // namespace giftwall::domain

#endif  // GIFTWALL_SERVER_DOMAIN_PERIOD_H_
