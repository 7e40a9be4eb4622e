#include "server/projection/wall_audit.h"

#include <atomic>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/projection/group_projector.h"
#include "server/storage/lease_store.h"
#include "tests/support/test_database.h"
#include "tests/support/test_projection.h"

namespace giftwall::projection {
namespace {

using domain::GiftEvent;
using domain::ProjectedBy;
using ::testing::ElementsAre;

constexpr int64_t kT0 = 1'700'000'000'000;

class WallAuditTest : public ::testing::Test {
 protected:
  WallAuditTest()
      : pool_(db_.PoolOptions(16)), projection_(pool_, Retry()), audit_(pool_, Retry()) {}
  static domain::RetryPolicy Retry() {
    domain::RetryPolicy retry;
    retry.contention_attempts = 20;
    return retry;
  }

  // What the wallet and the relay do: write the outbox row, deliver the message.
  void Deliver(const std::string& id, int64_t user, const std::string& gift, int64_t count,
               int64_t sender, int64_t at, const std::string& outbox_code = "demo") {
    const std::string payload = absl::StrFormat(
        R"({"target_user_id":%d,"gift_id":"%s","gift_count":%d,"sender_user_id":%d,)"
        R"("coin_amount":%d,"gift_name":"%s %s"})",
        user, gift, count, sender, count * 10, gift, id);
    db_.InsertOutbox(outbox_code, id, "WalletGiftDebited", payload, at);
    absl::StatusOr<domain::ProjectionResult> r =
        projection_.Project(GiftEvent{"demo", id, payload, at}, ProjectedBy::kRelay);
    ASSERT_TRUE(r.ok()) << r.status();
  }

  void DeliverSome() {
    for (int i = 0; i < 30; ++i) {
      Deliver(absl::StrCat("E", i), 1 + i % 3, absl::StrCat("g", i % 4), 1 + i % 2, 100 + i % 5,
              kT0 + i % 7);
    }
  }

  VerifyReport Verify(int64_t user = 0) {
    absl::StatusOr<VerifyReport> report = audit_.Verify("demo", user);
    EXPECT_TRUE(report.ok()) << report.status();
    return report.ok() ? *report : VerifyReport{};
  }

  testing::TestDatabase db_;
  storage::ConnectionPool pool_;
  projection::GroupProjector projection_;
  WallAudit audit_;
};

TEST_F(WallAuditTest, VerifyFindsNoDriftInAProjectedWall) {
  DeliverSome();
  VerifyReport report = Verify();
  EXPECT_EQ(report.users_checked, 3);
  EXPECT_GT(report.rows_checked, 12);
  EXPECT_EQ(report.drifted, 0);
  EXPECT_TRUE(report.samples.empty());
  EXPECT_TRUE(report.unverifiable_users.empty());
}

// Rebuild keeps a wall within the cap as projection does (§2.14): a wall that holds more (from
// before the cap, or concurrent groups) keeps its first gifts to arrive, and the events of the
// others go dead with the cap's reason, so that verify finds no drift and a requeue after
// raising the cap brings them back.
TEST_F(WallAuditTest, Rule14_RebuildKeepsAWallWithinTheCap) {
  for (int i = 0; i < 5; ++i) {
    Deliver(absl::StrCat("C", i), 4, absl::StrCat("g", 4 - i), 1, 100, kT0 + i);
  }
  Deliver("C5", 4, "g4", 2, 101, kT0 + 9);  // more of the first gift to arrive
  WallAudit capped(pool_, Retry(), /*max_wall_gifts=*/3);
  absl::StatusOr<bool> rebuilt = capped.RebuildUser("demo", 4);
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status();
  EXPECT_TRUE(*rebuilt);
  EXPECT_EQ(db_.QueryString("SELECT GROUP_CONCAT(CAST(gift_id AS CHAR) ORDER BY gift_id) "
                            "FROM user_gift_wall WHERE user_id = 4"),
            "g2,g3,g4");
  EXPECT_EQ(db_.QueryInt("SELECT gift_count FROM user_gift_wall WHERE user_id = 4 AND "
                         "gift_id = 'g4'"),
            3);
  EXPECT_EQ(db_.QueryInt("SELECT COUNT(*) FROM user_gift_wall_sender WHERE user_id = 4 AND "
                         "gift_id IN ('g0', 'g1')"),
            0);
  EXPECT_EQ(db_.QueryString("SELECT GROUP_CONCAT(CAST(event_id AS CHAR) ORDER BY event_id) "
                            "FROM wallet_projection_events WHERE status = 'dead' AND "
                            "last_error LIKE '%--max_wall_gifts%'"),
            "C3,C4");
  absl::StatusOr<VerifyReport> report = capped.Verify("demo", 4);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->drifted, 0);
  // Within the cap, a rebuild changes nothing.
  rebuilt = capped.RebuildUser("demo", 4);
  ASSERT_TRUE(rebuilt.ok());
  EXPECT_EQ(db_.QueryInt("SELECT COUNT(*) FROM user_gift_wall WHERE user_id = 4"), 3);
}

// The wallet wrote some of demo's rows as "DEMO": verify and rebuild read them as demo's, as the
// relay and the scan project them.
TEST_F(WallAuditTest, VerifyAndRebuildReadRowsUnderANonNormalizedCodeAsTheApps) {
  DeliverSome();
  Deliver("U1", 1, "g0", 2, 100, kT0 + 50, "DEMO");
  Deliver("U2", 2, "g9", 1, 101, kT0 + 51, " Demo");
  VerifyReport report = Verify();
  EXPECT_EQ(report.drifted, 0);
  EXPECT_TRUE(report.unverifiable_users.empty()) << report.unverifiable_users.size();
  db_.Exec("UPDATE user_gift_wall SET gift_count = 99 WHERE user_id = 1 AND gift_id = 'g0'");
  absl::StatusOr<bool> rebuilt = audit_.RebuildUser("demo", 1);
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status();
  EXPECT_TRUE(*rebuilt);
  report = Verify();
  EXPECT_EQ(report.drifted, 0);
  EXPECT_TRUE(report.unverifiable_users.empty());
}

// An outbox row edited after its event was done into one no path would project (created_at_ms
// <= 0) no longer folds: its user is unverifiable, as for any row that no longer folds.
TEST_F(WallAuditTest, VerifyAppliesTheEnvelopeRulesToTheOutboxRows) {
  DeliverSome();
  db_.Exec("UPDATE wallet_outbox SET created_at_ms = 0 WHERE event_id = 'E3'");
  VerifyReport report = Verify();
  EXPECT_THAT(report.unverifiable_users, ElementsAre(1));
}

TEST_F(WallAuditTest, VerifyReportsEveryKindOfDrift) {
  DeliverSome();
  db_.Exec(
      "UPDATE user_gift_wall SET gift_count = gift_count + 1 WHERE user_id = 1 AND gift_id = 'g0'");
  db_.Exec("DELETE FROM user_gift_wall_sender WHERE user_id = 2 LIMIT 1");
  db_.Exec(
      "INSERT INTO user_gift_wall (app_code, user_id, gift_id, gift_count, "
      "first_received_at_ms, last_received_at_ms, created_at_ms, updated_at_ms) VALUES "
      "('demo', 3, 'ghost', 1, 1, 1, 1, 1), ('demo', 9, 'orphan', 1, 1, 1, 1, 1)");
  VerifyReport report = Verify();
  EXPECT_EQ(report.drifted, 3);
  EXPECT_THAT(report.drifted_users, ElementsAre(1, 2, 3));
  // A wall with no done events at all has no evidence to be checked against (a pruned ledger):
  // it is unverifiable, not drift, and a rebuild leaves it alone.
  EXPECT_THAT(report.unverifiable_users, ElementsAre(9));
  bool saw_count = false, saw_missing = false, saw_extra = false;
  for (const WallDrift& d : report.samples) {
    saw_count |= d.user_id == 1 && d.difference.field == "gift_count";
    saw_missing |= d.user_id == 2 && d.difference.field == "row" && d.difference.actual == "absent";
    saw_extra |=
        d.user_id == 3 && d.difference.gift_id == "ghost" && d.difference.expected == "absent";
  }
  EXPECT_TRUE(saw_count && saw_missing && saw_extra);
  // One user only.
  report = Verify(1);
  EXPECT_EQ(report.users_checked, 1);
  EXPECT_EQ(report.drifted, 1);
}

// The anonymous flag of a sender row (DESIGN §2.5, issue 19) is folded exactly once on every
// path and is part of what verify checks and rebuild restores.
TEST_F(WallAuditTest, Rule17_AnAnonymousSendIsKeptOnItsSenderRowVerifiedAndRebuilt) {
  auto deliver = [&](const std::string& id, int64_t sender, bool anonymous, bool again = false) {
    const std::string payload = absl::StrFormat(
        R"({"target_user_id":4,"gift_id":"rose","gift_count":1,"sender_user_id":%d%s})", sender,
        anonymous ? R"(,"anonymous":true)" : "");
    if (!again) db_.InsertOutbox("demo", id, "WalletGiftDebited", payload, kT0);
    ASSERT_TRUE(projection_.Project(GiftEvent{"demo", id, payload, kT0}, ProjectedBy::kRelay).ok());
  };
  deliver("A1", 50, false);
  deliver("A2", 50, true);
  deliver("A2", 50, true, /*again=*/true);  // a redelivery changes nothing
  deliver("A3", 50, false);
  deliver("A4", 51, false);
  const std::string flag =
      "SELECT anonymous FROM user_gift_wall_sender WHERE user_id = 4 AND sender_user_id = ";
  EXPECT_EQ(db_.QueryInt(flag + "50"), 1) << "sticky after a later plain send";
  EXPECT_EQ(db_.QueryInt(flag + "51"), 0);
  EXPECT_EQ(Verify(4).drifted, 0);

  db_.Exec("UPDATE user_gift_wall_sender SET anonymous = 0 WHERE user_id = 4");
  VerifyReport report = Verify(4);
  ASSERT_EQ(report.drifted, 1);
  ASSERT_EQ(report.samples.size(), 1u);
  EXPECT_EQ(report.samples[0].difference.field, "anonymous");
  EXPECT_EQ(report.samples[0].difference.sender_user_id, 50);
  absl::StatusOr<bool> rebuilt = audit_.RebuildUser("demo", 4);
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status();
  EXPECT_EQ(db_.QueryInt(flag + "50"), 1);
  EXPECT_EQ(db_.QueryInt(flag + "51"), 0);
  EXPECT_EQ(Verify(4).drifted, 0);
}

TEST_F(WallAuditTest, RebuildRepairsDriftAndLeavesUnverifiableUsersAlone) {
  DeliverSome();
  db_.Exec("UPDATE user_gift_wall SET total_coins = 0, top_sender_user_id = 5 WHERE user_id = 1");
  db_.Exec("DELETE FROM user_gift_wall_sender WHERE user_id = 2");
  // User 3's first event has lost its outbox row: that wall cannot be recomputed.
  db_.Exec("DELETE FROM wallet_outbox WHERE event_id = 'E2'");
  db_.Exec("UPDATE user_gift_wall SET gift_count = 999 WHERE user_id = 3");
  VerifyReport report = Verify();
  EXPECT_THAT(report.drifted_users, ElementsAre(1, 2));
  EXPECT_THAT(report.unverifiable_users, ElementsAre(3));
  for (int64_t user : {1, 2, 3}) {
    absl::StatusOr<bool> rebuilt = audit_.RebuildUser("demo", user);
    ASSERT_TRUE(rebuilt.ok()) << rebuilt.status();
    EXPECT_EQ(*rebuilt, user != 3);
  }
  report = Verify();
  EXPECT_EQ(report.drifted, 0);
  EXPECT_EQ(db_.QueryInt("SELECT MAX(gift_count) FROM user_gift_wall WHERE user_id = 3"), 999)
      << "an unverifiable wall is left as it is";
  absl::StatusOr<std::vector<int64_t>> users = audit_.ListUsers("demo");
  ASSERT_TRUE(users.ok());
  EXPECT_THAT(*users, ElementsAre(1, 2, 3));
}

// The heart of a live rebuild: folds keep landing while user after user is rebuilt, and nothing
// is lost or counted twice.
TEST_F(WallAuditTest, RebuildUnderLiveProjectionLosesAndDoublesNothing) {
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::vector<std::thread> relays;
  for (int t = 0; t < 4; ++t) {
    relays.emplace_back([&, t] {
      std::unique_ptr<storage::SqlConnection> wallet = db_.Connect();
      std::mt19937 rng(static_cast<unsigned>(t));
      for (int i = 0; i < 150; ++i) {
        const int64_t user = 1 + static_cast<int64_t>(rng() % 5);
        // New gifts keep appearing (next-key locks must hold them off too) and old ones grow.
        const std::string gift = absl::StrCat("g", rng() % 60);
        const std::string id = absl::StrCat("T", t, "-", i);
        const std::string payload = absl::StrFormat(
            R"({"target_user_id":%d,"gift_id":"%s","gift_count":1,"sender_user_id":%d})", user,
            gift, 100 + rng() % 3);
        testing::InsertOutbox(*wallet, "demo", id, "WalletGiftDebited", payload, kT0 + i);
        absl::StatusOr<domain::ProjectionResult> r =
            projection_.Project(GiftEvent{"demo", id, payload, kT0 + i}, ProjectedBy::kRelay);
        if (!r.ok() && failures++ < 3) ADD_FAILURE() << r.status();
      }
    });
  }
  std::thread rebuilder([&] {
    // Each wall is damaged first, so that every rebuild has rows to replace.
    std::unique_ptr<storage::SqlConnection> vandal = db_.Connect();
    while (!stop) {
      for (int64_t user = 1; user <= 5; ++user) {
        absl::Status damaged = vandal->ExecuteDirect(absl::StrCat(
            "UPDATE user_gift_wall SET total_coins = total_coins + 1 WHERE user_id = ", user));
        if (!damaged.ok() && !storage::IsContention(damaged) && failures++ < 3)
          ADD_FAILURE() << damaged;
        absl::StatusOr<bool> rebuilt = audit_.RebuildUser("demo", user);
        if (!rebuilt.ok() && failures++ < 3) ADD_FAILURE() << rebuilt.status();
      }
    }
  });
  for (std::thread& t : relays) t.join();
  stop = true;
  rebuilder.join();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(db_.QueryInt("SELECT SUM(gift_count) FROM user_gift_wall"), 600);
  VerifyReport report = Verify();
  EXPECT_EQ(report.drifted, 0);
  for (const WallDrift& d : report.samples) {
    ADD_FAILURE() << d.user_id << "/" << d.difference.gift_id << " " << d.difference.field << ": "
                  << d.difference.expected << " vs " << d.difference.actual;
  }
}

// The sent wall (§2.19) is folded in the projection's transaction, and a repair sets a row to the
// sum of its sender rows under the row's lock, so that a projection either is in the sum or adds
// to it afterwards. With relays projecting while repairs of every sent row and rebuilds of a
// damaged wall run all the while, no repair loses a projection's part (nothing repairs after the
// relays stop), and verify finds the sent wall exact.
TEST_F(WallAuditTest, Rule19_TheSentWallUnderLiveProjectionRepairAndRebuildLosesAndDoublesNothing) {
  ASSERT_TRUE(
      testing::UpdateSettings(pool_, "demo", domain::SettingsRequest{"UTC", {}, "test", true})
          .ok());
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::vector<std::thread> relays;
  for (int t = 0; t < 4; ++t) {
    relays.emplace_back([&, t] {
      std::unique_ptr<storage::SqlConnection> wallet = db_.Connect();
      std::mt19937 rng(static_cast<unsigned>(t));
      for (int i = 0; i < 120; ++i) {
        const std::string id = absl::StrCat("T", t, "-", i);
        const std::string payload = absl::StrFormat(
            R"({"target_user_id":%d,"gift_id":"g%d","gift_count":1,"sender_user_id":%d%s})",
            1 + rng() % 6, rng() % 8, 100 + rng() % 3,
            rng() % 10 == 0 ? R"(,"anonymous":true)" : "");
        testing::InsertOutbox(*wallet, "demo", id, "WalletGiftDebited", payload, kT0 + i);
        absl::StatusOr<domain::ProjectionResult> r =
            projection_.Project(GiftEvent{"demo", id, payload, kT0 + i}, ProjectedBy::kRelay);
        if (!r.ok() && failures++ < 3) ADD_FAILURE() << r.status();
      }
    });
  }
  std::thread repairer([&] {
    std::unique_ptr<storage::SqlConnection> vandal = db_.Connect();
    std::vector<domain::SentKey> keys;
    for (int64_t sender = 100; sender < 103; ++sender) {
      for (int gift = 0; gift < 8; ++gift) keys.push_back({sender, absl::StrCat("g", gift)});
    }
    while (!stop) {
      absl::Status damaged = vandal->ExecuteDirect(
          "UPDATE user_gift_wall SET total_coins = total_coins + 1 WHERE user_id = 2");
      if (!damaged.ok() && !storage::IsContention(damaged) && failures++ < 3) {
        ADD_FAILURE() << damaged;
      }
      absl::StatusOr<int64_t> set = audit_.RecomputeSent("demo", keys);
      if (!set.ok() && failures++ < 3) ADD_FAILURE() << set.status();
      absl::StatusOr<bool> rebuilt = audit_.RebuildUser("demo", 2);
      if (!rebuilt.ok() && failures++ < 3) ADD_FAILURE() << rebuilt.status();
    }
  });
  for (std::thread& t : relays) t.join();
  stop = true;
  repairer.join();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(db_.QueryInt("SELECT SUM(sent_count) FROM user_gift_sent"), 480);
  EXPECT_EQ(db_.QueryInt("SELECT SUM(receiver_count) FROM user_gift_sent"),
            db_.QueryInt("SELECT COUNT(*) FROM user_gift_wall_sender"));
  VerifyReport report = Verify();
  EXPECT_EQ(report.drifted, 0);
  for (const WallDrift& d : report.samples) {
    ADD_FAILURE() << d.user_id << "/" << d.difference.gift_id << " " << d.difference.period << " "
                  << d.difference.field << ": " << d.difference.expected << " vs "
                  << d.difference.actual;
  }
}

TEST_F(WallAuditTest, OneRebuildPerAppAtATime) {
  absl::StatusOr<std::unique_ptr<storage::LeaseKeeper>> first = audit_.LockRebuild("demo");
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<std::unique_ptr<storage::LeaseKeeper>> second = audit_.LockRebuild("demo");
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(second.status().message()),
              ::testing::HasSubstr("a rebuild of app_code demo is already running"));
  EXPECT_TRUE(audit_.LockRebuild("other").ok()) << "other apps are not held up";
  first->reset();  // released: the next rebuild need not wait for it to expire
  EXPECT_TRUE(audit_.LockRebuild("demo").ok());
}

// A rebuild that lost its lease (it paused past it, and another rebuild took the app) writes
// nothing more: every transaction of it checks the lease first.
TEST_F(WallAuditTest, ARebuildThatLostItsLeaseWritesNothing) {
  Deliver("E1", 7, "rose", 3, 100, kT0);
  db_.Exec("UPDATE user_gift_wall SET gift_count = 99");
  absl::StatusOr<std::unique_ptr<storage::LeaseKeeper>> paused = audit_.LockRebuild("demo");
  ASSERT_TRUE(paused.ok()) << paused.status();
  const storage::Lease lease = (*paused)->lease();
  // Its lease runs out meanwhile (as if the process had stopped), and another takes it.
  db_.Exec("UPDATE giftwall_leases SET expires_at_ms = 0 WHERE name = 'rebuild/demo'");
  absl::StatusOr<std::unique_ptr<storage::LeaseKeeper>> other = audit_.LockRebuild("demo");
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_GT((*other)->lease().token, lease.token);

  absl::StatusOr<bool> rebuilt = audit_.RebuildUser("demo", 7, &lease);
  ASSERT_FALSE(rebuilt.ok());
  EXPECT_TRUE(storage::IsLeaseLost(rebuilt.status())) << rebuilt.status();
  EXPECT_EQ(db_.QueryInt("SELECT gift_count FROM user_gift_wall WHERE user_id = 7"), 99);
  rebuilt = audit_.RebuildUser("demo", 7, &(*other)->lease());
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status();
  EXPECT_EQ(db_.QueryInt("SELECT gift_count FROM user_gift_wall WHERE user_id = 7"), 3);
}

}  // namespace
}  // namespace giftwall::projection
