// Leases (DESIGN §2.20) on a real MariaDB: taken, refused, renewed, released, fenced, and kept by
// a LeaseKeeper; and under many takers at once, never two holders of one token.
#include "server/storage/lease_store.h"

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/storage/db_clock.h"
#include "tests/support/test_database.h"

namespace giftwall::storage {
namespace {

using ::testing::HasSubstr;

class LeaseStoreTest : public ::testing::Test {
 protected:
  absl::StatusOr<Lease> Acquire(const std::string& holder, absl::Duration duration) {
    return LeaseStatements(*conn_).Acquire("job", holder, duration);
  }
  absl::Status Fence(const Lease& lease) {
    absl::StatusOr<Transaction> tx = Transaction::Begin(*conn_);
    if (!tx.ok()) return tx.status();
    if (absl::Status s = LeaseStatements(*conn_).Fence(lease); !s.ok()) return s;
    return tx->Commit();
  }
  // Makes the lease run out now, as if its holder had stopped long ago.
  void Expire() { db_.Exec("UPDATE giftwall_leases SET expires_at_ms = 0 WHERE name = 'job'"); }

  testing::TestDatabase db_;
  std::unique_ptr<SqlConnection> conn_ = db_.Connect();
};

TEST_F(LeaseStoreTest, OneHolderAtATimeWithTokensThatOnlyGrow) {
  absl::StatusOr<Lease> a = Acquire("a", absl::Seconds(30));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->token, 1);
  absl::StatusOr<Lease> b = Acquire("b", absl::Seconds(30));
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(b.status().message()), HasSubstr("the lease job is held by a for"));

  absl::StatusOr<Lease> renewed = Acquire("a", absl::Seconds(30));
  ASSERT_TRUE(renewed.ok()) << renewed.status();
  EXPECT_EQ(renewed->token, 1) << "a renewal keeps the token";
  EXPECT_GE(renewed->expires_at_ms, a->expires_at_ms);

  ASSERT_TRUE(LeaseStatements(*conn_).Release(*a).ok());
  b = Acquire("b", absl::Seconds(30));
  ASSERT_TRUE(b.ok()) << "a released lease is free at once: " << b.status();
  EXPECT_EQ(b->token, 2);
  Expire();
  absl::StatusOr<Lease> c = Acquire("c", absl::Seconds(30));
  ASSERT_TRUE(c.ok()) << "an expired lease is free: " << c.status();
  EXPECT_EQ(c->token, 3);
}

TEST_F(LeaseStoreTest, AFencedWriteNeedsTheLeaseStillHeldWithItsToken) {
  absl::StatusOr<Lease> a = Acquire("a", absl::Seconds(30));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(Fence(*a).ok());
  EXPECT_TRUE(Fence(*a).ok());
  EXPECT_EQ(db_.QueryInt("SELECT fenced_writes FROM giftwall_leases WHERE name = 'job'"), 2);

  // Expired, even untaken: its holder may not write (it may be taken any moment).
  Expire();
  absl::Status s = Fence(*a);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(IsLeaseLost(s)) << s;
  EXPECT_FALSE(IsLeaseLost(absl::FailedPreconditionError("something else")));

  // Taken by another: the old token is refused, also once the old holder renews nothing.
  absl::StatusOr<Lease> b = Acquire("b", absl::Seconds(30));
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_TRUE(IsLeaseLost(Fence(*a)));
  EXPECT_TRUE(Fence(*b).ok());
  ASSERT_TRUE(LeaseStatements(*conn_).Release(*a).ok());
  EXPECT_TRUE(Fence(*b).ok()) << "a stale holder's release ended another's lease";
}

// Many takers on sessions of their own, with short leases that run out all the time: every take
// gets a token no other take got, and every fenced write is counted by the holder of its token.
TEST_F(LeaseStoreTest, ManyTakersAtOnceNeverShareAToken) {
  constexpr int kTakers = 8;
  std::mutex mu;
  std::map<int64_t, std::set<std::string>> holders_by_token;
  std::atomic<int64_t> fenced{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> takers;
  for (int t = 0; t < kTakers; ++t) {
    takers.emplace_back([&, t] {
      std::unique_ptr<SqlConnection> conn = db_.Connect();
      const std::string me = NewLeaseHolder(absl::StrCat("taker", t));
      while (!stop) {
        absl::StatusOr<Lease> lease =
            LeaseStatements(*conn).Acquire("job", me, absl::Milliseconds(30));
        if (!lease.ok()) {
          if (lease.status().code() != absl::StatusCode::kFailedPrecondition) {
            ADD_FAILURE() << lease.status();
            return;
          }
          absl::SleepFor(absl::Milliseconds(2));
          continue;
        }
        {
          std::lock_guard<std::mutex> lock(mu);
          holders_by_token[lease->token].insert(me);
        }
        auto fenced_write = [&] {
          absl::StatusOr<Transaction> tx = Transaction::Begin(*conn);
          if (!tx.ok()) return tx.status();
          absl::Status s = LeaseStatements(*conn).Fence(*lease);
          return s.ok() ? tx->Commit() : s;
        };
        if (fenced_write().ok()) ++fenced;
        // Past its lease: the holder may write no more, whether another took it or not.
        absl::SleepFor(absl::Milliseconds(35));
        absl::Status late = fenced_write();
        EXPECT_TRUE(IsLeaseLost(late)) << late;
      }
    });
  }
  absl::SleepFor(absl::Seconds(3));
  stop = true;
  for (std::thread& t : takers) t.join();
  ASSERT_GT(holders_by_token.size(), 5u) << "the lease hardly changed hands";
  int64_t expected_token = 1;
  for (const auto& [token, holders] : holders_by_token) {
    EXPECT_EQ(holders.size(), 1u) << "token " << token << " went to several holders";
    EXPECT_EQ(token, expected_token++) << "tokens grow one at a time";
  }
  EXPECT_EQ(db_.QueryInt("SELECT fenced_writes FROM giftwall_leases WHERE name = 'job'"),
            fenced.load());
}

TEST_F(LeaseStoreTest, AKeeperRenewsItsLeaseAndReleasesItWhenDone) {
  absl::StatusOr<std::unique_ptr<LeaseKeeper>> keeper = LeaseKeeper::Take(
      db_.endpoint(), db_.PoolOptions().session, "job", "keeper", absl::Seconds(3));
  ASSERT_TRUE(keeper.ok()) << keeper.status();
  const int64_t taken_until = (*keeper)->lease().expires_at_ms;
  absl::SleepFor(absl::Seconds(4));  // past its duration: only renewals keep it
  EXPECT_FALSE((*keeper)->lost());
  EXPECT_GT(db_.QueryInt("SELECT expires_at_ms FROM giftwall_leases WHERE name = 'job'"),
            taken_until)
      << "never renewed";
  EXPECT_FALSE(Acquire("other", absl::Seconds(1)).ok()) << "the kept lease ran out";
  EXPECT_TRUE(Fence((*keeper)->lease()).ok());
  keeper->reset();
  absl::StatusOr<Lease> other = Acquire("other", absl::Seconds(1));
  ASSERT_TRUE(other.ok()) << "not released: " << other.status();
  EXPECT_EQ(other->token, 2);
}

TEST_F(LeaseStoreTest, AKeeperWhoseLeaseWasTakenSaysSo) {
  absl::StatusOr<std::unique_ptr<LeaseKeeper>> keeper = LeaseKeeper::Take(
      db_.endpoint(), db_.PoolOptions().session, "job", "keeper", absl::Seconds(1));
  ASSERT_TRUE(keeper.ok()) << keeper.status();
  // Taken over in one statement (as if it had expired and another had taken it): no renewal can
  // come in between.
  db_.Exec(absl::StrCat("UPDATE giftwall_leases SET holder = 'other', token = token + 1, ",
                        "expires_at_ms = ", GIFTWALL_DB_NOW_MS, " + 30000 WHERE name = 'job'"));
  for (int i = 0; i < 50 && !(*keeper)->lost(); ++i) absl::SleepFor(absl::Milliseconds(100));
  EXPECT_TRUE((*keeper)->lost());
  keeper->reset();
  EXPECT_EQ(db_.QueryString("SELECT holder FROM giftwall_leases WHERE name = 'job'"), "other")
      << "a keeper that lost its lease released another's";
}

TEST_F(LeaseStoreTest, ATakerThatWaitsGetsTheLeaseOnceItIsReleased) {
  absl::StatusOr<std::unique_ptr<LeaseKeeper>> first = LeaseKeeper::Take(
      db_.endpoint(), db_.PoolOptions().session, "job", "first", absl::Seconds(30));
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<std::unique_ptr<LeaseKeeper>> impatient =
      LeaseKeeper::Take(db_.endpoint(), db_.PoolOptions().session, "job", "impatient",
                        absl::Seconds(30), absl::Milliseconds(300));
  ASSERT_FALSE(impatient.ok());
  EXPECT_EQ(impatient.status().code(), absl::StatusCode::kFailedPrecondition);
  std::thread releaser([&] {
    absl::SleepFor(absl::Milliseconds(500));
    first->reset();
  });
  absl::StatusOr<std::unique_ptr<LeaseKeeper>> patient =
      LeaseKeeper::Take(db_.endpoint(), db_.PoolOptions().session, "job", "patient",
                        absl::Seconds(30), absl::Seconds(20));
  releaser.join();
  ASSERT_TRUE(patient.ok()) << patient.status();
  EXPECT_EQ((*patient)->lease().token, 2);
}

}  // namespace
}  // namespace giftwall::storage
