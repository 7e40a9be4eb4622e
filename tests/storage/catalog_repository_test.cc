#include "server/storage/catalog_repository.h"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_database.h"

namespace giftwall::storage {
namespace {

using domain::CatalogGift;
using domain::GiftStatus;

CatalogGift Gift(const std::string& id, int64_t order, const std::string& name = "") {
  return CatalogGift{id,  name.empty() ? id : name, "icon", "unlit", 10, "s",
                     "t", GiftStatus::kOnSale,      order};
}

std::vector<std::string> Ids(const std::vector<CatalogGift>& gifts) {
  std::vector<std::string> ids;
  for (const CatalogGift& g : gifts) ids.push_back(g.gift_id);
  return ids;
}

class CatalogRepositoryTest : public ::testing::Test {
 protected:
  CatalogRepositoryTest() : pool_(db_.PoolOptions()), repo_(pool_) {}

  // The app's whole catalogue, in one page.
  absl::StatusOr<std::vector<CatalogGift>> All(const std::string& app) {
    absl::StatusOr<CatalogPage> page = repo_.List(app, std::nullopt, 10'000);
    if (!page.ok()) return page.status();
    EXPECT_FALSE(page->has_more);
    return std::move(page->gifts);
  }

  testing::TestDatabase db_;
  ConnectionPool pool_;
  CatalogRepository repo_;
};

TEST_F(CatalogRepositoryTest, Rule16_PutUpsertsAndAReplaceRemovesTheGiftsItDoesNotList) {
  absl::StatusOr<CatalogWrite> write =
      repo_.Put("demo", {Gift("rose", 2), Gift("lily", 1), Gift("crown", 1)}, false, "config");
  ASSERT_TRUE(write.ok()) << write.status();
  EXPECT_EQ(write->upserted, 3);
  EXPECT_EQ(write->catalog_gifts, 3);
  // Catalogue order: sort_order, then gift_id.
  absl::StatusOr<std::vector<CatalogGift>> listed = All("demo");
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_THAT(Ids(*listed), ::testing::ElementsAre("crown", "lily", "rose"));
  EXPECT_EQ((*listed)[0], Gift("crown", 1));

  // An upsert changes what it lists and keeps the rest.
  CatalogGift retired = Gift("rose", 2, "Red rose");
  retired.status = GiftStatus::kRetired;
  ASSERT_TRUE(repo_.Put("demo", {retired, Gift("star", 9)}, false, "config").ok());
  listed = All("demo");
  ASSERT_TRUE(listed.ok());
  EXPECT_THAT(Ids(*listed), ::testing::ElementsAre("crown", "lily", "rose", "star"));
  EXPECT_EQ((*listed)[2], retired);

  // A replace makes the list the whole catalogue.
  write = repo_.Put("demo", {Gift("lily", 1), Gift("sun", 0)}, true, "config");
  ASSERT_TRUE(write.ok()) << write.status();
  EXPECT_EQ(write->removed, 3);
  EXPECT_EQ(write->catalog_gifts, 2);
  listed = All("demo");
  EXPECT_THAT(Ids(*listed), ::testing::ElementsAre("sun", "lily"));
  // Another app's catalogue is its own; an empty replace empties one.
  EXPECT_TRUE(All("other")->empty());
  write = repo_.Put("demo", {}, true, "config");
  ASSERT_TRUE(write.ok()) << write.status();
  EXPECT_EQ(write->removed, 2);
  EXPECT_TRUE(All("demo")->empty());
  EXPECT_EQ(
      db_.QueryString("SELECT updated_by FROM giftwall_gift_catalogs WHERE app_code = 'demo'"),
      "config");
}

// Pages follow one another in catalogue order, without a gap or a repeat.
TEST_F(CatalogRepositoryTest, Rule16_TheCatalogueIsReadAPageAtATimeInCatalogueOrder) {
  std::vector<CatalogGift> gifts;
  for (int i = 0; i < 7; ++i) gifts.push_back(Gift(absl::StrCat("g", i), i % 3));
  ASSERT_TRUE(repo_.Put("demo", gifts, false, "config").ok());
  std::vector<std::string> seen;
  std::optional<std::pair<int64_t, std::string>> after;
  for (int pages = 0; pages < 10; ++pages) {
    absl::StatusOr<CatalogPage> page = repo_.List("demo", after, 3);
    ASSERT_TRUE(page.ok()) << page.status();
    for (const CatalogGift& g : page->gifts) seen.push_back(g.gift_id);
    if (!page->has_more) break;
    after = {page->gifts.back().sort_order, page->gifts.back().gift_id};
  }
  EXPECT_THAT(seen, ::testing::ElementsAre("g0", "g3", "g6", "g1", "g4", "g2", "g5"));
}

// Past the limit nothing is written: the catalogue stays as it was.
TEST_F(CatalogRepositoryTest, Rule16_AWritePastFiveThousandGiftsIsRefusedWholeAndWritesNothing) {
  std::vector<CatalogGift> full;
  for (size_t i = 0; i < domain::kMaxCatalogGifts; ++i)
    full.push_back(Gift(absl::StrCat("g", i), 0));
  ASSERT_TRUE(repo_.Put("demo", full, false, "config").ok());
  absl::StatusOr<CatalogWrite> more =
      repo_.Put("demo", {Gift("g1", 5, "renamed"), Gift("one-more", 0)}, false, "config");
  EXPECT_EQ(more.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(more.status().message(), ::testing::HasSubstr("would hold 5001 gifts, at most 5000"));
  EXPECT_EQ(db_.QueryInt("SELECT COUNT(*) FROM giftwall_gift_catalog WHERE app_code = 'demo'"),
            5000);
  EXPECT_EQ(
      db_.QueryString("SELECT gift_name FROM giftwall_gift_catalog WHERE app_code = 'demo' AND "
                      "gift_id = 'g1'"),
      "g1");
  // A replace that swaps gifts stays within it.
  full.back() = Gift("one-more", 0);
  EXPECT_TRUE(repo_.Put("demo", full, true, "config").ok());
}

// Readers see one whole catalogue or the other while writers replace it, never a mix; two
// writers of one app take turns.
TEST_F(CatalogRepositoryTest, Rule16_AReplaceIsAtomicAgainstConcurrentReadsAndWrites) {
  std::vector<CatalogGift> a, b;
  for (int i = 0; i < 300; ++i) {
    a.push_back(Gift(absl::StrCat("a", i), i));
    b.push_back(Gift(absl::StrCat(i % 2 == 0 ? "a" : "b", i), i, "B"));
  }
  ASSERT_TRUE(repo_.Put("demo", a, true, "config").ok());
  std::atomic<bool> stop{false};
  std::atomic<int> reads{0}, mixed{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&] {
      while (!stop) {
        absl::StatusOr<std::vector<CatalogGift>> listed = All("demo");
        if (!listed.ok()) continue;
        ++reads;
        // Each gift has its own sort_order: a whole catalogue lists as its vector does.
        if (*listed != a && *listed != b) ++mixed;
      }
    });
  }
  std::vector<std::thread> writers;
  std::atomic<int> failed{0};
  for (int w = 0; w < 2; ++w) {
    writers.emplace_back([&, w] {
      for (int i = 0; i < 15; ++i) {
        if (!repo_.Put("demo", (i + w) % 2 == 0 ? b : a, true, "config").ok()) ++failed;
      }
    });
  }
  for (std::thread& t : writers) t.join();
  stop = true;
  for (std::thread& t : readers) t.join();
  EXPECT_GT(reads, 0);
  EXPECT_EQ(mixed, 0) << "a reader saw half of a replace";
  EXPECT_EQ(failed, 0) << "writers of one app take turns on its catalogue row";
}

}  // namespace
}  // namespace giftwall::storage
