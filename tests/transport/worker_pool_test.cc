#include "server/transport/worker_pool.h"

#include <atomic>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace giftwall::transport {
namespace {

// Work that counts its runs, and records how it was refused (OK: not refused).
class Recorder {
 public:
  WorkItem Item(std::function<void()> run = [] {}) {
    return WorkItem{[this, run = std::move(run)] {
                      run();
                      ++ran_;
                    },
                    [this](absl::Status status) {
                      absl::MutexLock lock(&mu_);
                      refused_.push_back(status.code());
                    }};
  }
  int ran() const { return ran_; }
  std::vector<absl::StatusCode> refused() const {
    absl::MutexLock lock(&mu_);
    return refused_;
  }

 private:
  std::atomic<int> ran_{0};
  mutable absl::Mutex mu_;
  std::vector<absl::StatusCode> refused_ ABSL_GUARDED_BY(mu_);
};

TEST(WorkerPool, RunsEverythingItAccepts) {
  Recorder work;
  {
    WorkerPool pool(4, 1000);
    for (int i = 0; i < 500; ++i) pool.Submit(work.Item());
    pool.Shutdown(absl::InfiniteFuture());
  }
  EXPECT_EQ(work.ran(), 500);
  EXPECT_TRUE(work.refused().empty());
}

TEST(WorkerPool, RefusesAtOnceWhenTheQueueIsFull) {
  Recorder work;
  WorkerPool pool(1, 2);
  absl::Notification release, started;
  pool.Submit(work.Item([&] {
    started.Notify();
    release.WaitForNotification();
  }));
  started.WaitForNotification();
  pool.Submit(work.Item());
  pool.Submit(work.Item());
  EXPECT_TRUE(work.refused().empty());
  pool.Submit(work.Item());
  EXPECT_EQ(work.refused(), std::vector<absl::StatusCode>{absl::StatusCode::kResourceExhausted});
  release.Notify();
  pool.Shutdown(absl::InfiniteFuture());
  EXPECT_EQ(work.ran(), 3);
}

TEST(WorkerPool, ShutdownRefusesWhatIsStillQueuedAndFinishesWhatRuns) {
  Recorder work;
  WorkerPool pool(1, 10);
  absl::Notification release, started;
  pool.Submit(work.Item([&] {
    started.Notify();
    release.WaitForNotification();
  }));
  started.WaitForNotification();
  for (int i = 0; i < 3; ++i) pool.Submit(work.Item());
  std::thread stopper([&] { pool.Shutdown(absl::Now() + absl::Milliseconds(50)); });
  // The queued work is refused once the drain deadline passes, while the running one holds on.
  while (work.refused().size() < 3) absl::SleepFor(absl::Milliseconds(1));
  release.Notify();
  stopper.join();
  EXPECT_EQ(work.ran(), 1);
  EXPECT_EQ(work.refused(), std::vector<absl::StatusCode>(3, absl::StatusCode::kUnavailable));
  pool.Submit(work.Item());
  EXPECT_EQ(work.refused().size(), 4u) << "a stopped pool refuses at once";
  EXPECT_EQ(work.refused().back(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace giftwall::transport
