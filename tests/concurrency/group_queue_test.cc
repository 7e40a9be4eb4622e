// The coalescing queue, without a database: what waits is taken as one group, within the limits.
#include "server/concurrency/group_queue.h"

#include <atomic>

#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace giftwall::concurrency {
namespace {

using ::testing::ElementsAre;

// Records the groups it runs; the first group blocks until released.
class Recorder {
 public:
  void Run(std::vector<int> group) {
    {
      absl::MutexLock lock(&mu_);
      groups_.push_back(group);
      ++running_;
    }
    if (!first_started_.HasBeenNotified()) {
      first_started_.Notify();
      release_.WaitForNotification();
    }
    absl::MutexLock lock(&mu_);
    --running_;
  }
  void Refuse(int item, absl::Status why) {
    absl::MutexLock lock(&mu_);
    refused_.emplace_back(item, why.code());
  }
  std::vector<std::vector<int>> groups() {
    absl::MutexLock lock(&mu_);
    return groups_;
  }
  std::vector<std::pair<int, absl::StatusCode>> refused() {
    absl::MutexLock lock(&mu_);
    return refused_;
  }

  absl::Notification first_started_;
  absl::Notification release_;

 private:
  absl::Mutex mu_;
  std::vector<std::vector<int>> groups_ ABSL_GUARDED_BY(mu_);
  std::vector<std::pair<int, absl::StatusCode>> refused_ ABSL_GUARDED_BY(mu_);
  int running_ ABSL_GUARDED_BY(mu_) = 0;
};

std::unique_ptr<GroupQueue<int>> Queue(Recorder& r, GroupQueueOptions options) {
  // An item's weight is its value.
  return std::make_unique<GroupQueue<int>>(
      std::move(options), [](const int& i) { return static_cast<size_t>(i); },
      [&r](std::vector<int> g) { r.Run(std::move(g)); },
      [&r](int i, absl::Status why) { r.Refuse(i, why); });
}

TEST(GroupQueue, WhatWaitsWhileTheLaneIsBusyIsTakenAsOneGroupWithinItsWeight) {
  Recorder r;
  GroupQueueOptions options;
  options.max_group_weight = 10;
  std::unique_ptr<GroupQueue<int>> q = Queue(r, options);
  q->Submit(1);
  r.first_started_.WaitForNotification();
  for (int i : {2, 3, 4, 20, 1, 1}) q->Submit(i);
  r.release_.Notify();
  q->Shutdown(absl::InfiniteFuture());
  // [1] alone; then 2+3+4 fit in 10; 20 is heavier than a group but goes alone; then 1+1.
  EXPECT_THAT(r.groups(), ElementsAre(ElementsAre(1), ElementsAre(2, 3, 4), ElementsAre(20),
                                      ElementsAre(1, 1)));
}

TEST(GroupQueue, ItemsOfDifferentPartitionsNeverShareAGroup) {
  Recorder r;
  GroupQueueOptions options;
  options.max_group_weight = 12;
  GroupQueue<int> q(
      options, [](const int& i) { return static_cast<size_t>(i); },
      [&r](std::vector<int> g) { r.Run(std::move(g)); },
      [&r](int i, absl::Status why) { r.Refuse(i, why); },
      [](const int& i) -> absl::string_view { return i % 2 == 0 ? "even" : "odd"; });
  q.Submit(1);
  r.first_started_.WaitForNotification();
  for (int i : {2, 3, 4, 5, 6, 8, 7}) q.Submit(i);
  r.release_.Notify();
  q.Shutdown(absl::InfiniteFuture());
  // The oldest leads each group, which takes its partition's items in order while they fit
  // (12): 2+4+6, then 3+5 (7 would pass 12), then 8 and 7, each the oldest left.
  EXPECT_THAT(r.groups(), ElementsAre(ElementsAre(1), ElementsAre(2, 4, 6), ElementsAre(3, 5),
                                      ElementsAre(8), ElementsAre(7)));
}

TEST(GroupQueue, AnotherLaneStartsOnlyWhenEnoughWeightWaits) {
  Recorder r;
  GroupQueueOptions options;
  options.lanes = 2;
  options.max_group_weight = 100;
  options.parallel_min_weight = 5;
  std::unique_ptr<GroupQueue<int>> q = Queue(r, options);
  q->Submit(1);
  r.first_started_.WaitForNotification();
  q->Submit(2);
  q->Submit(2);
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_EQ(r.groups().size(), 1u) << "a second lane started for a small group";
  q->Submit(2);  // 6 wait now: worth a second transaction
  for (int i = 0; i < 100 && r.groups().size() < 2; ++i) absl::SleepFor(absl::Milliseconds(5));
  EXPECT_THAT(r.groups(), ElementsAre(ElementsAre(1), ElementsAre(2, 2, 2)));
  r.release_.Notify();
}

TEST(GroupQueue, AFullQueueRefusesAtOnceAndShutdownRefusesWhatIsLeft) {
  Recorder r;
  GroupQueueOptions options;
  options.capacity = 2;
  options.max_group_weight = 100;
  std::unique_ptr<GroupQueue<int>> q = Queue(r, options);
  q->Submit(1);
  r.first_started_.WaitForNotification();
  q->Submit(2);
  q->Submit(3);
  q->Submit(4);  // the queue holds 2 and 3
  EXPECT_THAT(r.refused(), ElementsAre(std::make_pair(4, absl::StatusCode::kResourceExhausted)));
  std::atomic<bool> stopped{false};
  std::thread stop([&] {
    q->Shutdown();  // no drain: what waits is refused
    stopped = true;
  });
  for (int i = 0; i < 100 && r.refused().size() < 3; ++i) absl::SleepFor(absl::Milliseconds(5));
  EXPECT_FALSE(stopped) << "shutdown did not wait for the group in flight";
  r.release_.Notify();
  stop.join();
  EXPECT_THAT(r.refused(), ElementsAre(std::make_pair(4, absl::StatusCode::kResourceExhausted),
                                       std::make_pair(2, absl::StatusCode::kUnavailable),
                                       std::make_pair(3, absl::StatusCode::kUnavailable)));
  q->Submit(5);
  EXPECT_EQ(r.refused().back(), std::make_pair(5, absl::StatusCode::kUnavailable));
}

}  // namespace
}  // namespace giftwall::concurrency
