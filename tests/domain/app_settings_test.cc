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

}  // namespace
}  // namespace giftwall::domain
