// The set-based statements of a projection group, against a real MariaDB: each reads or writes
// exactly the rows it is given, and the merge statements do what domain::MergeWallRow says.
#include "server/storage/projection_store.h"

#include <random>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_database.h"

namespace giftwall::storage {
namespace {

using domain::FoldEvent;
using domain::LedgerStatus;
using domain::WallDeltas;
using domain::WallKey;
using domain::WallRow;

LedgerWrite Done(const std::string& id, int64_t user) {
  LedgerWrite w;
  w.event_id = id;
  w.target_user_id = user;
  return w;
}

class ProjectionStoreTest : public ::testing::Test {
 protected:
  ProjectionStoreTest() : conn_(db_.Connect()) {}

  // The stored rows of one wall row and its senders, as domain rows.
  WallRow StoredRow(const WallKey& key) {
    WallRow row;
    const std::string where = absl::StrCat(" WHERE app_code = 'demo' AND user_id = ", key.user_id,
                                           " AND gift_id = '", key.gift_id, "'");
    EXPECT_TRUE(
        conn_
            ->Query(absl::StrCat("SELECT gift_count, total_coins, first_received_at_ms, "
                                 "last_received_at_ms, gift_name, gift_name_at_ms, "
                                 "gift_name_event_id, gift_icon, gift_icon_at_ms, "
                                 "gift_icon_event_id, sender_count, top_sender_user_id, "
                                 "top_sender_count, top_sender_coins, top_sender_first_sent_at_ms, "
                                 "top_sender_last_sent_at_ms, first_sender_user_id, "
                                 "first_sender_at_ms, first_sender_event_id FROM user_gift_wall",
                                 where),
                    {},
                    [&](const SqlRow& r) {
                      row.gift_count = r.Int(0);
                      row.total_coins = r.Int(1);
                      row.first_received_at_ms = r.Int(2);
                      row.last_received_at_ms = r.Int(3);
                      row.gift_name = r.Str(4);
                      row.gift_name_at_ms = r.Int(5);
                      row.gift_name_event_id = r.Str(6);
                      row.gift_icon = r.Str(7);
                      row.gift_icon_at_ms = r.Int(8);
                      row.gift_icon_event_id = r.Str(9);
                      row.sender_count = r.Int(10);
                      row.top_sender_user_id = r.Int(11);
                      row.top_sender = {r.Int(12), r.Int(13), r.Int(14), r.Int(15)};
                      row.first_sender_user_id = r.Int(16);
                      row.first_sender_at_ms = r.Int(17);
                      row.first_sender_event_id = r.Str(18);
                    })
            .ok());
    EXPECT_TRUE(conn_
                    ->Query(absl::StrCat("SELECT sender_user_id, sent_count, sent_coins, "
                                         "first_sent_at_ms, last_sent_at_ms FROM "
                                         "user_gift_wall_sender",
                                         where),
                            {},
                            [&](const SqlRow& r) {
                              row.senders[r.Int(0)] = {r.Int(1), r.Int(2), r.Int(3), r.Int(4)};
                            })
                    .ok());
    return row;
  }

  // Merges a group's deltas the way the projector does: senders, then walls. Returns how many
  // wall rows were new.
  int64_t MergeGroup(ProjectionStore& store, const WallDeltas& deltas) {
    absl::StatusOr<MergedSenders> merged = store.MergeSenders("demo", deltas);
    EXPECT_TRUE(merged.ok()) << merged.status();
    if (!merged.ok()) return -1;
    std::map<WallKey, domain::SenderMerge> senders;
    for (const auto& [key, delta] : deltas) {
      if (!delta.senders.empty()) {
        senders[key] = domain::DescribeSenderMerge(delta, merged->at(key));
      }
    }
    absl::StatusOr<int64_t> added = store.MergeWalls("demo", deltas, senders);
    EXPECT_TRUE(added.ok()) << added.status();
    return added.value_or(-1);
  }

  testing::TestDatabase db_;
  std::unique_ptr<SqlConnection> conn_;
};

TEST_F(ProjectionStoreTest, ReadLedgerReturnsTheRowsThatExistByteForByte) {
  ProjectionStore store(*conn_);
  ASSERT_TRUE(store.InsertLedger("demo", {Done("E1", 7), Done("e1", 7)}).ok());
  absl::StatusOr<LedgerSnapshot> read =
      store.ReadLedger("demo", {"E1", "E1 ", "e1", std::string("\xff", 1)});
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->rows.size(), 2u);
  EXPECT_EQ(read->rows.at("E1").status, LedgerStatus::kDone);
  EXPECT_GT(read->now_ms, 0);
  absl::StatusOr<LedgerSnapshot> other = store.ReadLedger("other", {"E1"});
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE(other->rows.empty());
}

// MariaDB (RETURNING): a row that exists is skipped and named, the others inserted. Without
// RETURNING (MySQL's statements, run here on MariaDB): the insert fails whole on a duplicate.
TEST_F(ProjectionStoreTest, InsertLedgerSkipsAndNamesRowsThatExistOrFailsWithoutReturning) {
  ProjectionStore store(*conn_);
  ASSERT_TRUE(store.InsertLedger("demo", {Done("E1", 7)}).ok());
  LedgerWrite e1_again = Done("E1", 8);
  e1_again.status = LedgerStatus::kDead;
  const absl::StatusOr<std::vector<std::string>> skipped =
      store.InsertLedger("demo", {Done("E0", 7), e1_again, Done("E2", 7), Done("e1", 7)});
  ASSERT_TRUE(skipped.ok()) << skipped.status();
  EXPECT_THAT(*skipped, ::testing::ElementsAre("E1"));
  EXPECT_EQ(db_.QueryString("SELECT CONCAT(status, ' ', target_user_id) FROM "
                            "wallet_projection_events WHERE event_id = 'E1'"),
            "done 7")
      << "the row that existed is left as it was";
  EXPECT_EQ(db_.QueryInt("SELECT COUNT(*) FROM wallet_projection_events"), 4);

  ProjectionStore without_returning(*conn_, /*returning=*/false);
  const absl::Status again =
      without_returning.InsertLedger("demo", {Done("E3", 7), Done("E1", 7)}).status();
  EXPECT_EQ(ErrorKindOf(again), DbErrorKind::kDuplicate) << again;
}

TEST_F(ProjectionStoreTest, InsertLedgerIfAbsentLeavesARowThatExists) {
  ProjectionStore store(*conn_);
  ASSERT_TRUE(store.InsertLedger("demo", {Done("E1", 7)}).ok());
  LedgerWrite failed = Done("E1", 7);
  failed.status = LedgerStatus::kFailed;
  failed.retry_count = 1;
  failed.retry_after_ms = 60'000;
  ASSERT_TRUE(store.InsertLedgerIfAbsent("demo", {failed}).ok());
  EXPECT_EQ(db_.QueryString("SELECT status FROM wallet_projection_events WHERE event_id = 'E1'"),
            "done");
}

TEST_F(ProjectionStoreTest, UpdateLedgerWritesOnlyRowsThatAreStillAsTheyWereRead) {
  ProjectionStore store(*conn_);
  LedgerWrite failed = Done("F1", 7);
  failed.status = LedgerStatus::kFailed;
  failed.retry_count = 2;
  LedgerWrite other = failed;
  other.event_id = "F2";
  ASSERT_TRUE(store.InsertLedger("demo", {failed, other}).ok());
  LedgerWrite reclaim = Done("F1", 7);
  reclaim.retry_count = 2;
  reclaim.expected = domain::LedgerRow{LedgerStatus::kFailed, 2, "", 0, ""};
  LedgerWrite stale = reclaim;  // read when its retry_count was 1: someone moved it on since
  stale.event_id = "F2";
  stale.expected.retry_count = 1;
  absl::StatusOr<int64_t> updated = store.UpdateLedger("demo", {reclaim, stale});
  ASSERT_TRUE(updated.ok()) << updated.status();
  EXPECT_EQ(*updated, 1);
  EXPECT_EQ(db_.QueryString("SELECT status FROM wallet_projection_events WHERE event_id = 'F1'"),
            "done");
  EXPECT_EQ(db_.QueryString("SELECT status FROM wallet_projection_events WHERE event_id = 'F2'"),
            "failed");
}

// The merge statements are domain::MergeWallRow in SQL: random groups of events, merged into
// the same rows by both, leave the same rows, with MariaDB's RETURNING and without it.
TEST_F(ProjectionStoreTest, Rule10_TheMergeStatementsDoWhatTheDomainFoldSays) {
  for (bool returning : {true, false}) {
    SCOPED_TRACE(returning ? "RETURNING" : "merge, then read");
    db_.Exec("DELETE FROM user_gift_wall");
    db_.Exec("DELETE FROM user_gift_wall_sender");
    ProjectionStore store(*conn_, returning);
    std::mt19937 rng(returning ? 1 : 2);
    WallDeltas expected;
    for (int group = 0; group < 40; ++group) {
      std::vector<FoldEvent> events;
      for (int i = 0, n = 1 + static_cast<int>(rng() % 12); i < n; ++i) {
        FoldEvent e;
        e.event_id = absl::StrCat("g", group, "-", rng() % 1000);
        e.occurred_at_ms = 1000 + rng() % 50;
        e.gift.target_user_id = 1 + rng() % 2;
        e.gift.gift_id = absl::StrCat("gift-", rng() % 3);
        e.gift.gift_count = 1 + rng() % 3;
        e.gift.coin_amount = rng() % 100;
        e.gift.sender_user_id = rng() % 4 == 0 ? 0 : 100 + rng() % 5;
        if (rng() % 3 == 0) e.gift.gift_name = absl::StrCat("name ", e.event_id);
        if (rng() % 4 == 0) e.gift.gift_icon = absl::StrCat(e.event_id, ".png");
        events.push_back(e);
      }
      absl::StatusOr<WallDeltas> deltas = domain::FoldDeltas(events);
      ASSERT_TRUE(deltas.ok());
      MergeGroup(store, *deltas);
      for (const auto& [key, delta] : *deltas) {
        ASSERT_TRUE(domain::MergeWallRow(delta, &expected[key]).ok());
      }
    }
    for (const auto& [key, row] : expected) {
      const std::vector<domain::WallDifference> diffs =
          domain::DiffUserWalls({{key.gift_id, row}}, {{key.gift_id, StoredRow(key)}});
      EXPECT_TRUE(diffs.empty()) << key.user_id << "/" << key.gift_id << ": " << diffs.front().field
                                 << " expected " << diffs.front().expected << ", stored "
                                 << diffs.front().actual;
    }
  }
}

TEST_F(ProjectionStoreTest, Rule6_AnOverflowingMergeIsAnOutOfRangeError) {
  ProjectionStore store(*conn_);
  FoldEvent big;
  big.event_id = "big";
  big.occurred_at_ms = 1;
  big.gift.target_user_id = 7;
  big.gift.gift_id = "rose";
  big.gift.gift_count = std::numeric_limits<int64_t>::max();
  MergeGroup(store, *domain::FoldDeltas({big}));
  big.event_id = "one";
  big.gift.gift_count = 1;
  const WallDeltas one = *domain::FoldDeltas({big});
  const absl::Status s = store.MergeWalls("demo", one, {}).status();
  EXPECT_EQ(ErrorKindOf(s), DbErrorKind::kPermanent) << s;
}

// The cap (DESIGN §2.14) is checked only when a merge adds rows, and reads back only then.
TEST_F(ProjectionStoreTest, Rule14_MergeWallsSaysHowManyRowsWereNewAndWallSizesAreCounted) {
  ProjectionStore store(*conn_);
  auto gift = [](const std::string& id, int64_t user, const std::string& gift_id) {
    FoldEvent e;
    e.event_id = id;
    e.occurred_at_ms = 1000;
    e.gift.target_user_id = user;
    e.gift.gift_id = gift_id;
    e.gift.gift_count = 3;
    return e;
  };
  EXPECT_EQ(MergeGroup(store, *domain::FoldDeltas({gift("a", 7, "rose"), gift("b", 7, "car"),
                                                   gift("c", 8, "rose")})),
            3);
  // Two rows that exist and one new: one.
  EXPECT_EQ(MergeGroup(store, *domain::FoldDeltas({gift("d", 7, "rose"), gift("e", 7, "lion"),
                                                   gift("f", 8, "rose")})),
            1);
  absl::StatusOr<std::map<int64_t, int64_t>> over = store.WallsOverCap("demo", {7, 8, 9}, 1);
  ASSERT_TRUE(over.ok()) << over.status();
  EXPECT_EQ(*over, (std::map<int64_t, int64_t>{{7, 3}}));
  over = store.WallsOverCap("demo", {7, 8}, 3);
  ASSERT_TRUE(over.ok());
  EXPECT_TRUE(over->empty());
  absl::StatusOr<std::map<WallKey, int64_t>> counts =
      store.GiftCounts("demo", {WallKey{7, "rose"}, WallKey{7, "lion"}, WallKey{7, "ghost"}});
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(*counts,
            (std::map<WallKey, int64_t>{{WallKey{7, "lion"}, 3}, {WallKey{7, "rose"}, 6}}));
}

}  // namespace
}  // namespace giftwall::storage
