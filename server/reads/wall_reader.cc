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
    : walls_(walls),
      queue_(
          QueueOptions(options), [](const WallRead&) { return size_t{1}; },
          [this](std::vector<WallRead> group) { RunGroup(std::move(group)); },
          [](WallRead read, absl::Status why) { read.done(std::move(why)); }) {}

WallReaderStats WallReader::Stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

void WallReader::RunGroup(std::vector<WallRead> group) {
  // One statement per app code; a user asked for twice is read once.
  std::map<std::string, std::vector<WallRead*>> by_app;
  for (WallRead& read : group) {
    absl::Status wanted = read.still_wanted ? read.still_wanted() : absl::OkStatus();
    if (!wanted.ok()) {
      read.done(wanted);
      continue;
    }
    by_app[read.app_code].push_back(&read);
  }
  for (auto& [app, reads] : by_app) {
    std::vector<int64_t> users;
    for (const WallRead* read : reads) users.push_back(read->user_id);
    std::sort(users.begin(), users.end());
    users.erase(std::unique(users.begin(), users.end()), users.end());
    absl::StatusOr<std::map<int64_t, std::vector<domain::WallItem>>> walls =
        walls_.ReadWalls(app, users);
    {
      absl::MutexLock lock(&mu_);
      ++stats_.groups;
      stats_.reads += static_cast<int64_t>(reads.size());
    }
    if (!walls.ok()) {
      for (WallRead* read : reads) read->done(walls.status());
      continue;
    }
    std::map<int64_t, std::vector<domain::WallSort>> sorts;
    for (const WallRead* read : reads) sorts[read->user_id].push_back(read->sort);
    std::map<int64_t, std::shared_ptr<const domain::WallSnapshot>> snapshots;
    for (auto& [user, wanted] : sorts) {
      auto it = walls->find(user);
      snapshots[user] = std::make_shared<const domain::WallSnapshot>(domain::SnapshotWall(
          it == walls->end() ? std::vector<domain::WallItem>() : std::move(it->second), wanted));
    }
    for (WallRead* read : reads) read->done(snapshots[read->user_id]);
  }
}

}  // namespace giftwall::reads
