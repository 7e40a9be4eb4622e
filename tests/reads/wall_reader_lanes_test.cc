// How the wall reader shares its lanes, driven by a fake store (no database): a wall is read by
// one lane at a time, and a read that arrives while its wall is being read gets a later read,
// never the one in flight (which may have missed a write committed before the call).
#include <map>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "server/reads/wall_reader.h"

namespace giftwall::reads {
namespace {

// Walls whose every gift counts how many reads of the wall had started when it was read; the
// first read of user 1 waits until released.
class FakeWalls {
 public:
  absl::StatusOr<std::map<int64_t, std::vector<domain::WallItem>>> Read(
      absl::string_view, absl::Span<const int64_t> users) {
    std::map<int64_t, std::vector<domain::WallItem>> walls;
    bool hold = false;
    {
      absl::MutexLock lock(&mu_);
      for (int64_t user : users) {
        const int in_flight = ++in_flight_[user];
        max_in_flight_[user] = std::max(max_in_flight_[user], in_flight);
        domain::WallItem item;
        item.gift_id = "g";
        item.gift_count = ++started_[user];
        walls[user].push_back(item);
        hold = hold || (user == 1 && started_[user] == 1);
      }
    }
    if (hold) {
      first_started_.Notify();
      release_.WaitForNotification();
    }
    absl::MutexLock lock(&mu_);
    for (int64_t user : users) --in_flight_[user];
    return walls;
  }

  int started(int64_t user) {
    absl::MutexLock lock(&mu_);
    return started_[user];
  }
  int max_in_flight(int64_t user) {
    absl::MutexLock lock(&mu_);
    return max_in_flight_[user];
  }

  absl::Notification first_started_;
  absl::Notification release_;

 private:
  absl::Mutex mu_;
  std::map<int64_t, int> in_flight_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, int> max_in_flight_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, int> started_ ABSL_GUARDED_BY(mu_);
};

// One reader's answer.
struct Answer {
  absl::Notification done;
  absl::StatusOr<WallAnswer> wall = absl::UnknownError("unanswered");

  // The read the wall came from (its gift's count).
  int64_t read_number() const { return wall->wall->items.at(0).gift_count; }
};

void Submit(WallReader& reader, int64_t user, Answer& answer) {
  reader.Read(WallRead{"demo", user, domain::PeriodSpec(), domain::WallSort::kCountDesc,
                       [&answer](absl::StatusOr<WallAnswer> wall) {
                         answer.wall = std::move(wall);
                         answer.done.Notify();
                       },
                       nullptr});
}

// These tests read all-time walls only.
absl::StatusOr<std::optional<domain::Period>> AllTime(const std::string&,
                                                      const domain::PeriodSpec& spec) {
  EXPECT_TRUE(spec.all_time());
  return std::nullopt;
}

// Nobody opted out.
absl::StatusOr<std::shared_ptr<const domain::OptOuts>> NoOptOuts(const std::string&) {
  return std::make_shared<const domain::OptOuts>();
}

TEST(WallReaderLanesTest, AWallBeingReadIsNotReadBesideItAndItsLaterReadersGetTheNextRead) {
  FakeWalls fake;
  WallReaderOptions options;
  options.lanes = 2;
  WallReader reader([&fake](absl::string_view app, const std::optional<domain::Period>&,
                            absl::Span<const int64_t> users) { return fake.Read(app, users); },
                    AllTime, nullptr, NoOptOuts, options);

  Answer first;
  Submit(reader, 1, first);
  fake.first_started_.WaitForNotification();
  // The first lane is inside its read of user 1. These arrive after that read started.
  std::vector<Answer> later(4);
  for (Answer& answer : later) Submit(reader, 1, answer);
  // The other lane is not held up by them: another wall is read meanwhile.
  Answer other;
  Submit(reader, 2, other);
  ASSERT_TRUE(other.done.WaitForNotificationWithTimeout(absl::Seconds(60)));
  ASSERT_TRUE(other.wall.ok()) << other.wall.status();
  EXPECT_EQ(fake.started(1), 1) << "user 1's wall was read again beside the read in flight";
  for (const Answer& answer : later) EXPECT_FALSE(answer.done.HasBeenNotified());

  fake.release_.Notify();
  ASSERT_TRUE(first.done.WaitForNotificationWithTimeout(absl::Seconds(60)));
  EXPECT_EQ(first.read_number(), 1);
  for (Answer& answer : later) {
    ASSERT_TRUE(answer.done.WaitForNotificationWithTimeout(absl::Seconds(60)));
    ASSERT_TRUE(answer.wall.ok()) << answer.wall.status();
    EXPECT_EQ(answer.read_number(), 2) << "a read that arrived during the first got it, or a third";
  }
  EXPECT_EQ(fake.started(1), 2) << "the four that waited are read together";
  EXPECT_EQ(fake.max_in_flight(1), 1);
  EXPECT_EQ(reader.Stats().reads, 6);
}

TEST(WallReaderLanesTest, AWallIsReadAgainOnceNobodyIsReadingIt) {
  FakeWalls fake;
  fake.release_.Notify();
  WallReader reader([&fake](absl::string_view app, const std::optional<domain::Period>&,
                            absl::Span<const int64_t> users) { return fake.Read(app, users); },
                    AllTime, nullptr, NoOptOuts, WallReaderOptions());
  for (int i = 1; i <= 3; ++i) {
    Answer answer;
    Submit(reader, 1, answer);
    ASSERT_TRUE(answer.done.WaitForNotificationWithTimeout(absl::Seconds(60)));
    EXPECT_EQ(answer.read_number(), i);
  }
  EXPECT_EQ(fake.max_in_flight(1), 1);
}

}  // namespace
}  // namespace giftwall::reads
