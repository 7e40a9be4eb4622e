#include "server/transport/worker_pool.h"

#include <atomic>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace giftwall::transport {
namespace {

WorkItem Item(std::function<void()> run, std::atomic<int>* cancelled = nullptr) {
  return WorkItem{std::move(run), [cancelled] {
                    if (cancelled != nullptr) ++*cancelled;
                  }};
}

TEST(WorkerPool, RunsEverythingItAccepts) {
  std::atomic<int> ran{0};
  {
    WorkerPool pool(4, 1000);
    for (int i = 0; i < 500; ++i) {
      ASSERT_EQ(pool.TrySubmit(Item([&] { ++ran; })), WorkerPool::Admission::kAccepted);
    }
    pool.Shutdown(absl::InfiniteFuture());
  }
  EXPECT_EQ(ran, 500);
}

TEST(WorkerPool, RefusesAtOnceWhenTheQueueIsFull) {
  WorkerPool pool(1, 2);
  absl::Notification release, started;
  ASSERT_EQ(pool.TrySubmit(Item([&] {
    started.Notify();
    release.WaitForNotification();
  })),
            WorkerPool::Admission::kAccepted);
  started.WaitForNotification();
  EXPECT_EQ(pool.TrySubmit(Item([] {})), WorkerPool::Admission::kAccepted);
  EXPECT_EQ(pool.TrySubmit(Item([] {})), WorkerPool::Admission::kAccepted);
  EXPECT_EQ(pool.TrySubmit(Item([] {})), WorkerPool::Admission::kQueueFull);
  release.Notify();
}

TEST(WorkerPool, ShutdownCancelsWhatIsStillQueuedAndFinishesWhatRuns) {
  std::atomic<int> cancelled{0}, ran{0};
  WorkerPool pool(1, 10);
  absl::Notification release, started;
  ASSERT_EQ(pool.TrySubmit(Item([&] {
    started.Notify();
    release.WaitForNotification();
    ++ran;
  })),
            WorkerPool::Admission::kAccepted);
  started.WaitForNotification();
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(pool.TrySubmit(Item([&] { ++ran; }, &cancelled)), WorkerPool::Admission::kAccepted);
  }
  std::thread stopper([&] { pool.Shutdown(absl::Now() + absl::Milliseconds(50)); });
  absl::SleepFor(absl::Milliseconds(200));
  release.Notify();
  stopper.join();
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(cancelled, 3);
  EXPECT_EQ(pool.TrySubmit(Item([] {})), WorkerPool::Admission::kStopped);
}

}  // namespace
}  // namespace giftwall::transport
