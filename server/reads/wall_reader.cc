#include "server/reads/wall_reader.h"

#include <algorithm>
#include <map>
#include <utility>

namespace giftwall::reads {
namespace {

concurrency::GroupQueueOptions QueueOptions(const WallReaderOptions& options) {
  concurrency::GroupQueueOptions queue;
  queue.name = "wall read";
  queue.lanes = options.lanes;
  queue.capacity = options.queue_capacity;
  queue.max_group_weight = static_cast<size_t>(std::max(options.max_group_walls, 1));
  return queue;
}

}  // namespace

WallReader::WallReader(storage::WallRepository& walls, PeriodResolver& periods,
                       CatalogCache& catalogs, OptOutCache& opt_outs, WallReaderOptions options)
    : WallReader(
          [&walls](absl::string_view app_code, const std::optional<domain::Period>& period,
                   absl::Span<const int64_t> user_ids) {
            return walls.ReadWalls(app_code, period, user_ids);
          },
          [&periods](const std::string& app_code, const domain::PeriodSpec& spec) {
            return periods.Resolve(app_code, spec);
          },
          [&catalogs](const std::string& app_code) { return catalogs.Get(app_code); },
          [&opt_outs](const std::string& app_code) { return opt_outs.Get(app_code); }, options) {}

WallReader::WallReader(ReadWallsFn read_walls, ResolvePeriodFn resolve_period, CatalogFn catalog,
                       OptOutsFn opt_outs, WallReaderOptions options)
    : read_walls_(std::move(read_walls)),
      resolve_period_(std::move(resolve_period)),
      catalog_(std::move(catalog)),
      opt_outs_(std::move(opt_outs)),
      queue_(
          QueueOptions(options), [](const WallRead&) { return size_t{1}; },
          [this](std::vector<WallRead> group) { RunGroup(std::move(group)); },
          [](WallRead read, absl::Status why) { read.done(std::move(why)); }) {}

WallReaderStats WallReader::Stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

void WallReader::RunGroup(std::vector<WallRead> group) {
  for (ReadsByWall walls = Claim(std::move(group)); !walls.empty(); walls = TakeWaiting(walls)) {
    ReadAndAnswer(walls);
  }
}

WallReader::ReadsByWall WallReader::Claim(std::vector<WallRead> group) {
  ReadsByWall mine;
  absl::MutexLock lock(&mu_);
  for (WallRead& read : group) {
    WallKey key(read.app_code, read.period.Text(), read.user_id);
    auto being_read = being_read_.find(key);
    if (being_read != being_read_.end()) {
      being_read->second.push_back(std::move(read));
    } else {
      mine[std::move(key)].push_back(std::move(read));
    }
  }
  for (const auto& [key, reads] : mine) being_read_.emplace(key, std::vector<WallRead>());
  return mine;
}

WallReader::ReadsByWall WallReader::TakeWaiting(const ReadsByWall& read) {
  ReadsByWall next;
  absl::MutexLock lock(&mu_);
  for (const auto& [key, reads] : read) {
    auto being_read = being_read_.find(key);
    if (being_read->second.empty()) {
      being_read_.erase(being_read);
    } else {
      next[key] = std::exchange(being_read->second, {});
    }
  }
  return next;
}

void WallReader::ReadAndAnswer(ReadsByWall& walls) {
  // One statement per app code and period; a wall asked for twice is read once.
  struct Wanted {
    domain::PeriodSpec period;
    std::vector<std::pair<int64_t, std::vector<WallRead*>>> users;
  };
  std::map<std::pair<std::string, std::string>, Wanted> by_app;
  for (auto& [key, reads] : walls) {
    std::vector<WallRead*> wanted;
    for (WallRead& read : reads) {
      absl::Status still = read.still_wanted ? read.still_wanted() : absl::OkStatus();
      if (still.ok()) {
        wanted.push_back(&read);
      } else {
        read.done(still);
      }
    }
    if (wanted.empty()) continue;
    const auto& [app, period, user] = key;
    Wanted& of_app = by_app[{app, period}];
    of_app.period = wanted.front()->period;
    of_app.users.emplace_back(user, std::move(wanted));
  }
  for (auto& [app_period, wanted] : by_app) {
    const std::string& app = app_period.first;
    absl::StatusOr<std::optional<domain::Period>> period = resolve_period_(app, wanted.period);
    absl::StatusOr<std::shared_ptr<const domain::CatalogIndex>> catalog =
        std::shared_ptr<const domain::CatalogIndex>();
    if (period.ok() && catalog_) catalog = catalog_(app);
    absl::StatusOr<std::shared_ptr<const domain::OptOuts>> opt_outs =
        std::shared_ptr<const domain::OptOuts>();
    if (period.ok() && catalog.ok()) opt_outs = opt_outs_(app);
    absl::StatusOr<std::map<int64_t, std::vector<domain::WallItem>>> read =
        absl::UnknownError("unread");
    if (!period.ok()) {
      read = period.status();
    } else if (!catalog.ok()) {
      read = catalog.status();
    } else if (!opt_outs.ok()) {
      read = opt_outs.status();
    } else {
      std::vector<int64_t> user_ids;
      for (const auto& [user, reads] : wanted.users) user_ids.push_back(user);
      read = read_walls_(app, *period, user_ids);
      if (read.ok()) {
        for (auto& [user, items] : *read) domain::MarkOptedOut(**opt_outs, items);
      }
      absl::MutexLock lock(&mu_);
      ++stats_.groups;
      for (const auto& [user, reads] : wanted.users) {
        stats_.reads += static_cast<int64_t>(reads.size());
      }
    }
    for (auto& [user, reads] : wanted.users) {
      if (!read.ok()) {
        for (WallRead* r : reads) r->done(read.status());
        continue;
      }
      std::vector<domain::WallSort> sorts;
      bool unlit = false;
      for (const WallRead* r : reads) {
        sorts.push_back(r->sort);
        unlit = unlit || r->include_unlit;
      }
      auto items = read->find(user);
      WallAnswer answer{
          std::make_shared<const domain::WallSnapshot>(domain::SnapshotWall(
              items == read->end() ? std::vector<domain::WallItem>() : std::move(items->second),
              sorts, *catalog, unlit)),
          *period};
      for (WallRead* r : reads) r->done(answer);
    }
  }
}

}  // namespace giftwall::reads
