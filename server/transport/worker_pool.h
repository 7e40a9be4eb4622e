// A fixed set of threads that run blocking work (database calls) for the gRPC callback
// handlers, which must never block. The queue is bounded: when it is full, work is refused at
// once and the caller answers RESOURCE_EXHAUSTED.
#ifndef GIFTWALL_SERVER_TRANSPORT_WORKER_POOL_H_
#define GIFTWALL_SERVER_TRANSPORT_WORKER_POOL_H_

#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace giftwall::transport {

// One unit of work. Exactly one of run and cancel is called, once: cancel when the pool shuts
// down before the work started, so that every accepted call is still answered.
struct WorkItem {
  std::function<void()> run;
  std::function<void()> cancel;
};

class WorkerPool {
 public:
  WorkerPool(int threads, int queue_capacity);
  // Shuts down if that has not been done.
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  enum class Admission { kAccepted, kQueueFull, kStopped };

  // Queues `item`, unless the queue is full or the pool is shutting down (then nothing of
  // `item` is called).
  Admission TrySubmit(WorkItem item) ABSL_LOCKS_EXCLUDED(mu_);

  // Refuses new work, lets queued work start until `drain_deadline`, cancels what is still
  // queued then, and waits for running work to finish.
  void Shutdown(absl::Time drain_deadline = absl::InfinitePast()) ABSL_LOCKS_EXCLUDED(mu_);

  int queued() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Loop() ABSL_LOCKS_EXCLUDED(mu_);

  const size_t capacity_;
  mutable absl::Mutex mu_;
  std::deque<WorkItem> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace giftwall::transport

#endif  // GIFTWALL_SERVER_TRANSPORT_WORKER_POOL_H_
