// Coalescing: callers' items gather in a queue, and the first free lane takes whatever has
// gathered (up to a group's weight) as one group. A caller waits at most for the groups in flight,
// never for a timer: when the lanes are idle a group is a single item; under load, groups grow by
// themselves, and a group costs its lane about what one item would. The projection's group
// commit and GetGiftWall's coalesced reads both run on one.
#ifndef GIFTWALL_SERVER_CONCURRENCY_GROUP_QUEUE_H_
#define GIFTWALL_SERVER_CONCURRENCY_GROUP_QUEUE_H_

#include <cstddef>
#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "glog/logging.h"

namespace giftwall::concurrency {

struct GroupQueueOptions {
  // Names the queue in the errors callers see ("projection", "wall read").
  std::string name;
  // Groups in flight at once.
  int lanes = 1;
  // Items that may wait for a lane; beyond this, Submit refuses with RESOURCE_EXHAUSTED.
  int capacity = 1000;
  // A group takes items, oldest first, while their weights fit (and at least one).
  size_t max_group_weight = 1;
  // While a lane runs a group, another starts one only if at least this much weight waits: a
  // group has a fixed cost, so small groups in parallel can cost more than one larger group
  // after the other. 0: a free lane always starts.
  size_t parallel_min_weight = 0;
};

template <typename Item>
class GroupQueue {
 public:
  using Weight = std::function<size_t(const Item&)>;
  // Runs one group, on a lane's thread.
  using Run = std::function<void(std::vector<Item>)>;
  // Items of different partitions never share a group: a group takes the oldest item and the
  // items after it of the same partition, and the others wait for a group of their own.
  using Partition = std::function<absl::string_view(const Item&)>;
  // Answers an item that will not run: refused at Submit (on the caller's thread), or still
  // queued at shutdown.
  using Refuse = std::function<void(Item, absl::Status)>;

  // `partition` may be empty: any items may share a group.
  GroupQueue(GroupQueueOptions options, Weight weight, Run run, Refuse refuse,
             Partition partition = nullptr)
      : options_(std::move(options)),
        weight_(std::move(weight)),
        run_(std::move(run)),
        refuse_(std::move(refuse)),
        partition_(std::move(partition)) {
    CHECK_GT(options_.lanes, 0);
    CHECK_GT(options_.capacity, 0);
    lanes_.reserve(static_cast<size_t>(options_.lanes));
    for (int i = 0; i < options_.lanes; ++i) lanes_.emplace_back([this] { Lane(); });
  }
  // Shuts down if that has not been done.
  ~GroupQueue() { Shutdown(); }
  GroupQueue(const GroupQueue&) = delete;
  GroupQueue& operator=(const GroupQueue&) = delete;

  void Submit(Item item) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::Status refused;
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) {
        refused = ShuttingDown();
      } else if (queue_.size() >= static_cast<size_t>(options_.capacity)) {
        refused = absl::ResourceExhaustedError(absl::StrCat(
            "the server is overloaded (its ", options_.name, " queue is full); retry later"));
      } else {
        queued_weight_ += weight_(item);
        queue_.push_back(std::move(item));
        return;
      }
    }
    refuse_(std::move(item), refused);
  }

  // Refuses new items, lets the lanes take queued ones until `drain_deadline`, refuses what is
  // still queued then (UNAVAILABLE), and waits for the groups in flight.
  void Shutdown(absl::Time drain_deadline = absl::InfinitePast()) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock once(&shutdown_mu_);  // a second caller waits, then finds nothing to do
    std::deque<Item> left;
    {
      absl::MutexLock lock(&mu_);
      if (stopping_ && lanes_.empty()) return;
      stopping_ = true;
      mu_.AwaitWithDeadline(absl::Condition(
                                +[](std::deque<Item>* q) { return q->empty(); }, &queue_),
                            drain_deadline);
      left.swap(queue_);
      queued_weight_ = 0;
    }
    for (Item& item : left) refuse_(std::move(item), ShuttingDown());
    for (std::thread& t : lanes_) t.join();
    lanes_.clear();
  }

  int queued() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return static_cast<int>(queue_.size());
  }

 private:
  static absl::Status ShuttingDown() {
    return absl::UnavailableError("the server is shutting down; retry on another replica");
  }

  void Lane() ABSL_LOCKS_EXCLUDED(mu_) {
    for (;;) {
      std::vector<Item> group;
      {
        absl::MutexLock lock(&mu_);
        mu_.Await(absl::Condition(
            +[](GroupQueue* q) ABSL_EXCLUSIVE_LOCKS_REQUIRED(q->mu_) {
              return q->queue_.empty() ? q->stopping_
                                       : q->running_ == 0 || q->stopping_ ||
                                             q->queued_weight_ >= q->options_.parallel_min_weight;
            },
            this));
        if (queue_.empty()) return;  // stopping, and nothing left
        size_t weight = 0;
        const std::string partition(partition_ ? partition_(queue_.front()) : "");
        for (auto it = queue_.begin(); it != queue_.end();) {
          if (partition_ && partition_(*it) != partition) {
            ++it;
            continue;
          }
          const size_t next = weight_(*it);
          if (!group.empty() && weight + next > options_.max_group_weight) break;
          weight += next;
          group.push_back(std::move(*it));
          it = queue_.erase(it);
        }
        queued_weight_ -= weight;
        ++running_;
      }
      run_(std::move(group));
      absl::MutexLock lock(&mu_);
      --running_;
    }
  }

  const GroupQueueOptions options_;
  const Weight weight_;
  const Run run_;
  const Refuse refuse_;
  const Partition partition_;
  absl::Mutex shutdown_mu_;
  mutable absl::Mutex mu_;
  std::deque<Item> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  size_t queued_weight_ ABSL_GUARDED_BY(mu_) = 0;
  int running_ ABSL_GUARDED_BY(mu_) = 0;  // lanes running a group
  std::vector<std::thread> lanes_ ABSL_GUARDED_BY(shutdown_mu_);
};

}  // namespace giftwall::concurrency

#endif  // GIFTWALL_SERVER_CONCURRENCY_GROUP_QUEUE_H_
