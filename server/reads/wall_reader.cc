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

WallReader::WallReader(storage::WallRepository& walls, WallReaderOptions options)
    : WallReader(
          [&walls](absl::string_view app_code, absl::Span<const int64_t> user_ids) {
            return walls.ReadWalls(app_code, user_ids);
          },
          options) {}

WallReader::WallReader(ReadWallsFn read_walls, WallReaderOptions options)
    : read_walls_(std::move(read_walls)),
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
    WallKey key(read.app_code, read.user_id);
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
  // One statement per app code; a wall asked for twice is read once.
  std::map<std::string, std::vector<std::pair<int64_t, std::vector<WallRead*>>>> by_app;
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
    if (!wanted.empty()) by_app[key.first].emplace_back(key.second, std::move(wanted));
  }
  for (auto& [app, users] : by_app) {
    std::vector<int64_t> user_ids;
    for (const auto& [user, reads] : users) user_ids.push_back(user);
    absl::StatusOr<std::map<int64_t, std::vector<domain::WallItem>>> read =
        read_walls_(app, user_ids);
    {
      absl::MutexLock lock(&mu_);
      ++stats_.groups;
      for (const auto& [user, reads] : users) stats_.reads += static_cast<int64_t>(reads.size());
    }
    for (auto& [user, reads] : users) {
      if (!read.ok()) {
        for (WallRead* r : reads) r->done(read.status());
        continue;
      }
      std::vector<domain::WallSort> sorts;
      for (const WallRead* r : reads) sorts.push_back(r->sort);
      auto items = read->find(user);
      auto snapshot = std::make_shared<const domain::WallSnapshot>(domain::SnapshotWall(
          items == read->end() ? std::vector<domain::WallItem>() : std::move(items->second),
          sorts));
      for (WallRead* r : reads) r->done(snapshot);
    }
  }
}

}  // namespace giftwall::reads
