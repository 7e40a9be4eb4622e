// The catalogue cache (DESIGN §2.16): an app's catalogue read once per bound, shared by the wall
// reads, read again after a write through this server, and bounded in the apps it holds.
#include "server/reads/catalog_cache.h"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace giftwall::reads {
namespace {

class CatalogCacheTest : public ::testing::Test {
 protected:
  // A catalogue of one gift named after the load that read it.
  absl::StatusOr<std::vector<domain::CatalogGift>> Load(absl::string_view app) {
    const int n = ++loads_;
    if (fail_) return absl::UnavailableError("database down");
    domain::CatalogGift gift;
    gift.gift_id = std::string(app);
    gift.name = absl::StrCat("load ", n);
    return std::vector<domain::CatalogGift>{gift};
  }

  CatalogCache Cache(absl::Duration ttl) {
    return CatalogCache([this](absl::string_view app) { return Load(app); }, ttl,
                        [this] { return now_; });
  }

  static std::string NameOf(
      const absl::StatusOr<std::shared_ptr<const domain::CatalogIndex>>& catalog) {
    EXPECT_TRUE(catalog.ok()) << catalog.status();
    return catalog.ok() ? (*catalog)->gifts().at(0).name : "";
  }

  std::atomic<int> loads_{0};
  bool fail_ = false;
  absl::Notification release2_;
  absl::Time now_ = absl::FromUnixSeconds(1000);
};

TEST_F(CatalogCacheTest, ReadsOncePerBoundThenAgain) {
  CatalogCache cache = Cache(absl::Seconds(5));
  EXPECT_EQ(NameOf(cache.Get("demo")), "load 1");
  now_ += absl::Seconds(4);
  EXPECT_EQ(NameOf(cache.Get("demo")), "load 1");
  EXPECT_EQ(NameOf(cache.Get("other")), "load 2") << "each app its own";
  now_ += absl::Seconds(1);
  EXPECT_EQ(NameOf(cache.Get("demo")), "load 3") << "past the bound";
  EXPECT_EQ(cache.loads(), 3);
}

TEST_F(CatalogCacheTest, ZeroBoundReadsEveryTime) {
  CatalogCache cache = Cache(absl::ZeroDuration());
  EXPECT_EQ(NameOf(cache.Get("demo")), "load 1");
  EXPECT_EQ(NameOf(cache.Get("demo")), "load 2");
}

TEST_F(CatalogCacheTest, AWriteHereIsReadAtTheNextUse) {
  CatalogCache cache = Cache(absl::Hours(1));
  EXPECT_EQ(NameOf(cache.Get("demo")), "load 1");
  cache.Forget("demo");
  EXPECT_EQ(NameOf(cache.Get("demo")), "load 2");
  cache.Forget("never read");  // nothing to forget
  EXPECT_EQ(NameOf(cache.Get("demo")), "load 2");
}

TEST_F(CatalogCacheTest, AFailedReadIsAnErrorAndTheNextUseReadsAgain) {
  CatalogCache cache = Cache(absl::Hours(1));
  fail_ = true;
  absl::StatusOr<std::shared_ptr<const domain::CatalogIndex>> failed = cache.Get("demo");
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kUnavailable);
  fail_ = false;
  EXPECT_EQ(NameOf(cache.Get("demo")), "load 2");
}

TEST_F(CatalogCacheTest, CallersThatMissTogetherReadOnce) {
  absl::Notification release;
  std::atomic<int> loads{0};
  CatalogCache cache(
      [&](absl::string_view) -> absl::StatusOr<std::vector<domain::CatalogGift>> {
        ++loads;
        release.WaitForNotification();
        return std::vector<domain::CatalogGift>();
      },
      absl::Hours(1));
  std::vector<std::thread> callers;
  std::atomic<int> answered{0};
  for (int i = 0; i < 8; ++i) {
    callers.emplace_back([&] {
      absl::StatusOr<std::shared_ptr<const domain::CatalogIndex>> catalog = cache.Get("demo");
      EXPECT_TRUE(catalog.ok());
      EXPECT_TRUE(catalog.ok() && (*catalog)->empty());
      ++answered;
    });
  }
  // One caller reads, the seven others wait for its read; none has an answer yet.
  while (cache.waiting() < 7) std::this_thread::yield();
  EXPECT_EQ(answered.load(), 0);
  release.Notify();
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(loads.load(), 1);
  EXPECT_EQ(answered.load(), 8);
}

TEST_F(CatalogCacheTest, NamingEverNewAppsDoesNotGrowItPastItsBoundAndKeepsTheRecentOnes) {
  CatalogCache cache = Cache(absl::Hours(1));
  for (size_t i = 0; i < kMaxCachedApps; ++i) {
    now_ += absl::Milliseconds(1);
    ASSERT_TRUE(cache.Get(absl::StrCat("app", i)).ok());
  }
  EXPECT_EQ(cache.size(), kMaxCachedApps);
  now_ += absl::Milliseconds(1);
  ASSERT_TRUE(cache.Get("one more").ok());
  // The least recently read eighth went; the rest are still held.
  EXPECT_EQ(cache.size(), kMaxCachedApps - kMaxCachedApps / 8 + 1);
  const int64_t loads = cache.loads();
  for (size_t i = kMaxCachedApps / 8; i < kMaxCachedApps; ++i) {
    ASSERT_TRUE(cache.Get(absl::StrCat("app", i)).ok());
  }
  EXPECT_EQ(cache.loads(), loads);
  ASSERT_TRUE(cache.Get("app0").ok());
  EXPECT_EQ(cache.loads(), loads + 1);
  for (size_t i = 0; i < 3 * kMaxCachedApps; ++i) {
    ASSERT_TRUE(cache.Get(absl::StrCat("new", i)).ok());
  }
  EXPECT_LE(cache.size(), kMaxCachedApps);
}

// A read in flight when a write through this server is forgotten may predate the write: it
// answers its own caller but is not kept, and nobody waiting after the write gets it.
TEST_F(CatalogCacheTest, AReadThatBeganBeforeAForgetIsNotKept) {
  absl::Notification reading, release;
  std::atomic<int> loads{0};
  CatalogCache cache(
      [&](absl::string_view app) -> absl::StatusOr<std::vector<domain::CatalogGift>> {
        const int n = ++loads;
        if (n == 1) {
          reading.Notify();
          release.WaitForNotification();
        }
        domain::CatalogGift gift;
        gift.gift_id = std::string(app);
        gift.name = absl::StrCat("load ", n);
        return std::vector<domain::CatalogGift>{gift};
      },
      absl::Hours(1));
  std::string first;
  std::thread before([&] { first = NameOf(cache.Get("demo")); });
  reading.WaitForNotification();
  cache.Forget("demo");  // the write committed while the first read ran
  release.Notify();
  before.join();
  EXPECT_EQ(first, "load 1");
  EXPECT_EQ(NameOf(cache.Get("demo")), "load 2");
  EXPECT_EQ(NameOf(cache.Get("demo")), "load 2");
}

// While one caller reads an expired catalogue again, the others use the one it replaces; the
// first read, which has none to use, is waited for, error included.
TEST_F(CatalogCacheTest, OthersUseTheOldCatalogueWhileOneReadsItAgainAndShareAFirstReadsError) {
  absl::Notification reading, release;
  std::atomic<int> loads{0};
  std::atomic<bool> fail{true};
  CatalogCache cache(
      [&](absl::string_view) -> absl::StatusOr<std::vector<domain::CatalogGift>> {
        const int n = ++loads;
        if (n == 1) {
          reading.Notify();
          release.WaitForNotification();
        }
        if (n == 3) release2_.WaitForNotification();
        if (fail) return absl::UnavailableError("database down");
        domain::CatalogGift gift;
        gift.gift_id = "g";
        gift.name = absl::StrCat("load ", n);
        return std::vector<domain::CatalogGift>{gift};
      },
      absl::ZeroDuration());
  absl::StatusOr<std::shared_ptr<const domain::CatalogIndex>> first = absl::UnknownError("");
  std::thread reader([&] { first = cache.Get("demo"); });
  reading.WaitForNotification();
  // The first read is in flight: a second caller waits for it and gets its error.
  absl::StatusOr<std::shared_ptr<const domain::CatalogIndex>> second = absl::UnknownError("");
  std::thread waiter([&] { second = cache.Get("demo"); });
  while (cache.waiting() == 0) std::this_thread::yield();
  release.Notify();
  reader.join();
  waiter.join();
  EXPECT_EQ(first.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable) << "waited, not read again";
  EXPECT_EQ(loads.load(), 1);
  fail = false;
  EXPECT_EQ(NameOf(cache.Get("demo")), "load 2");
  // Expired at once (a zero bound): the next caller reads it again, and meanwhile another uses
  // load 2 rather than waiting.
  std::thread refresher([&] { EXPECT_EQ(NameOf(cache.Get("demo")), "load 3"); });
  while (loads.load() < 3) std::this_thread::yield();
  EXPECT_EQ(NameOf(cache.Get("demo")), "load 2");
  EXPECT_EQ(cache.waiting(), 0);
  release2_.Notify();
  refresher.join();
}

}  // namespace
}  // namespace giftwall::reads
