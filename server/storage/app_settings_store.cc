#include "server/storage/app_settings_store.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "glog/logging.h"
#include "server/common/status_macros.h"
#include "server/storage/columns.h"
#include "server/storage/db_clock.h"
#include "server/storage/row_set.h"

namespace giftwall::storage {
namespace {

constexpr RowColumn kAppColumns[] = {{0, "j_app", "VARCHAR(64) CHARACTER SET ascii"}};

enum SettingsColumn { kApp, kKinds, kChangedAt, kChangedBy, kKeepSent, kSince, kZone, kNow };
constexpr ResultColumn kSettingsColumns[] = {
    {kApp, "s.app_code"},         {kKinds, "s.period_kinds"},      {kChangedAt, "s.changed_at_ms"},
    {kChangedBy, "s.changed_by"}, {kKeepSent, "s.keep_sent_wall"}, {kSince, "z.since_ms"},
    {kZone, "z.time_zone"},       {kNow, GIFTWALL_DB_NOW_MS},
};
static_assert(InPositionOrder(kSettingsColumns));

// An app's first zone covers all of history: stored with since_ms 0 (no event is that old).
constexpr int64_t kFirstZoneSince = 0;

std::string ReadSettingsSql(absl::string_view lock) {
  return absl::StrCat("SELECT ", SelectList(kSettingsColumns), "\nFROM ", kRowsTable,
                      R"sql(
STRAIGHT_JOIN giftwall_app_settings s ON s.app_code = UNHEX(jt.j_app)
STRAIGHT_JOIN giftwall_app_time_zones z ON z.app_code = s.app_code
ORDER BY s.app_code, z.since_ms
)sql",
                      lock);
}

const RowsSql& ReadSettingsPlainSql() {
  static const auto* const sql = new RowsSql(kAppColumns, ReadSettingsSql(""));
  return *sql;
}
const RowsSql& ReadSettingsSharedSql() {
  static const auto* const sql = new RowsSql(kAppColumns, ReadSettingsSql("LOCK IN SHARE MODE"));
  return *sql;
}
const RowsSql& ReadSettingsExclusiveSql() {
  static const auto* const sql = new RowsSql(kAppColumns, ReadSettingsSql("FOR UPDATE"));
  return *sql;
}

// Makes the app's row exist and locks it, so that two first changes of one app queue up: a
// row this makes (changed_at_ms -1, no zone) is no settings yet.
constexpr absl::string_view kLockSettingsRow = R"sql(
INSERT INTO giftwall_app_settings (app_code, period_kinds, changed_at_ms, created_at_ms,
                                   updated_at_ms)
VALUES (?, '', -1, )sql" GIFTWALL_DB_NOW_MS ", " GIFTWALL_DB_NOW_MS R"sql()
ON DUPLICATE KEY UPDATE app_code = app_code)sql";

constexpr absl::string_view kWriteSettings = R"sql(
UPDATE giftwall_app_settings
SET period_kinds = ?, changed_at_ms = ?, changed_by = ?, keep_sent_wall = ?,
    updated_at_ms = )sql" GIFTWALL_DB_NOW_MS
                                             R"sql(
WHERE app_code = ?)sql";

// Zones are only ever appended.
constexpr absl::string_view kAddZone = R"sql(
INSERT IGNORE INTO giftwall_app_time_zones (app_code, since_ms, time_zone) VALUES (?, ?, ?))sql";

constexpr absl::string_view kNowSql = "SELECT " GIFTWALL_DB_NOW_MS;

absl::StatusOr<AppSettingsSnapshot> Read(SqlConnection& conn, const RowsSql& sql,
                                         absl::Span<const std::string> app_codes) {
  RowSet apps(kAppColumns);
  for (const std::string& app : app_codes) apps.Row().Bytes(0, app);
  AppSettingsSnapshot snapshot;
  std::string bad_kinds;
  RETURN_IF_ERROR(conn.Query(sql, {&apps}, [&](const SqlRow& row) {
    snapshot.now_ms = row.Int(kNow);
    domain::AppSettings& settings = snapshot.apps[row.Str(kApp)];
    if (settings.zones.empty()) {
      const std::vector<std::string> names =
          absl::StrSplit(row.Str(kKinds), ',', absl::SkipEmpty());
      absl::StatusOr<std::vector<domain::PeriodKind>> kinds = domain::ParsePeriodKinds(names);
      if (!kinds.ok()) bad_kinds = row.Str(kKinds);
      settings.kinds = kinds.ok() ? *std::move(kinds) : std::vector<domain::PeriodKind>{};
      settings.changed_at_ms = row.Int(kChangedAt);
      settings.changed_by = row.Str(kChangedBy);
      settings.keep_sent_wall = row.Int(kKeepSent) != 0;
    }
    const int64_t since = row.Int(kSince);
    settings.zones.push_back({since == kFirstZoneSince ? INT64_MIN : since, row.Str(kZone)});
  }));
  if (!bad_kinds.empty()) {
    return absl::InternalError(absl::StrCat("giftwall_app_settings holds period kinds \"",
                                            bad_kinds, "\" that this server does not know"));
  }
  return snapshot;
}

}  // namespace

absl::StatusOr<AppSettingsSnapshot> ReadAppSettings(SqlConnection& conn,
                                                    absl::Span<const std::string> app_codes,
                                                    bool shared_lock) {
  return Read(conn, shared_lock ? ReadSettingsSharedSql() : ReadSettingsPlainSql(), app_codes);
}

absl::StatusOr<std::optional<domain::AppSettings>> SettingsRepository::Get(
    const std::string& app_code) {
  ASSIGN_OR_RETURN(PooledConnection conn, pool_.Acquire());
  ASSIGN_OR_RETURN(AppSettingsSnapshot snapshot, Read(*conn, ReadSettingsPlainSql(), {app_code}));
  auto it = snapshot.apps.find(app_code);
  if (it == snapshot.apps.end()) return std::optional<domain::AppSettings>();
  return std::optional<domain::AppSettings>(std::move(it->second));
}

absl::StatusOr<AppSettingsSnapshot> SettingsRepository::Snapshot(const std::string& app_code) {
  ASSIGN_OR_RETURN(PooledConnection conn, pool_.Acquire());
  return Read(*conn, ReadSettingsPlainSql(), {app_code});
}

absl::StatusOr<int64_t> SettingsRepository::DeletePeriodRowsBefore(const std::string& app_code,
                                                                   absl::string_view kind,
                                                                   absl::string_view key,
                                                                   int64_t limit) {
  static constexpr absl::string_view kDeletes[] = {
      "DELETE FROM user_gift_wall_period_sender WHERE app_code = ? AND period_kind = ? AND "
      "period_key < ? LIMIT ?",
      "DELETE FROM user_gift_wall_period WHERE app_code = ? AND period_kind = ? AND "
      "period_key < ? LIMIT ?",
      "DELETE FROM user_gift_sent WHERE app_code = ? AND period_kind = ? AND period_key < ? "
      "LIMIT ?"};
  ASSIGN_OR_RETURN(PooledConnection conn, pool_.Acquire());
  int64_t deleted = 0;
  for (absl::string_view sql : kDeletes) {
    ASSIGN_OR_RETURN(const int64_t rows, conn->Execute(sql, {app_code, kind, key, limit}));
    deleted += rows;
  }
  return deleted;
}

absl::StatusOr<domain::AppSettings> SettingsRepository::Update(const std::string& app_code,
                                                               Decide decide) {
  ASSIGN_OR_RETURN(PooledConnection conn, pool_.Acquire());
  ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(*conn));
  RETURN_IF_ERROR(conn->Execute(kLockSettingsRow, {app_code}).status());
  ASSIGN_OR_RETURN(AppSettingsSnapshot snapshot,
                   Read(*conn, ReadSettingsExclusiveSql(), {app_code}));
  int64_t now_ms = snapshot.now_ms;
  if (snapshot.apps.empty()) {
    RETURN_IF_ERROR(conn->Query(kNowSql, {}, [&](const SqlRow& row) { now_ms = row.Int(0); }));
  }
  std::optional<domain::AppSettings> current;
  if (auto it = snapshot.apps.find(app_code); it != snapshot.apps.end()) {
    current = std::move(it->second);
  }
  ASSIGN_OR_RETURN(domain::AppSettings settings, decide(current, now_ms));
  RETURN_IF_ERROR(conn->Execute(kWriteSettings,
                                {domain::PeriodKindsList(settings.kinds), settings.changed_at_ms,
                                 settings.changed_by, int64_t{settings.keep_sent_wall}, app_code})
                      .status());
  for (const domain::ZoneChange& zone : settings.zones) {
    const int64_t since = zone.since_ms == INT64_MIN ? kFirstZoneSince : zone.since_ms;
    RETURN_IF_ERROR(conn->Execute(kAddZone, {app_code, since, zone.zone}).status());
  }
  RETURN_IF_ERROR(tx.Commit());
  return settings;
}

}  // namespace giftwall::storage
