// A fixed set of threads that run blocking work (database calls) for the gRPC callback
// handlers, which must never block: the shared bounded queue (concurrency::GroupQueue), one
// item per group. When the queue is full, work is refused at once (RESOURCE_EXHAUSTED).
#ifndef GIFTWALL_SERVER_TRANSPORT_WORKER_POOL_H_
#define GIFTWALL_SERVER_TRANSPORT_WORKER_POOL_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "server/concurrency/group_queue.h"

namespace giftwall::transport {

// One unit of work. Exactly one of run and refuse is called, once: refuse when the work will
// not run (the queue is full, or the pool shut down before it started), so that every accepted
// call is still answered.
struct WorkItem {
  std::function<void()> run;
  std::function<void(absl::Status)> refuse;
};

class WorkerPool {
 public:
  // `name` names the queue in a refusal ("the server is overloaded (its work queue is full)").
  WorkerPool(int threads, int queue_capacity, std::string name = "work")
      : queue_(
            concurrency::GroupQueueOptions{std::move(name), threads, queue_capacity, 1, 0},
            [](const WorkItem&) { return size_t{1}; },
            [](std::vector<WorkItem> group) {
              for (WorkItem& item : group) item.run();
            },
            [](WorkItem item, absl::Status status) { item.refuse(std::move(status)); }) {}

  // Queues `item`, or refuses it at once: RESOURCE_EXHAUSTED when the queue is full,
  // UNAVAILABLE once the pool is shutting down.
  void Submit(WorkItem item) { queue_.Submit(std::move(item)); }

  // Refuses new work, lets queued work start until `drain_deadline`, refuses what is still
  // queued then, and waits for running work to finish.
  void Shutdown(absl::Time drain_deadline = absl::InfinitePast()) {
    queue_.Shutdown(drain_deadline);
  }

  int queued() const { return queue_.queued(); }

 private:
  concurrency::GroupQueue<WorkItem> queue_;
};

}  // namespace giftwall::transport

#endif  // GIFTWALL_SERVER_TRANSPORT_WORKER_POOL_H_
