#include "server/storage/wall_repository.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/domain/sponsor.h"
#include "server/storage/sender_privacy_repository.h"
#include "tests/support/test_database.h"

namespace giftwall::storage {
namespace {

class WallRepositoryTest : public ::testing::Test {
 protected:
  WallRepositoryTest() : pool_(db_.PoolOptions()), repo_(pool_) {}

  void AddGift(int64_t user, const std::string& gift, int64_t count, int64_t first, int64_t last,
               int64_t coins = 0) {
    db_.Exec(absl::StrFormat(
        "INSERT INTO user_gift_wall (app_code, user_id, gift_id, gift_count, total_coins, "
        "first_received_at_ms, last_received_at_ms, created_at_ms, updated_at_ms) VALUES "
        "('demo', %d, '%s', %d, %d, %d, %d, 1, 1)",
        user, gift, count, coins, first, last));
  }
  void AddSender(int64_t user, const std::string& gift, int64_t sender, int64_t count,
                 int64_t last) {
    db_.Exec(absl::StrFormat(
        "INSERT INTO user_gift_wall_sender (app_code, user_id, gift_id, sender_user_id, "
        "sent_count, sent_coins, first_sent_at_ms, last_sent_at_ms, created_at_ms, updated_at_ms) "
        "VALUES ('demo', %d, '%s', %d, %d, %d, 1, %d, 1, 1)",
        user, gift, sender, count, count * 10, last));
  }

  // A gift's row of one period of `user`'s wall: its 冠名 `top` (0: none) with `count`.
  void AddPeriodGift(int64_t user, const std::string& kind, const std::string& key,
                     const std::string& gift, int64_t top, int64_t count) {
    db_.Exec(absl::StrFormat(
        "INSERT INTO user_gift_wall_period (app_code, user_id, period_kind, period_key, gift_id, "
        "gift_count, first_received_at_ms, last_received_at_ms, sender_count, "
        "top_sender_user_id, top_sender_count, top_sender_coins, top_sender_last_sent_at_ms, "
        "created_at_ms, updated_at_ms) "
        "VALUES ('demo', %d, '%s', '%s', '%s', %d, 1, 2, %d, %d, %d, %d, 2, 1, 1)",
        user, kind, key, gift, count, top == 0 ? 0 : 1, top, top == 0 ? 0 : count,
        top == 0 ? 0 : count * 10));
  }

  testing::TestDatabase db_;
  ConnectionPool pool_;
  WallRepository repo_;
};

TEST_F(WallRepositoryTest, ReadWallsReadsEveryGiftOfTheWallsAskedForAndNoOther) {
  for (int i = 0; i < 120; ++i) AddGift(7, absl::StrFormat("g%03d", i), 1 + i % 4, 1, 2, i);
  AddGift(8, "other-wall", 100, 1, 1, 1);
  AddGift(9, "third-wall", 3, 1, 1, 1);
  db_.Exec(
      "UPDATE user_gift_wall SET gift_name = 'Rose', sender_count = 2, top_sender_user_id = 42, "
      "top_sender_count = 3, first_sender_user_id = 41 WHERE gift_id = 'g005'");
  absl::StatusOr<std::map<int64_t, std::vector<domain::WallItem>>> walls =
      repo_.ReadWalls("demo", std::nullopt, {7, 9, 10});
  ASSERT_TRUE(walls.ok()) << walls.status();
  ASSERT_EQ(walls->size(), 2u) << "user 10 has no wall; user 8 was not asked for";
  ASSERT_EQ(walls->at(7).size(), 120u);
  ASSERT_EQ(walls->at(9).size(), 1u);
  EXPECT_EQ(walls->at(9).front().gift_id, "third-wall");
  std::set<std::string> ids;
  for (const domain::WallItem& item : walls->at(7)) {
    ids.insert(item.gift_id);
    if (item.gift_id != "g005") {
      EXPECT_FALSE(item.top_sender.has_value());
      continue;
    }
    EXPECT_EQ(item.gift_name, "Rose");
    EXPECT_EQ(item.total_coins, 5);
    ASSERT_TRUE(item.top_sender.has_value());
    EXPECT_EQ(item.top_sender->user_id, 42);
    EXPECT_EQ(item.first_sender_user_id, 41);
  }
  EXPECT_EQ(ids.size(), 120u);
  walls = repo_.ReadWalls("other-app", std::nullopt, {7});
  ASSERT_TRUE(walls.ok());
  EXPECT_TRUE(walls->empty());
}

TEST_F(WallRepositoryTest, SendersPageInTheTopSenderOrder) {
  // Ties on count are broken by who reached it first (earlier last_sent), then by user id.
  AddSender(7, "rose", 300, 5, 50);
  AddSender(7, "rose", 200, 5, 40);
  AddSender(7, "rose", 100, 5, 40);
  AddSender(7, "rose", 400, 9, 90);
  AddSender(7, "rose", 500, 1, 10);
  AddSender(7, "lily", 600, 99, 1);
  std::vector<int64_t> order;
  std::optional<SenderCursor> after;
  for (int pages = 0; pages < 10; ++pages) {
    absl::StatusOr<SenderPage> page = repo_.ListSenders("demo", 7, std::nullopt, "rose", after, 2);
    ASSERT_TRUE(page.ok()) << page.status();
    for (const domain::SenderStats& s : page->senders) order.push_back(s.user_id);
    if (!page->has_more) break;
    after = domain::SenderCursorAfter(after, page->senders);
  }
  EXPECT_THAT(order, ::testing::ElementsAre(400, 100, 200, 300, 500));
}

// The history of one kind: the past periods of the window only, newest first, gifts ascending
// within a period, gifts without a sender left out; each sponsor with the periods of the window
// they won the gift in. Pages follow one another without a gap or a repeat.
TEST_F(WallRepositoryTest, SponsorHistoryPagesNewestPeriodFirstWithThePeriodsEachSponsorWon) {
  AddPeriodGift(7, "week", "2026-W46", "rose", 10, 9);  // before the window
  AddPeriodGift(7, "week", "2026-W47", "rose", 10, 3);
  AddPeriodGift(7, "week", "2026-W47", "lily", 20, 2);
  AddPeriodGift(7, "week", "2026-W47", "star", 0, 4);  // no sender, no 冠名
  AddPeriodGift(7, "week", "2026-W48", "rose", 30, 4);
  AddPeriodGift(7, "week", "2026-W49", "rose", 10, 2);
  AddPeriodGift(7, "week", "2026-W50", "rose", 40, 5);  // the current week
  AddPeriodGift(7, "month", "2026-11", "rose", 10, 9);  // another kind
  AddPeriodGift(8, "week", "2026-W48", "rose", 10, 9);  // another wall
  SponsorHistoryQuery query;
  query.kind = domain::PeriodKind::kWeek;
  query.oldest_key = "2026-W47";
  query.current_key = "2026-W50";
  query.limit = 2;
  std::vector<std::string> seen;
  for (int pages = 0; pages < 10; ++pages) {
    absl::StatusOr<SponsorHistoryPage> page = repo_.ListSponsorHistory("demo", 7, query);
    ASSERT_TRUE(page.ok()) << page.status();
    for (const SponsorRecord& r : page->records) {
      seen.push_back(absl::StrCat(r.period_key, " ", r.gift_id, " ", r.sponsor.user_id, "x",
                                  r.sponsor.sent_count, " won ", r.periods_won));
    }
    if (!page->has_more) break;
    query.after = {page->records.back().period_key, page->records.back().gift_id};
  }
  EXPECT_THAT(seen, ::testing::ElementsAre("2026-W49 rose 10x2 won 2", "2026-W48 rose 30x4 won 1",
                                           "2026-W47 lily 20x2 won 1", "2026-W47 rose 10x3 won 2"));
  // One gift's history.
  query.after.reset();
  query.gift_id = "lily";
  query.limit = 50;
  absl::StatusOr<SponsorHistoryPage> lily = repo_.ListSponsorHistory("demo", 7, query);
  ASSERT_TRUE(lily.ok()) << lily.status();
  ASSERT_EQ(lily->records.size(), 1u);
  EXPECT_EQ(lily->records[0].sponsor.sent_coins, 20);
  EXPECT_FALSE(lily->has_more);
}

// The sponsor and the sender in one statement; the senders ahead counted from the rank index,
// exactly up to the limit.
TEST_F(WallRepositoryTest, StandingReadsTheSponsorAndCountsTheSendersAheadUpToTheLimit) {
  AddGift(7, "rose", 1, 1, 1);
  db_.Exec(
      "UPDATE user_gift_wall SET top_sender_user_id = 1, top_sender_count = 5000, "
      "top_sender_last_sent_at_ms = 1 WHERE gift_id = 'rose'");
  // Sender n sent 5001 - n: 1,100 senders, in rank order of their ids.
  std::string values;
  for (int n = 1; n <= 1100; ++n) {
    absl::StrAppendFormat(&values, "%s('demo', 7, 'rose', %d, %d, 0, 1, 1, 1, 1)",
                          n == 1 ? "" : ",", n, 5001 - n);
  }
  db_.Exec(absl::StrCat(
      "INSERT INTO user_gift_wall_sender (app_code, user_id, gift_id, sender_user_id, sent_count, "
      "sent_coins, first_sent_at_ms, last_sent_at_ms, created_at_ms, updated_at_ms) VALUES ",
      values));
  absl::StatusOr<StandingRead> sponsor = repo_.ReadStanding("demo", 7, std::nullopt, "rose", 1);
  ASSERT_TRUE(sponsor.ok()) << sponsor.status();
  EXPECT_EQ(sponsor->sponsor->sent_count, 5000);
  EXPECT_EQ(sponsor->sent->sent_count, 5000);
  EXPECT_FALSE(sponsor->senders_ahead.has_value()) << "the 冠名 has nobody ahead: not read";
  absl::StatusOr<StandingRead> tenth = repo_.ReadStanding("demo", 7, std::nullopt, "rose", 10);
  ASSERT_TRUE(tenth.ok()) << tenth.status();
  EXPECT_EQ(tenth->sent->sent_count, 4991);
  EXPECT_EQ(tenth->senders_ahead, 9);
  absl::StatusOr<StandingRead> far = repo_.ReadStanding("demo", 7, std::nullopt, "rose", 1050);
  ASSERT_TRUE(far.ok()) << far.status();
  EXPECT_EQ(far->senders_ahead, domain::kExactRankLimit);
  absl::StatusOr<StandingRead> none = repo_.ReadStanding("demo", 7, std::nullopt, "rose", 5000);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_FALSE(none->sent.has_value());
  EXPECT_FALSE(none->senders_ahead.has_value());
  absl::StatusOr<StandingRead> other_gift = repo_.ReadStanding("demo", 7, std::nullopt, "lily", 10);
  ASSERT_TRUE(other_gift.ok()) << other_gift.status();
  EXPECT_FALSE(other_gift->sponsor.has_value());
  EXPECT_FALSE(other_gift->sent.has_value());
}

// A sender hid on a wall if their all-time row of that gift there is anonymous, or they opted
// out (for every gift of every wall of the app, and only that app); opting back in undoes only
// the opt-out.
TEST_F(WallRepositoryTest, Rule18_ASenderHidByAnAnonymousSendOfTheGiftOrByOptingOut) {
  AddSender(7, "rose", 100, 3, 10);
  AddSender(7, "lily", 100, 1, 10);
  AddSender(7, "rose", 200, 2, 10);
  AddSender(8, "rose", 100, 1, 10);  // another wall
  db_.Exec(
      "UPDATE user_gift_wall_sender SET anonymous = 1 WHERE user_id = 7 AND gift_id = 'rose' "
      "AND sender_user_id = 100");
  SenderPrivacyRepository privacy(pool_);
  auto set = [&](const std::string& app, int64_t sender, bool hide, const std::string& by) {
    absl::StatusOr<bool> changed = privacy.Set(app, sender, hide, by);
    if (!changed.ok()) return changed.status().ToString();
    return std::string(*changed ? "changed" : "unchanged");
  };
  const std::vector<domain::ShownSender> shown = {
      {"rose", 100}, {"lily", 100}, {"rose", 200}, {"tulip", 300}, {"rose", 300}};
  auto hidden = [&](int64_t wall) {
    absl::StatusOr<std::vector<bool>> answer = repo_.HiddenSenders("demo", wall, shown);
    EXPECT_TRUE(answer.ok()) << answer.status();
    return answer.ok() ? *answer : std::vector<bool>{};
  };
  EXPECT_THAT(hidden(7), ::testing::ElementsAre(true, false, false, false, false));
  EXPECT_THAT(hidden(8), ::testing::ElementsAre(false, false, false, false, false));
  // A wall read says who of each gift's top and first sender sent it anonymously (opt-outs are
  // the wall reader's: OptOutCache).
  AddGift(7, "rose", 5, 1, 10);
  AddGift(7, "lily", 1, 1, 10);
  db_.Exec(
      "UPDATE user_gift_wall SET top_sender_user_id = 100, first_sender_user_id = 200 "
      "WHERE gift_id = 'rose'");
  db_.Exec(
      "UPDATE user_gift_wall SET top_sender_user_id = 100, first_sender_user_id = 100 "
      "WHERE gift_id = 'lily'");
  const auto flags = [&] {
    std::vector<std::string> out;
    absl::StatusOr<std::map<int64_t, std::vector<domain::WallItem>>> walls =
        repo_.ReadWalls("demo", std::nullopt, {7});
    EXPECT_TRUE(walls.ok()) << walls.status();
    if (!walls.ok()) return out;
    for (const domain::WallItem& item : (*walls)[7]) {
      out.push_back(absl::StrCat(item.gift_id, " top ", item.top_sender_hidden, " first ",
                                 item.first_sender_hidden));
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  EXPECT_THAT(flags(), ::testing::ElementsAre("lily top 0 first 0", "rose top 1 first 0"));

  // An opt-out covers the sender everywhere, even where they sent nothing yet.
  EXPECT_EQ(set("demo", 300, true, "profile"), "changed");
  EXPECT_EQ(set("demo", 300, true, "profile"), "unchanged");
  EXPECT_EQ(set("other", 200, true, "profile"), "changed");
  EXPECT_THAT(hidden(7), ::testing::ElementsAre(true, false, false, true, true));
  EXPECT_EQ(set("demo", 200, true, "profile"), "changed");
  EXPECT_EQ(set("demo", 200, false, "profile"), "changed");
  EXPECT_EQ(set("demo", 100, false, "profile"), "unchanged");
  EXPECT_EQ(set("demo", 300, false, "profile"), "changed");
  EXPECT_THAT(hidden(7), ::testing::ElementsAre(true, false, false, false, false));
  EXPECT_EQ(
      db_.QueryString("SELECT GROUP_CONCAT(CONCAT(app_code, ':', sender_user_id, '=', hidden, "
                      "' by ', updated_by) ORDER BY app_code, sender_user_id) "
                      "FROM giftwall_sender_privacy"),
      "demo:100=0 by profile,demo:200=0 by profile,demo:300=0 by profile,"
      "other:200=1 by profile");
}

// A wall is read by primary key; a gift's senders from their rank index in order, with no
// filesort. The wall has no other index: every one would cost each projection a rewrite.
TEST_F(WallRepositoryTest, EveryReadIsServedByAnIndexAndTheWallHasOnlyItsPrimaryKey) {
  for (int i = 0; i < 200; ++i) {
    AddGift(i % 5, absl::StrCat("g", i), i % 7, i, i % 11, i % 13);
    AddSender(1, "g1", i + 1, i % 7, i % 11);
  }
  db_.Exec("ANALYZE TABLE user_gift_wall, user_gift_wall_sender");
  std::unique_ptr<SqlConnection> conn = db_.Connect();
  auto explain = [&](const std::string& sql, std::initializer_list<SqlParam> params) {
    std::string key, extra;
    absl::Status s = conn->Query(absl::StrCat("EXPLAIN ", sql), params, [&](const SqlRow& row) {
      key += row.Str(5);
      extra += row.Str(9);
    });
    EXPECT_TRUE(s.ok()) << s;
    EXPECT_THAT(extra, ::testing::Not(::testing::HasSubstr("filesort"))) << sql;
    return key;
  };
  // A wall's rows by primary-key range; then its anonymous senders along their index (read from
  // the index alone).
  const auto rows_plan = [&](const RowsSql& query, std::vector<SqlParam> params) {
    std::string plan;
    RowSet users(query.columns());
    users.Row().Int(0, 1).Row().Int(0, 2);
    params.insert(params.begin(), &users);
    const RowsSql explain_rows(query.columns(), absl::StrCat("EXPLAIN ", query.text()));
    EXPECT_TRUE(conn->Query(explain_rows, params,
                            [&](const SqlRow& row) {
                              if (row.Str(2) == "w" || row.Str(2) == "s") {
                                absl::StrAppend(&plan, row.Str(2), ":", row.Str(3), " ", row.Str(5),
                                                " ", row.Str(9), "; ");
                              }
                            })
                    .ok());
    return plan;
  };
  EXPECT_THAT(rows_plan(WallQuery(false), {"demo"}),
              ::testing::MatchesRegex("w:(ref|range) PRIMARY [^;]*; "));
  EXPECT_THAT(rows_plan(WallQuery(true), {"demo", "month", "2026-12"}),
              ::testing::MatchesRegex("w:(ref|range) PRIMARY [^;]*; "));
  EXPECT_THAT(rows_plan(AnonymousSendersQuery(), {"demo"}),
              ::testing::MatchesRegex("s:ref idx_user_gift_wall_sender_anonymous [^;]*; ?Using "
                                      "index; "));
  EXPECT_EQ(explain(std::string(SendersQuery(false, false)), {"demo", 1, "g1", 11}),
            "idx_user_gift_wall_sender_rank");
  EXPECT_EQ(explain(std::string(SendersQuery(false, true)), {"demo", 1, "g1", 3, 3, 5, 11, 2}),
            "idx_user_gift_wall_sender_rank");
  // A period's wall and senders: the same plans on the period tables.

  EXPECT_EQ(
      explain(std::string(SendersQuery(true, false)), {"demo", 1, "month", "2026-12", "g1", 11}),
      "idx_user_gift_wall_period_sender_rank");
  EXPECT_EQ(explain(std::string(SendersQuery(true, true)),
                    {"demo", 1, "month", "2026-12", "g1", 3, 3, 5, 11, 2}),
            "idx_user_gift_wall_period_sender_rank");
  // Who hid: a primary-key read of the sender row and of the opt-out per sender asked about.
  std::string hidden_plan;
  RowSet shown(HiddenSendersQuery().columns());
  shown.Row().Int(0, 0).Bytes(1, "g1").Int(2, 5).Row().Int(0, 1).Bytes(1, "g1").Int(2, 6);
  const RowsSql explain_hidden(HiddenSendersQuery().columns(),
                               absl::StrCat("EXPLAIN ", HiddenSendersQuery().text()));
  ASSERT_TRUE(conn->Query(explain_hidden, {&shown, "demo", 1, "demo"},
                          [&](const SqlRow& row) {
                            if (row.Str(2) == "s" || row.Str(2) == "p") {
                              absl::StrAppend(&hidden_plan, row.Str(2), ":", row.Str(3), " ",
                                              row.Str(5), ";");
                            }
                          })
                  .ok());
  EXPECT_EQ(hidden_plan, "s:eq_ref PRIMARY;p:eq_ref PRIMARY;");
  // The history reads a range of the primary key: the user's rows of the queried periods (the
  // page is then sorted from those, at most retention x wall cap rows). The rank counts along
  // the rank index.
  std::string history_plan;
  ASSERT_TRUE(conn->Query(absl::StrCat("EXPLAIN ", SponsorHistoryQuerySql(true, true)),
                          {"demo", 1, "week", "2026-W01", "2026-W50", "g1", "2026-W40", "2026-W40",
                           "g", 51},
                          [&](const SqlRow& row) {
                            if (row.Str(2) == "user_gift_wall_period") {
                              history_plan = absl::StrCat(row.Str(3), " ", row.Str(5));
                            }
                          })
                  .ok());
  EXPECT_EQ(history_plan, "range PRIMARY");
  EXPECT_EQ(explain(std::string(SendersAheadQuery(false)), {"demo", 1, "g1", 3, 3, 5, 5, 10}),
            "idx_user_gift_wall_sender_rank");
  EXPECT_EQ(explain(std::string(SendersAheadQuery(true)),
                    {"demo", 1, "month", "2026-12", "g1", 3, 3, 5, 5, 10}),
            "idx_user_gift_wall_period_sender_rank");
  EXPECT_EQ(db_.QueryString("SELECT GROUP_CONCAT(DISTINCT index_name) FROM "
                            "information_schema.statistics WHERE table_schema = DATABASE() AND "
                            "table_name = 'user_gift_wall'"),
            "PRIMARY");
}

}  // namespace
}  // namespace giftwall::storage
