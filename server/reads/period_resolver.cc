#include "server/reads/period_resolver.h"

#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"

namespace giftwall::reads {

absl::StatusOr<std::optional<domain::Period>> PeriodResolver::Resolve(
    const std::string& app_code, const domain::PeriodSpec& spec) {
  if (spec.all_time()) return std::nullopt;
  absl::StatusOr<Known> known = Lookup(app_code);
  if (!known.ok()) return known.status();
  return domain::ResolvePeriod(spec, app_code, known->settings, DatabaseNowMs(*known));
}

absl::StatusOr<domain::HistoryWindow> PeriodResolver::History(const std::string& app_code,
                                                              domain::PeriodKind kind) {
  absl::StatusOr<Known> known = Lookup(app_code);
  if (!known.ok()) return known.status();
  return domain::ResolveHistory(kind, app_code, known->settings, retention_, DatabaseNowMs(*known));
}

absl::Status PeriodResolver::CheckKeepsSentWall(const std::string& app_code) {
  absl::StatusOr<Known> known = Lookup(app_code);
  if (!known.ok()) return known.status();
  if (known->settings.has_value() && known->settings->keep_sent_wall) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("app ", app_code,
                   " keeps no sent wall: its settings must say keep_sent_wall (admin "
                   "SetAppSettings)"));
}

absl::StatusOr<PeriodResolver::Known> PeriodResolver::Lookup(const std::string& app_code) {
  {
    absl::MutexLock lock(&mu_);
    auto it = known_.find(app_code);
    if (it != known_.end() && absl::Now() - it->second.read_at < max_age_) return it->second;
  }
  absl::StatusOr<storage::AppSettingsSnapshot> read = read_settings_(app_code);
  if (!read.ok()) return read.status();
  const absl::Time now = absl::Now();
  auto settings = read->apps.find(app_code);
  Known known{
      settings == read->apps.end() ? std::nullopt : std::make_optional(std::move(settings->second)),
      absl::FromUnixMillis(read->now_ms) - now, now};
  absl::MutexLock lock(&mu_);
  if (known_.size() >= kMaxApps) {
    for (auto it = known_.begin(); it != known_.end();) {
      it = now - it->second.read_at >= max_age_ ? known_.erase(it) : std::next(it);
    }
    if (known_.size() >= kMaxApps) known_.clear();
  }
  known_.insert_or_assign(app_code, known);
  return known;
}

}  // namespace giftwall::reads
