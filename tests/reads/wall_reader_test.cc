// GetGiftWall's coalesced reads, against a real MariaDB: reads that wait for a lane are read
// together, in one statement, and each caller gets its own user's wall.
#include "server/reads/wall_reader.h"

#include <tuple>

#include "absl/strings/str_format.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "server/storage/catalog_repository.h"
#include "server/storage/sender_privacy_repository.h"
#include "tests/support/test_database.h"

namespace giftwall::reads {
namespace {

class WallReaderTest : public ::testing::Test {
 protected:
  WallReaderTest()
      : pool_(db_.PoolOptions()),
        walls_(pool_),
        periods_([this](absl::string_view app) { return walls_.ReadSettings(app); },
                 domain::PeriodRetention()),
        catalog_(pool_),
        catalogs_(
            [this](absl::string_view app) -> absl::StatusOr<std::vector<domain::CatalogGift>> {
              absl::StatusOr<storage::CatalogPage> page =
                  catalog_.List(app, std::nullopt, domain::kMaxCatalogGifts);
              if (!page.ok()) return page.status();
              return std::move(page->gifts);
            },
            absl::Hours(1)),
        privacy_(pool_),
        opt_outs_(
            [this](
                absl::string_view app) -> absl::StatusOr<std::shared_ptr<const domain::OptOuts>> {
              absl::StatusOr<std::vector<int64_t>> hidden = privacy_.ListHidden(app);
              if (!hidden.ok()) return hidden.status();
              return std::make_shared<const domain::OptOuts>(hidden->begin(), hidden->end());
            },
            absl::ZeroDuration()) {}

  void AddGift(int64_t user, const std::string& gift, int64_t count) {
    db_.Exec(absl::StrFormat(
        "INSERT INTO user_gift_wall (app_code, user_id, gift_id, gift_count, "
        "first_received_at_ms, last_received_at_ms, created_at_ms, updated_at_ms) VALUES "
        "('demo', %d, '%s', %d, 1, 1, 1, 1)",
        user, gift, count));
  }

  testing::TestDatabase db_;
  storage::ConnectionPool pool_;
  storage::WallRepository walls_;
  PeriodResolver periods_;
  storage::CatalogRepository catalog_;
  CatalogCache catalogs_;
  storage::SenderPrivacyRepository privacy_;
  OptOutCache opt_outs_;
};

TEST_F(WallReaderTest, ReadsThatWaitForTheLaneAreReadTogetherEachGettingItsOwnWall) {
  for (int64_t user = 1; user <= 30; ++user) {
    for (int g = 0; g < user % 4 + 1; ++g) AddGift(user, absl::StrFormat("g%d", g), user);
  }
  WallReaderOptions options;
  options.lanes = 1;
  WallReader reader(walls_, periods_, catalogs_, opt_outs_, options);
  // Another session holds the table, so the lane's first read waits and the rest gather.
  std::unique_ptr<storage::SqlConnection> blocker = db_.Connect();
  ASSERT_TRUE(blocker->ExecuteDirect("LOCK TABLES user_gift_wall WRITE").ok());
  absl::BlockingCounter pending(41);
  std::vector<absl::StatusOr<std::shared_ptr<const domain::WallSnapshot>>> walls(
      41, absl::UnknownError("unanswered"));
  auto wall_of = [](absl::StatusOr<WallAnswer> answer)
      -> absl::StatusOr<std::shared_ptr<const domain::WallSnapshot>> {
    if (!answer.ok()) return answer.status();
    return answer->wall;
  };
  auto read = [&](size_t slot, const std::string& app, int64_t user,
                  domain::WallSort sort = domain::WallSort::kCountDesc) {
    reader.Read(WallRead{app, user, domain::PeriodSpec(), sort,
                         [&, slot](absl::StatusOr<WallAnswer> answer) {
                           walls[slot] = wall_of(std::move(answer));
                           pending.DecrementCount();
                         },
                         nullptr});
  };
  read(0, "demo", 1);
  // Once the lane's statement waits on the lock, the next reads can only gather behind it.
  bool waiting = false;
  for (int i = 0; i < 3000 && !waiting; ++i) {
    waiting = db_.QueryInt(
                  "SELECT COUNT(*) FROM information_schema.processlist WHERE db = "
                  "DATABASE() AND info LIKE '%JSON_TABLE%' AND id <> CONNECTION_ID()") > 0;
    if (!waiting) absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_TRUE(waiting) << "the lane's first read never reached the database";
  for (size_t i = 1; i <= 30; ++i) read(i, "demo", static_cast<int64_t>(i));
  for (size_t i = 31; i < 40; ++i) {  // the same wall, asked for again, in other orders too
    read(i, "demo", 7, i % 2 == 0 ? domain::WallSort::kCoinsDesc : domain::WallSort::kCountDesc);
  }
  read(40, "other", 7);
  ASSERT_TRUE(blocker->ExecuteDirect("UNLOCK TABLES").ok());
  pending.Wait();

  for (size_t i = 0; i <= 30; ++i) {
    ASSERT_TRUE(walls[i].ok()) << walls[i].status();
    const int64_t user = i == 0 ? 1 : static_cast<int64_t>(i);
    EXPECT_EQ((*walls[i])->items.size(), static_cast<size_t>(user % 4 + 1)) << "user " << user;
    EXPECT_EQ((*walls[i])->summary.distinct_gifts, user % 4 + 1);
    for (const domain::WallItem& item : (*walls[i])->items) EXPECT_EQ(item.gift_count, user);
  }
  // One snapshot of user 7's wall for all its readers of the group, sorted once per order.
  for (size_t i = 31; i < 40; ++i) {
    ASSERT_TRUE(walls[i].ok());
    EXPECT_EQ(*walls[i], *walls[7]);
  }
  const domain::WallSnapshot& seven = **walls[7];
  EXPECT_EQ(seven.items.size(), 4u);
  EXPECT_EQ(seven.orders[static_cast<size_t>(domain::WallSort::kCountDesc)].size(), 4u);
  EXPECT_EQ(seven.orders[static_cast<size_t>(domain::WallSort::kCoinsDesc)].size(), 4u);
  EXPECT_TRUE(seven.orders[static_cast<size_t>(domain::WallSort::kLastReceivedDesc)].empty());
  ASSERT_TRUE(walls[40].ok());
  EXPECT_TRUE((*walls[40])->items.empty()) << "another app's user 7 has no wall";
  const WallReaderStats stats = reader.Stats();
  EXPECT_EQ(stats.reads, 41);
  // The first read alone, then the forty that gathered: one statement per app.
  EXPECT_EQ(stats.groups, 3);
}

TEST_F(WallReaderTest, AReadItsCallerNoLongerWantsIsAnsweredUnread) {
  WallReader reader(walls_, periods_, catalogs_, opt_outs_, WallReaderOptions());
  absl::BlockingCounter pending(1);
  absl::Status answer;
  reader.Read(WallRead{"demo", 1, domain::PeriodSpec(), domain::WallSort::kCountDesc,
                       [&](absl::StatusOr<WallAnswer> wall) {
                         answer = wall.status();
                         pending.DecrementCount();
                       },
                       [] { return absl::DeadlineExceededError("too late"); }});
  pending.Wait();
  EXPECT_EQ(answer.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(reader.Stats().groups, 0);
}

TEST_F(WallReaderTest, TheCatalogueIsReadOncePerAppNotPerWallAndAgainAfterAWriteHere) {
  for (int64_t user = 1; user <= 20; ++user) AddGift(user, "rose", user);
  domain::CatalogGift rose, car;
  rose.gift_id = "rose";
  rose.name = "Rose";
  car.gift_id = "car";
  car.sort_order = 1;
  ASSERT_TRUE(catalog_.Put("demo", {rose, car}, false, "test").ok());
  WallReader reader(walls_, periods_, catalogs_, opt_outs_, WallReaderOptions());
  auto read_all = [&] {
    absl::BlockingCounter pending(20);
    std::vector<std::shared_ptr<const domain::WallSnapshot>> walls(20);
    for (int64_t user = 1; user <= 20; ++user) {
      WallRead read;
      read.app_code = "demo";
      read.user_id = user;
      read.include_unlit = user % 2 == 0;
      read.done = [&, user](absl::StatusOr<WallAnswer> answer) {
        EXPECT_TRUE(answer.ok()) << answer.status();
        if (answer.ok()) walls[static_cast<size_t>(user - 1)] = answer->wall;
        pending.DecrementCount();
      };
      reader.Read(std::move(read));
    }
    pending.Wait();
    return walls;
  };
  std::vector<std::shared_ptr<const domain::WallSnapshot>> walls = read_all();
  EXPECT_EQ(catalogs_.loads(), 1);
  for (const auto& wall : walls) {
    ASSERT_NE(wall, nullptr);
    ASSERT_EQ(wall->items.size(), 1u);
    ASSERT_NE(wall->items[0].catalog, nullptr);
    EXPECT_EQ(wall->items[0].catalog->name, "Rose");
    EXPECT_EQ(wall->summary.lit_gifts, 1);
    EXPECT_EQ(wall->summary.catalogue_gifts, 2);
  }
  // A reader who asked for the unlit gifts has them listed.
  EXPECT_EQ(walls[1]->unlit.size(), 1u);

  rose.name = "Red rose";
  ASSERT_TRUE(catalog_.Put("demo", {rose, car}, true, "test").ok());
  EXPECT_EQ(read_all()[0]->items[0].catalog->name, "Rose") << "within the bound, the cached one";
  catalogs_.Forget("demo");
  EXPECT_EQ(read_all()[0]->items[0].catalog->name, "Red rose");
  EXPECT_EQ(catalogs_.loads(), 2);
}

// A wall read says which top and first senders hid (DESIGN §2.18): who sent that gift to that
// wall anonymously (their all-time sender row), and who opted out (read per group: a zero bound
// here).
TEST_F(WallReaderTest, Rule18_AWallReadSaysWhichTopAndFirstSendersHid) {
  AddGift(1, "rose", 5);
  AddGift(1, "lily", 1);
  db_.Exec(
      "UPDATE user_gift_wall SET top_sender_user_id = 7, top_sender_count = 3, "
      "first_sender_user_id = 8 WHERE user_id = 1");
  for (const auto& [gift, sender, anonymous] : {std::tuple<const char*, int, int>{"rose", 7, 1},
                                                {"rose", 8, 0},
                                                {"lily", 7, 0},
                                                {"lily", 8, 0}}) {
    db_.Exec(absl::StrFormat(
        "INSERT INTO user_gift_wall_sender (app_code, user_id, gift_id, sender_user_id, "
        "sent_count, sent_coins, first_sent_at_ms, last_sent_at_ms, anonymous, created_at_ms, "
        "updated_at_ms) VALUES ('demo', 1, '%s', %d, 1, 0, 1, 1, %d, 1, 1)",
        gift, sender, anonymous));
  }
  WallReader reader(walls_, periods_, catalogs_, opt_outs_, WallReaderOptions());
  auto flags = [&] {
    absl::Notification done;
    std::string out;
    WallRead read;
    read.app_code = "demo";
    read.user_id = 1;
    read.done = [&](absl::StatusOr<WallAnswer> answer) {
      EXPECT_TRUE(answer.ok()) << answer.status();
      if (answer.ok()) {
        for (const domain::WallItem& item : answer->wall->items) {
          absl::StrAppend(&out, item.gift_id, ":", item.top_sender_hidden ? "top" : "",
                          item.first_sender_hidden ? "first" : "", " ");
        }
      }
      done.Notify();
    };
    reader.Read(std::move(read));
    done.WaitForNotification();
    return out;
  };
  // 7 sent rose anonymously, not lily.
  EXPECT_EQ(flags(), "lily: rose:top ");
  ASSERT_TRUE(privacy_.Set("demo", 8, true, "test").ok());
  EXPECT_EQ(flags(), "lily:first rose:topfirst ");
  ASSERT_TRUE(privacy_.Set("demo", 8, false, "test").ok());
  EXPECT_EQ(flags(), "lily: rose:top ");
}

}  // namespace
}  // namespace giftwall::reads
