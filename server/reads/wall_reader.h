// GetGiftWall's reads, coalesced as the projection's writes are: concurrent readers' walls are
// read together, one statement for many walls (each a primary-key range, all in one snapshot), so
// that a busy read path costs the database a statement per group rather than per call. A wall
// read for several readers is summarized and sorted once for them all. A wall is read by one lane
// at a time: the reads of it that arrive meanwhile wait for that lane's next read of it, rather
// than read it again beside it (a hot wall would otherwise cost a statement per lane). The app's
// gift catalogue comes from the catalogue cache, once per app and group.
#ifndef GIFTWALL_SERVER_READS_WALL_READER_H_
#define GIFTWALL_SERVER_READS_WALL_READER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/concurrency/group_queue.h"
#include "server/domain/app_settings.h"
#include "server/domain/wall_page.h"
#include "server/reads/catalog_cache.h"
#include "server/reads/opt_out_cache.h"
#include "server/reads/period_resolver.h"
#include "server/storage/wall_repository.h"

namespace giftwall::reads {

struct WallReaderOptions {
  // Reads in flight at once, each on a database session of its own.
  int lanes = 2;
  // Walls one statement reads at most.
  int max_group_walls = 64;
  // Reads that may wait for a lane; beyond this, RESOURCE_EXHAUSTED at once.
  int queue_capacity = 2000;
};

// A wall as read for its readers.
struct WallAnswer {
  // Summarized and sorted for each reader's sort; shared with the other readers of the wall.
  std::shared_ptr<const domain::WallSnapshot> wall;
  std::optional<domain::Period> period;  // the period read; none: all-time
};

// One reader's request.
struct WallRead {
  std::string app_code;  // normalized
  int64_t user_id = 0;
  domain::PeriodSpec period;                             // "" all-time
  domain::WallSort sort = domain::WallSort::kCountDesc;  // the order the reader pages in
  // Called exactly once: with the user's whole wall of the period, or why it was not read (an
  // error resolving the period included).
  std::function<void(absl::StatusOr<WallAnswer>)> done;
  // Asked when a lane takes the read: a non-OK status (the caller gave up) answers it unread.
  std::function<absl::Status()> still_wanted;
  bool include_unlit = false;  // the reader pages the unlit gifts too
};

struct WallReaderStats {
  int64_t groups = 0;  // statements
  int64_t reads = 0;
};

// Reads the whole walls of `user_ids` of one app and period, in one statement and one snapshot:
// walls absent from the result are empty. storage::WallRepository::ReadWalls, or a test's.
using ReadWallsFn = std::function<absl::StatusOr<std::map<int64_t, std::vector<domain::WallItem>>>(
    absl::string_view app_code, const std::optional<domain::Period>& period,
    absl::Span<const int64_t> user_ids)>;
// The period a read names (PeriodResolver::Resolve, or a test's).
using ResolvePeriodFn = std::function<absl::StatusOr<std::optional<domain::Period>>(
    const std::string& app_code, const domain::PeriodSpec& spec)>;
// The app's catalogue (CatalogCache::Get, or a test's); empty or null without one.
using CatalogFn = std::function<absl::StatusOr<std::shared_ptr<const domain::CatalogIndex>>(
    const std::string& app_code)>;
// The app's senders who opted out (OptOutCache::Get, or a test's).
using OptOutsFn = std::function<absl::StatusOr<std::shared_ptr<const domain::OptOuts>>(
    const std::string& app_code)>;

class WallReader {
 public:
  WallReader(storage::WallRepository& walls, PeriodResolver& periods, CatalogCache& catalogs,
             OptOutCache& opt_outs, WallReaderOptions options);
  WallReader(ReadWallsFn read_walls, ResolvePeriodFn resolve_period, CatalogFn catalog,
             OptOutsFn opt_outs, WallReaderOptions options);
  WallReader(const WallReader&) = delete;
  WallReader& operator=(const WallReader&) = delete;

  // Queues a read. A full queue (RESOURCE_EXHAUSTED) or shutdown (UNAVAILABLE) answers at once,
  // on the caller's thread; otherwise `done` runs on a lane's.
  void Read(WallRead read) { queue_.Submit(std::move(read)); }

  // As GroupQueue::Shutdown.
  void Shutdown(absl::Time drain_deadline = absl::InfinitePast()) {
    queue_.Shutdown(drain_deadline);
  }

  WallReaderStats Stats() const ABSL_LOCKS_EXCLUDED(mu_);
  int queued() const { return queue_.queued(); }

 private:
  // A wall: app code, the period as asked for ("month" and "month:2026-12" are two, even when
  // they are the same month), and user.
  using WallKey = std::tuple<std::string, std::string, int64_t>;
  using ReadsByWall = std::map<WallKey, std::vector<WallRead>>;

  void RunGroup(std::vector<WallRead> group) ABSL_LOCKS_EXCLUDED(mu_);
  // The group's reads of the walls no other lane is reading, which this lane now reads; the
  // others wait for their wall's lane.
  ReadsByWall Claim(std::vector<WallRead> group) ABSL_LOCKS_EXCLUDED(mu_);
  // The reads that waited for `read` (walls this lane just read), to be read next; the walls
  // nobody waited for are released.
  ReadsByWall TakeWaiting(const ReadsByWall& read) ABSL_LOCKS_EXCLUDED(mu_);
  // Reads `walls` (a statement per app code and period) and answers their reads.
  void ReadAndAnswer(ReadsByWall& walls) ABSL_LOCKS_EXCLUDED(mu_);

  const ReadWallsFn read_walls_;
  const ResolvePeriodFn resolve_period_;
  const CatalogFn catalog_;
  const OptOutsFn opt_outs_;
  mutable absl::Mutex mu_;
  WallReaderStats stats_ ABSL_GUARDED_BY(mu_);
  // The walls a lane is reading, with the reads that arrived for them meanwhile.
  ReadsByWall being_read_ ABSL_GUARDED_BY(mu_);
  // Last: its lanes stop before the members they use go.
  concurrency::GroupQueue<WallRead> queue_;
};

}  // namespace giftwall::reads

#endif  // GIFTWALL_SERVER_READS_WALL_READER_H_
