#include "server/transport/worker_pool.h"

#include "glog/logging.h"

namespace giftwall::transport {

WorkerPool::WorkerPool(int threads, int queue_capacity)
    : capacity_(static_cast<size_t>(queue_capacity)) {
  CHECK_GT(threads, 0);
  CHECK_GT(queue_capacity, 0);
  threads_.reserve(static_cast<size_t>(threads));
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
}

WorkerPool::~WorkerPool() { Shutdown(); }

WorkerPool::Admission WorkerPool::TrySubmit(WorkItem item) {
  absl::MutexLock lock(&mu_);
  if (stopping_) return Admission::kStopped;
  if (queue_.size() >= capacity_) return Admission::kQueueFull;
  queue_.push_back(std::move(item));
  return Admission::kAccepted;
}

int WorkerPool::queued() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(queue_.size());
}

void WorkerPool::Loop() {
  for (;;) {
    WorkItem item;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](WorkerPool* p)
               ABSL_EXCLUSIVE_LOCKS_REQUIRED(p->mu_) { return p->stopping_ || !p->queue_.empty(); },
          this));
      if (queue_.empty()) return;  // stopping, and nothing left
      item = std::move(queue_.front());
      queue_.pop_front();
    }
    item.run();
  }
}

void WorkerPool::Shutdown(absl::Time drain_deadline) {
  std::deque<WorkItem> cancelled;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
    mu_.AwaitWithDeadline(absl::Condition(
                              +[](std::deque<WorkItem>* q) { return q->empty(); }, &queue_),
                          drain_deadline);
    cancelled.swap(queue_);
  }
  for (WorkItem& item : cancelled) item.cancel();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

}  // namespace giftwall::transport
