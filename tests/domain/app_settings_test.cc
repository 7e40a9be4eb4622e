// Deciding a change of an app's settings, retention, and which periods an event writes
// (DESIGN §2.15), without a database.
#include "server/domain/app_settings.h"

#include "absl/time/civil_time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace giftwall::domain {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

int64_t Utc(int y, int mo, int d, int h = 0) {
  return absl::ToUnixMillis(
      absl::FromCivil(absl::CivilSecond(y, mo, d, h, 0, 0), absl::UTCTimeZone()));
}

SettingsRequest Request(const std::string& zone, std::vector<std::string> kinds) {
  return SettingsRequest{zone, std::move(kinds), "ops"};
}

TEST(AppSettings, Rule15_FirstSettingsCoverAllHistoryAndAskForARebuild) {
  absl::StatusOr<SettingsChange> change = DecideSettingsChange(
      std::nullopt, Request("Asia/Shanghai", {"month", "week", "month"}), Utc(2026, 12, 5));
  ASSERT_TRUE(change.ok()) << change.status();
  EXPECT_TRUE(change->changed);
  EXPECT_TRUE(change->rebuild_needed);
  EXPECT_THAT(change->note, HasSubstr("RebuildGiftWall"));
  EXPECT_THAT(change->settings.kinds, ElementsAre(PeriodKind::kWeek, PeriodKind::kMonth));
  ASSERT_EQ(change->settings.zones.size(), 1u);
  EXPECT_EQ(change->settings.zones[0].since_ms, INT64_MIN);
  EXPECT_EQ(change->settings.changed_at_ms, Utc(2026, 12, 5));
  EXPECT_EQ(PeriodKindsList(change->settings.kinds), "week,month");
}

TEST(AppSettings, Rule15_AnUnknownZoneOrKindIsInvalidAndNamed) {
  absl::StatusOr<SettingsChange> zone =
      DecideSettingsChange(std::nullopt, Request("Asia/Atlantis", {"month"}), 1);
  EXPECT_EQ(zone.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(zone.status().message(), HasSubstr("Asia/Atlantis"));
  absl::StatusOr<SettingsChange> kind =
      DecideSettingsChange(std::nullopt, Request("UTC", {"month", "year"}), 1);
  EXPECT_EQ(kind.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(kind.status().message(), HasSubstr("\"year\""));
  EXPECT_EQ(DecideSettingsChange(std::nullopt, Request("", {}), 1).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(AppSettings, Rule15_AZoneChangeAppendsAZoneAndAnotherWaitsUntilItTookEffect) {
  const AppSettings utc{{PeriodKind::kMonth}, {{INT64_MIN, "UTC"}}, Utc(2026, 1, 1), "ops"};
  absl::StatusOr<SettingsChange> change =
      DecideSettingsChange(utc, Request("Asia/Shanghai", {"month"}), Utc(2026, 12, 15));
  ASSERT_TRUE(change.ok()) << change.status();
  EXPECT_TRUE(change->zone_changed);
  EXPECT_TRUE(change->rebuild_needed);
  ASSERT_EQ(change->settings.zones.size(), 2u);
  EXPECT_EQ(change->settings.zones[1].since_ms, Utc(2026, 12, 15));
  // Another change before every kind has switched (months at 2027-01-01): refused, with when.
  absl::StatusOr<SettingsChange> again =
      DecideSettingsChange(change->settings, Request("Europe/Paris", {"month"}), Utc(2026, 12, 20));
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(again.status().message(), HasSubstr("2027-01-01"));
  EXPECT_TRUE(
      DecideSettingsChange(change->settings, Request("Europe/Paris", {"month"}), Utc(2027, 1, 2))
          .ok());
}

TEST(AppSettings, TheSameSettingsAgainChangeNothing) {
  const AppSettings stored{{PeriodKind::kMonth}, {{INT64_MIN, "UTC"}}, Utc(2026, 1, 1), "ops"};
  absl::StatusOr<SettingsChange> change =
      DecideSettingsChange(stored, Request("UTC", {"month"}), Utc(2026, 12, 15));
  ASSERT_TRUE(change.ok());
  EXPECT_FALSE(change->changed);
  EXPECT_EQ(change->settings.changed_at_ms, Utc(2026, 1, 1));
  // Dropping a kind changes the settings but needs no rebuild.
  change = DecideSettingsChange(stored, Request("UTC", {}), Utc(2026, 12, 15));
  ASSERT_TRUE(change.ok());
  EXPECT_TRUE(change->changed);
  EXPECT_FALSE(change->rebuild_needed);
}

TEST(AppSettings, Rule19_StartingTheSentWallNeedsARebuildAndStoppingItDoesNot) {
  const AppSettings stored{{}, {{INT64_MIN, "UTC"}}, Utc(2026, 1, 1), "ops"};
  SettingsRequest request = Request("UTC", {});
  request.keep_sent_wall = true;
  absl::StatusOr<SettingsChange> change = DecideSettingsChange(stored, request, Utc(2026, 12, 15));
  ASSERT_TRUE(change.ok());
  EXPECT_TRUE(change->changed);
  EXPECT_TRUE(change->settings.keep_sent_wall);
  EXPECT_TRUE(change->rebuild_needed);
  EXPECT_THAT(change->note, HasSubstr("sent wall"));
  EXPECT_THAT(change->note, HasSubstr("RebuildGiftWall"));
  EXPECT_EQ(change->settings.changed_at_ms, Utc(2026, 12, 15));
  // The same again changes nothing, nor does a request that does not say (a caller that knows
  // nothing of it does not turn it off); stopping it needs no rebuild.
  change = DecideSettingsChange(change->settings, request, Utc(2026, 12, 16));
  ASSERT_TRUE(change.ok());
  EXPECT_FALSE(change->changed);
  change = DecideSettingsChange(change->settings, Request("UTC", {}), Utc(2026, 12, 16));
  ASSERT_TRUE(change.ok());
  EXPECT_FALSE(change->changed);
  EXPECT_TRUE(change->settings.keep_sent_wall);
  request.keep_sent_wall = false;
  change = DecideSettingsChange(change->settings, request, Utc(2026, 12, 16));
  ASSERT_TRUE(change.ok());
  EXPECT_TRUE(change->changed);
  EXPECT_FALSE(change->rebuild_needed);
  EXPECT_THAT(change->note, HasSubstr("no longer written"));
}

TEST(AppSettings, RetentionParsesEachKindAndRefusesWhatItCannotRead) {
  absl::StatusOr<PeriodRetention> retention = ParsePeriodRetention("month=3,day=0");
  ASSERT_TRUE(retention.ok());
  EXPECT_EQ(retention->past.at(PeriodKind::kMonth), 3);
  EXPECT_EQ(retention->past.at(PeriodKind::kWeek), 26);
  EXPECT_EQ(retention->past.at(PeriodKind::kDay), 0);
  EXPECT_EQ(PeriodRetentionText(PeriodRetention{}), "month=12,week=26,day=31");
  for (const char* bad : {"year=3", "month=-1", "month", "month=x", "month=1001"}) {
    EXPECT_FALSE(ParsePeriodRetention(bad).ok()) << bad;
  }
}

TEST(AppSettings, Rule15_AnEventWritesTheRetainedPeriodsOfTheKeptKindsOnly) {
  const AppSettings settings{
      {PeriodKind::kWeek, PeriodKind::kMonth}, {{INT64_MIN, "Asia/Shanghai"}}, 1, "ops"};
  PeriodRetention retention;
  retention.past[PeriodKind::kMonth] = 2;
  retention.past[PeriodKind::kWeek] = 1;
  absl::StatusOr<PeriodsToWrite> periods =
      PeriodsToWrite::Make(settings, retention, Utc(2026, 12, 5));
  ASSERT_TRUE(periods.ok()) << periods.status();
  std::vector<std::string> names;
  for (const Period& p : periods->Of(Utc(2026, 12, 3))) names.push_back(p.Name());
  EXPECT_THAT(names, ElementsAre("week:2026-W49", "month:2026-12"));
  // October is two months back: its month is kept, its week is not.
  names.clear();
  for (const Period& p : periods->Of(Utc(2026, 10, 20))) names.push_back(p.Name());
  EXPECT_THAT(names, ElementsAre("month:2026-10"));
  // September is past retention; next month is written (a wallet clock ahead), the one after not.
  EXPECT_TRUE(periods->Of(Utc(2026, 9, 20)).empty());
  EXPECT_EQ(periods->Of(Utc(2027, 1, 2)).size(), 1u);
  EXPECT_TRUE(periods->Of(Utc(2027, 2, 10)).empty());
}

AppSettings Keeping(const std::string& zone, std::vector<std::string> kinds) {
  absl::StatusOr<SettingsChange> change =
      DecideSettingsChange(std::nullopt, Request(zone, std::move(kinds)), Utc(2026, 1, 1));
  EXPECT_TRUE(change.ok()) << change.status();
  return change->settings;
}

TEST(PeriodSpec, Rule15_AReaderNamesAllTimeTheCurrentPeriodOrOneByKey) {
  for (const std::string text : {"", "day", "week", "month", "day:2026-12-03", "week:2026-W53",
                                 "month:2026-12", "day:2028-02-29"}) {
    absl::StatusOr<PeriodSpec> spec = ParsePeriodSpec(text);
    ASSERT_TRUE(spec.ok()) << text << ": " << spec.status();
    EXPECT_EQ(spec->Text(), text);
  }
  for (const auto& [text, says] : std::vector<std::pair<std::string, std::string>>{
           {"year", "unknown kind \"year\""},
           {"Month", "unknown kind \"Month\""},
           {"month:2026-13", "names no month (e.g. \"month:2026-12\")"},
           {"week:2025-W53", "names no week"},  // 2025 has 52 ISO weeks
           {"day:2026-02-29", "names no day"},
           {"month:", "names no month"},
           {"day:2026-12-3", "names no day"}}) {
    absl::StatusOr<PeriodSpec> spec = ParsePeriodSpec(text);
    ASSERT_FALSE(spec.ok()) << text;
    EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(spec.status().message(), HasSubstr(says)) << text;
  }
}

TEST(PeriodSpec, Rule15_TheCurrentPeriodIsTheOneTheDatabaseClockIsIn) {
  const AppSettings shanghai = Keeping("Asia/Shanghai", {"month", "week"});
  // 2026-11-30 16:00 UTC is 2026-12-01 00:00 in Shanghai.
  absl::StatusOr<std::optional<Period>> month =
      ResolvePeriod(*ParsePeriodSpec("month"), "demo", shanghai, Utc(2026, 11, 30, 16));
  ASSERT_TRUE(month.ok()) << month.status();
  EXPECT_EQ((*month)->Name(), "month:2026-12");
  EXPECT_EQ((*month)->start_ms, Utc(2026, 11, 30, 16));
  EXPECT_EQ((*month)->end_ms, Utc(2026, 12, 31, 16));
  month = ResolvePeriod(*ParsePeriodSpec("month"), "demo", shanghai, Utc(2026, 11, 30, 16) - 1);
  EXPECT_EQ((*month)->Name(), "month:2026-11");
  absl::StatusOr<std::optional<Period>> named =
      ResolvePeriod(*ParsePeriodSpec("week:2026-W53"), "demo", shanghai, Utc(2026, 1, 1));
  ASSERT_TRUE(named.ok()) << named.status();
  EXPECT_EQ((*named)->start_ms, Utc(2026, 12, 27, 16));  // Monday 2026-12-28 00:00 local
  absl::StatusOr<std::optional<Period>> all_time =
      ResolvePeriod(PeriodSpec(), "demo", std::nullopt, 0);
  ASSERT_TRUE(all_time.ok());
  EXPECT_FALSE(all_time->has_value());
}

TEST(PeriodSpec, Rule15_AKindTheAppDoesNotKeepIsInvalidNamingWhatItKeeps) {
  absl::StatusOr<std::optional<Period>> day = ResolvePeriod(
      *ParsePeriodSpec("day"), "demo", Keeping("Asia/Shanghai", {"month", "week"}), 0);
  EXPECT_EQ(day.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(day.status().message(), HasSubstr("app demo keeps no day walls (it keeps "
                                                "week,month and all-time"));
  day = ResolvePeriod(*ParsePeriodSpec("day:2026-12-01"), "demo", std::nullopt, 0);
  EXPECT_EQ(day.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(day.status().message(), HasSubstr("it keeps the all-time wall only"));
}

// ListSponsorHistory reads from the oldest retained period up to, not including, the current.
TEST(SponsorHistory, Rule15_TheHistoryIsThePastPeriodsStillRetained) {
  PeriodRetention retention;
  retention.past[PeriodKind::kMonth] = 2;
  const AppSettings shanghai = Keeping("Asia/Shanghai", {"month"});
  absl::StatusOr<HistoryWindow> window =
      ResolveHistory(PeriodKind::kMonth, "demo", shanghai, retention, Utc(2026, 11, 30, 16));
  ASSERT_TRUE(window.ok()) << window.status();
  EXPECT_EQ(window->current.Name(), "month:2026-12");
  EXPECT_EQ(window->oldest.Name(), "month:2026-10");
  // The calendar names each period of the window, with its bounds.
  std::optional<Period> november = window->calendar.Named(PeriodKind::kMonth, "2026-11");
  ASSERT_TRUE(november.has_value());
  EXPECT_EQ(november->end_ms, window->current.start_ms);

  absl::StatusOr<HistoryWindow> weeks =
      ResolveHistory(PeriodKind::kWeek, "demo", shanghai, retention, Utc(2026, 11, 30, 16));
  EXPECT_EQ(weeks.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(weeks.status().message(),
              HasSubstr("period_kind \"week\": app demo keeps no week walls (it keeps month"));
  EXPECT_EQ(ResolveHistory(PeriodKind::kDay, "demo", std::nullopt, retention, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(PeriodSpec, Rule15_APageTokenKeepsTheRequestInThePeriodItWasIssuedFor) {
  const PeriodSpec current = *ParsePeriodSpec("month");
  absl::StatusOr<PeriodSpec> next = ContinuePeriod(current, "month:2026-11");
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(next->Text(), "month:2026-11") << "the month the first page read, not today's";
  next = ContinuePeriod(*ParsePeriodSpec("month:2026-11"), "month:2026-11");
  ASSERT_TRUE(next.ok());
  next = ContinuePeriod(PeriodSpec(), "");
  ASSERT_TRUE(next.ok());
  EXPECT_TRUE(next->all_time());
  for (const auto& [requested, issued] :
       std::vector<std::pair<std::string, std::string>>{{"", "month:2026-11"},
                                                        {"month", ""},
                                                        {"week", "month:2026-11"},
                                                        {"month:2026-10", "month:2026-11"}}) {
    absl::StatusOr<PeriodSpec> bad = ContinuePeriod(*ParsePeriodSpec(requested), issued);
    ASSERT_FALSE(bad.ok()) << requested << " with a token of " << issued;
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(bad.status().message(), HasSubstr("page_token was issued for period"));
  }
}

}  // namespace
}  // namespace giftwall::domain
