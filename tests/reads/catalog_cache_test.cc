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
  // Every caller is either reading or waiting for the read; none has an answer yet.
  while (loads.load() == 0) std::this_thread::yield();
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_EQ(answered.load(), 0);
  release.Notify();
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(loads.load(), 1);
  EXPECT_EQ(answered.load(), 8);
}

TEST_F(CatalogCacheTest, NamingEverNewAppsDoesNotGrowItPastItsBound) {
  CatalogCache cache = Cache(absl::Hours(1));
  for (size_t i = 0; i < 3 * kMaxCachedCatalogs; ++i) {
    ASSERT_TRUE(cache.Get(absl::StrCat("app", i)).ok());
  }
  EXPECT_LE(cache.size(), kMaxCachedCatalogs);
  // Still a cache: the latest app is held.
  const int64_t loads = cache.loads();
  ASSERT_TRUE(cache.Get(absl::StrCat("app", 3 * kMaxCachedCatalogs - 1)).ok());
  EXPECT_EQ(cache.loads(), loads);
}

}  // namespace
}  // namespace giftwall::reads
