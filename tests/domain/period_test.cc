// Which period an event falls in, and what a period's name means (DESIGN §2.15), in real zones
// from the zone database: month and DST boundaries, ISO week-years, leap days, a DST jump at
// midnight, and zone changes.
#include "server/domain/period.h"

#include "absl/time/civil_time.h"
#include "gtest/gtest.h"

namespace giftwall::domain {
namespace {

int64_t Utc(int y, int mo, int d, int h = 0, int mi = 0) {
  return absl::ToUnixMillis(
      absl::FromCivil(absl::CivilSecond(y, mo, d, h, mi, 0), absl::UTCTimeZone()));
}

AppCalendar Calendar(std::vector<ZoneChange> zones) {
  absl::StatusOr<AppCalendar> calendar = AppCalendar::Make(std::move(zones));
  EXPECT_TRUE(calendar.ok()) << calendar.status();
  return *std::move(calendar);
}

AppCalendar In(const std::string& zone) { return Calendar({{INT64_MIN, zone}}); }

TEST(Period, Rule15_AMonthInShanghaiStartsAt1600UtcOnTheLastDayBefore) {
  const AppCalendar shanghai = In("Asia/Shanghai");
  EXPECT_EQ(shanghai.Of(PeriodKind::kMonth, Utc(2026, 11, 30, 16) - 1).key, "2026-11");
  const Period december = shanghai.Of(PeriodKind::kMonth, Utc(2026, 11, 30, 16));
  EXPECT_EQ(december.Name(), "month:2026-12");
  EXPECT_EQ(december.start_ms, Utc(2026, 11, 30, 16));
  EXPECT_EQ(december.end_ms, Utc(2026, 12, 31, 16));
  EXPECT_EQ(shanghai.Of(PeriodKind::kMonth, Utc(2026, 12, 31, 15, 59)).key, "2026-12");
  EXPECT_EQ(shanghai.Of(PeriodKind::kMonth, Utc(2026, 12, 31, 16)).key, "2027-01");
  EXPECT_EQ(shanghai.Of(PeriodKind::kDay, Utc(2026, 12, 2, 23)).key, "2026-12-03");
}

TEST(Period, Rule15_DaysAcrossADstChangeInNewYorkLast23And25Hours) {
  const AppCalendar new_york = In("America/New_York");
  const Period spring = new_york.Of(PeriodKind::kDay, Utc(2026, 3, 8, 12));
  EXPECT_EQ(spring.key, "2026-03-08");
  EXPECT_EQ(spring.start_ms, Utc(2026, 3, 8, 5));  // EST, UTC-5
  EXPECT_EQ(spring.end_ms, Utc(2026, 3, 9, 4));    // EDT, UTC-4
  const Period fall = new_york.Of(PeriodKind::kDay, Utc(2026, 11, 1, 12));
  EXPECT_EQ(fall.end_ms - fall.start_ms, 25 * 3'600'000);
  // An event at 01:30 local on either side of the fall-back hour is the same day.
  EXPECT_EQ(new_york.Of(PeriodKind::kDay, Utc(2026, 11, 1, 5, 30)).key, "2026-11-01");
  EXPECT_EQ(new_york.Of(PeriodKind::kDay, Utc(2026, 11, 1, 6, 30)).key, "2026-11-01");
  EXPECT_EQ(new_york.Of(PeriodKind::kDay, Utc(2026, 11, 2, 4, 59)).key, "2026-11-01");
  EXPECT_EQ(new_york.Of(PeriodKind::kDay, Utc(2026, 11, 2, 5)).key, "2026-11-02");
}

TEST(Period, Rule15_IsoWeekYears) {
  const AppCalendar utc = In("UTC");
  EXPECT_EQ(utc.Of(PeriodKind::kWeek, Utc(2026, 12, 31, 12)).key, "2026-W53");
  EXPECT_EQ(utc.Of(PeriodKind::kWeek, Utc(2027, 1, 3, 23)).key, "2026-W53");
  const Period w1 = utc.Of(PeriodKind::kWeek, Utc(2027, 1, 4));
  EXPECT_EQ(w1.key, "2027-W01");
  EXPECT_EQ(w1.start_ms, Utc(2027, 1, 4));
  EXPECT_EQ(w1.end_ms, Utc(2027, 1, 11));
  // 2026-01-01 is a Thursday: its week is 2026-W01 and starts in 2025.
  EXPECT_EQ(utc.Of(PeriodKind::kWeek, Utc(2025, 12, 29)).key, "2026-W01");
  EXPECT_TRUE(ParseKey(PeriodKind::kWeek, "2026-W53").has_value());
  EXPECT_FALSE(ParseKey(PeriodKind::kWeek, "2025-W53").has_value()) << "2025 has 52 weeks";
  EXPECT_EQ(utc.Named(PeriodKind::kWeek, "2026-W53")->start_ms, Utc(2026, 12, 28));
}

TEST(Period, Rule15_ALeapDayIsADayOfItsOwnAndFebruaryHas29Days) {
  const AppCalendar utc = In("UTC");
  EXPECT_EQ(utc.Of(PeriodKind::kDay, Utc(2028, 2, 29, 10)).key, "2028-02-29");
  EXPECT_EQ(utc.Named(PeriodKind::kMonth, "2028-02")->end_ms, Utc(2028, 3, 1));
  EXPECT_TRUE(ParseKey(PeriodKind::kDay, "2028-02-29").has_value());
  EXPECT_FALSE(ParseKey(PeriodKind::kDay, "2027-02-29").has_value());
}

TEST(Period, Rule15_WhereMidnightDoesNotExistTheDayStartsWhenTheGapEnds) {
  absl::TimeZone santiago;
  ASSERT_TRUE(absl::LoadTimeZone("America/Santiago", &santiago));
  const absl::CivilDay day(2026, 9, 6);  // Chile springs forward at 24:00 on Saturday
  ASSERT_EQ(santiago.At(absl::CivilSecond(day)).kind, absl::TimeZone::TimeInfo::SKIPPED)
      << "the zone database no longer skips this midnight: pick another";
  const int64_t one_am =
      absl::ToUnixMillis(absl::FromCivil(absl::CivilSecond(2026, 9, 6, 1, 0, 0), santiago));
  EXPECT_EQ(DayStartMs(santiago, day), one_am);
  const AppCalendar calendar = In("America/Santiago");
  EXPECT_EQ(calendar.Of(PeriodKind::kDay, one_am).start_ms, one_am);
  EXPECT_EQ(calendar.Of(PeriodKind::kDay, one_am - 1).key, "2026-09-05");
}

TEST(Period, KeysAreParsedExactly) {
  for (const char* bad : {"", "2026", "2026-1", "2026-13", "2026-00", "0000-01", "2026-12 ",
                          " 2026-12", "2026/12", "2026-1a", "20261-01"}) {
    EXPECT_FALSE(ParseKey(PeriodKind::kMonth, bad).has_value()) << bad;
  }
  for (const char* bad : {"2026-12-3", "2026-12-32", "2026-02-30", "2026-12-03x"}) {
    EXPECT_FALSE(ParseKey(PeriodKind::kDay, bad).has_value()) << bad;
  }
  for (const char* bad : {"2026-W00", "2026-W54", "2026-w49", "2026-W4", "2026-49"}) {
    EXPECT_FALSE(ParseKey(PeriodKind::kWeek, bad).has_value()) << bad;
  }
  EXPECT_EQ(*ParseKey(PeriodKind::kMonth, "2026-12"), absl::CivilDay(2026, 12, 1));
  EXPECT_EQ(*ParseKey(PeriodKind::kWeek, "2026-W49"), absl::CivilDay(2026, 11, 30));
  EXPECT_EQ(ParsePeriodKind("week"), PeriodKind::kWeek);
  EXPECT_FALSE(ParsePeriodKind("year").has_value());
}

TEST(Period, BeforeAndAfterStepOnePeriod) {
  const AppCalendar utc = In("UTC");
  const Period march = *utc.Named(PeriodKind::kMonth, "2026-03");
  EXPECT_EQ(utc.Before(march).key, "2026-02");
  EXPECT_EQ(utc.After(march).key, "2026-04");
  EXPECT_EQ(utc.After(*utc.Named(PeriodKind::kWeek, "2026-W53")).key, "2027-W01");
}

TEST(Period, AnUnknownZoneIsUnavailableNeverUtc) {
  absl::StatusOr<AppCalendar> calendar = AppCalendar::Make({{INT64_MIN, "Mars/Olympus_Mons"}});
  ASSERT_FALSE(calendar.ok());
  EXPECT_EQ(calendar.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(calendar.status().message().find("Mars/Olympus_Mons"), std::string::npos);
}

// UTC to Shanghai (8 hours ahead), changed mid-December: December stays UTC's to its end; the
// next month starts there (not at Shanghai's midnight, which was 8 hours earlier) and ends at
// Shanghai's.
TEST(Period, Rule15_AZoneChangeAheadTakesEffectAtTheNextPeriodStart) {
  const AppCalendar calendar = Calendar({{INT64_MIN, "UTC"}, {Utc(2026, 12, 15), "Asia/Shanghai"}});
  EXPECT_EQ(calendar.LastSwitchMs(PeriodKind::kMonth), Utc(2027, 1, 1));
  const Period december = calendar.Of(PeriodKind::kMonth, Utc(2026, 12, 31, 20));
  EXPECT_EQ(december.key, "2026-12");
  EXPECT_EQ(december.start_ms, Utc(2026, 12, 1));
  EXPECT_EQ(december.end_ms, Utc(2027, 1, 1));
  const Period january = calendar.Of(PeriodKind::kMonth, Utc(2027, 1, 1));
  EXPECT_EQ(january.key, "2027-01");
  EXPECT_EQ(january.start_ms, Utc(2027, 1, 1));
  EXPECT_EQ(january.end_ms, Utc(2027, 1, 31, 16));
  EXPECT_EQ(*calendar.Named(PeriodKind::kMonth, "2027-01"), january);
  EXPECT_EQ(calendar.Of(PeriodKind::kMonth, Utc(2027, 2, 10)).start_ms, Utc(2027, 1, 31, 16));
  // Days switch at the end of the day of the change.
  EXPECT_EQ(calendar.LastSwitchMs(PeriodKind::kDay), Utc(2026, 12, 16));
}

// Shanghai to UTC (8 hours behind): Shanghai's December ends at 16:00 UTC on the 31st; UTC would
// call the next 8 hours December again, so they open January, which ends at UTC's.
TEST(Period, Rule15_AZoneChangeBehindNeverNamesAPeriodTwice) {
  const AppCalendar calendar = Calendar({{INT64_MIN, "Asia/Shanghai"}, {Utc(2026, 12, 15), "UTC"}});
  const Period december = *calendar.Named(PeriodKind::kMonth, "2026-12");
  EXPECT_EQ(december.start_ms, Utc(2026, 11, 30, 16));
  EXPECT_EQ(december.end_ms, Utc(2026, 12, 31, 16));
  const Period january = calendar.Of(PeriodKind::kMonth, Utc(2026, 12, 31, 18));
  EXPECT_EQ(january.key, "2027-01");
  EXPECT_EQ(january.start_ms, Utc(2026, 12, 31, 16));
  EXPECT_EQ(january.end_ms, Utc(2027, 2, 1));
  EXPECT_EQ(calendar.Of(PeriodKind::kMonth, Utc(2027, 1, 20)), january);
  EXPECT_EQ(*calendar.Named(PeriodKind::kMonth, "2027-01"), january);
  EXPECT_EQ(calendar.Before(january), december);
}

}  // namespace
}  // namespace giftwall::domain
