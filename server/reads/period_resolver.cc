#include "server/reads/period_resolver.h"

#include <iterator>
#include <utility>

namespace giftwall::reads {

absl::StatusOr<std::optional<domain::Period>> PeriodResolver::Resolve(
    const std::string& app_code, const domain::PeriodSpec& spec) {
  if (spec.all_time()) return std::nullopt;
  std::optional<Known> known;
  {
    absl::MutexLock lock(&mu_);
    auto it = known_.find(app_code);
    if (it != known_.end() && absl::Now() - it->second.read_at < max_age_) known = it->second;
  }
  if (!known.has_value()) {
    absl::StatusOr<storage::AppSettingsSnapshot> read = read_settings_(app_code);
    if (!read.ok()) return read.status();
    const absl::Time now = absl::Now();
    auto settings = read->apps.find(app_code);
    known = Known{settings == read->apps.end() ? std::nullopt
                                               : std::make_optional(std::move(settings->second)),
                  absl::FromUnixMillis(read->now_ms) - now, now};
    absl::MutexLock lock(&mu_);
    if (known_.size() >= kMaxApps) {
      for (auto it = known_.begin(); it != known_.end();) {
        it = now - it->second.read_at >= max_age_ ? known_.erase(it) : std::next(it);
      }
      if (known_.size() >= kMaxApps) known_.clear();
    }
    known_.insert_or_assign(app_code, *known);
  }
  return domain::ResolvePeriod(spec, app_code, known->settings,
                               absl::ToUnixMillis(absl::Now() + known->database_ahead));
}

}  // namespace giftwall::reads
