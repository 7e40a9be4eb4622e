// DESIGN §2.10: the wall is a function of the set of events. The same 300 events, delivered in
// five random orders with duplicates, in random groups (single calls, batches, several callers'
// calls gathered into one transaction), into five fresh databases, give identical wall and sender
// rows, and the walls, sender lists and summaries a reader sees equal a fold computed here
// independently from the raw events.
#include <algorithm>
#include <map>
#include <random>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "server/domain/sponsor.h"
#include "server/projection/group_projector.h"
#include "server/storage/wall_repository.h"
#include "tests/support/test_database.h"
#include "tests/support/test_projection.h"

namespace giftwall::projection {
namespace {

using domain::GiftEvent;
using domain::ProjectedBy;
using domain::SenderStats;
using domain::WallCursor;
using domain::WallItem;
using domain::WallPage;
using domain::WallSummary;
using storage::ConnectionPool;
using storage::SenderCursor;
using storage::SenderPage;
using storage::WallRepository;

constexpr int64_t kT0 = 1'700'000'000'000;

struct RawEvent {
  std::string id;
  int64_t user, sender, count, coins, at;
  std::string gift, name, icon;
};

std::vector<RawEvent> MakeEvents() {
  std::mt19937 rng(2026);
  auto pick = [&](int n) { return static_cast<int64_t>(rng() % static_cast<unsigned>(n)); };
  std::vector<RawEvent> events;
  for (int i = 0; i < 300; ++i) {
    RawEvent e;
    e.id = absl::StrFormat("ev-%03d", i);
    e.user = 1 + pick(4);
    e.gift = absl::StrCat("gift-", pick(6));
    e.sender = pick(5) == 0 ? 0 : 100 + pick(6);  // some events have no sender
    e.count = 1 + pick(3);
    e.coins = 10 * pick(20);
    e.at = kT0 + 1000 * pick(40);  // coarse times: many ties, decided by event id
    if (pick(3) == 0) e.name = absl::StrCat("Name of ", e.id);
    if (pick(3) == 0) e.icon = absl::StrCat(e.id, ".png");
    events.push_back(std::move(e));
  }
  return events;
}

std::string Payload(const RawEvent& e) {
  std::string json =
      absl::StrFormat(R"({"target_user_id":%d,"gift_id":"%s","gift_count":%d,"coin_amount":%d)",
                      e.user, e.gift, e.count, e.coins);
  if (e.sender != 0) absl::StrAppendFormat(&json, R"(,"sender_user_id":%d)", e.sender);
  if (!e.name.empty()) absl::StrAppendFormat(&json, R"(,"gift_name":"%s")", e.name);
  if (!e.icon.empty()) absl::StrAppendFormat(&json, R"(,"gift_icon":"%s")", e.icon);
  return json + "}";
}

// What a reader sees of one wall: every item, every gift's senders, the summary.
struct WallView {
  std::vector<std::string> items;
  std::vector<std::string> senders;
  std::string summary;
  bool operator==(const WallView& o) const {
    return items == o.items && senders == o.senders && summary == o.summary;
  }
};

std::string Describe(const SenderStats& s) {
  return absl::StrFormat("sender=%d count=%d coins=%d first=%d last=%d", s.user_id, s.sent_count,
                         s.sent_coins, s.first_sent_at_ms, s.last_sent_at_ms);
}

std::string Describe(const WallItem& w) {
  return absl::StrFormat(
      "%s count=%d coins=%d first=%d last=%d name=%s icon=%s senders=%d top={%s} first_sender=%d",
      w.gift_id, w.gift_count, w.total_coins, w.first_received_at_ms, w.last_received_at_ms,
      w.gift_name, w.gift_icon, w.sender_count, w.top_sender ? Describe(*w.top_sender) : "none",
      w.first_sender_user_id);
}

// The fold, computed from the raw events without the database.
std::map<int64_t, WallView> ExpectedWalls(const std::vector<RawEvent>& events) {
  struct Gift {
    WallItem item;
    std::map<int64_t, SenderStats> senders;
    std::pair<int64_t, std::string> name_key{-1, ""}, icon_key{-1, ""}, first_sender_key{-1, ""};
  };
  std::map<int64_t, std::map<std::string, Gift>> walls;
  for (const RawEvent& e : events) {
    Gift& g = walls[e.user][e.gift];
    WallItem& w = g.item;
    const bool fresh = w.gift_count == 0;
    w.gift_id = e.gift;
    w.gift_count += e.count;
    w.total_coins += e.coins;
    w.first_received_at_ms = fresh ? e.at : std::min(w.first_received_at_ms, e.at);
    w.last_received_at_ms = std::max(w.last_received_at_ms, e.at);
    const std::pair<int64_t, std::string> key{e.at, e.id};
    if (!e.name.empty() && key > g.name_key) g.name_key = key, w.gift_name = e.name;
    if (!e.icon.empty() && key > g.icon_key) g.icon_key = key, w.gift_icon = e.icon;
    if (e.sender == 0) continue;
    if (g.first_sender_key.first < 0 || key < g.first_sender_key) {
      g.first_sender_key = key;
      w.first_sender_user_id = e.sender;
    }
    SenderStats& s = g.senders[e.sender];
    const bool new_sender = s.sent_count == 0;
    s.user_id = e.sender;
    s.sent_count += e.count;
    s.sent_coins += e.coins;
    s.first_sent_at_ms = new_sender ? e.at : std::min(s.first_sent_at_ms, e.at);
    s.last_sent_at_ms = std::max(s.last_sent_at_ms, e.at);
  }
  std::map<int64_t, WallView> views;
  for (auto& [user, gifts] : walls) {
    WallView& view = views[user];
    std::vector<Gift*> ordered;
    int64_t total = 0, coins = 0, last = 0;
    for (auto& [id, g] : gifts) {
      std::vector<SenderStats> ranked;
      for (auto& [sender, stats] : g.senders) ranked.push_back(stats);
      std::sort(ranked.begin(), ranked.end(), [](const SenderStats& a, const SenderStats& b) {
        return std::make_tuple(-a.sent_count, a.last_sent_at_ms, a.user_id) <
               std::make_tuple(-b.sent_count, b.last_sent_at_ms, b.user_id);
      });
      g.item.sender_count = static_cast<int64_t>(ranked.size());
      if (!ranked.empty()) g.item.top_sender = ranked.front();
      for (const SenderStats& s : ranked) view.senders.push_back(id + ": " + Describe(s));
      ordered.push_back(&g);
      total += g.item.gift_count;
      coins += g.item.total_coins;
      last = std::max(last, g.item.last_received_at_ms);
    }
    std::sort(ordered.begin(), ordered.end(), [](const Gift* a, const Gift* b) {
      return std::make_tuple(-a->item.gift_count, a->item.gift_id) <
             std::make_tuple(-b->item.gift_count, b->item.gift_id);
    });
    for (const Gift* g : ordered) view.items.push_back(Describe(g->item));
    view.summary =
        absl::StrFormat("gifts=%d count=%d coins=%d last=%d", gifts.size(), total, coins, last);
  }
  return views;
}

// What the database holds, read the way GetGiftWall and ListGiftWallSenders read it.
std::map<int64_t, WallView> ReadWalls(WallRepository& repo) {
  std::map<int64_t, WallView> views;
  for (int64_t user = 1; user <= 4; ++user) {
    WallView& view = views[user];
    absl::StatusOr<std::map<int64_t, std::vector<WallItem>>> walls =
        repo.ReadWalls("demo", std::nullopt, {user});
    EXPECT_TRUE(walls.ok()) << walls.status();
    if (!walls.ok()) return views;
    const domain::WallSnapshot wall =
        domain::SnapshotWall((*walls)[user], {domain::WallSort::kCountDesc});
    std::optional<WallCursor> after;
    std::vector<WallItem> items;
    for (;;) {
      WallPage page = domain::PageWall(wall, domain::WallSort::kCountDesc, after, 4);
      for (const WallItem* item : page.items) items.push_back(*item);
      if (!page.has_more) break;
      after = WallCursor{page.items.back()->gift_count, page.items.back()->gift_id};
    }
    std::vector<std::string> gift_ids;
    for (const WallItem& item : items) {
      view.items.push_back(Describe(item));
      gift_ids.push_back(item.gift_id);
    }
    std::sort(gift_ids.begin(), gift_ids.end());
    for (const std::string& gift : gift_ids) {
      std::optional<SenderCursor> cursor;
      for (;;) {
        absl::StatusOr<SenderPage> page =
            repo.ListSenders("demo", user, std::nullopt, gift, cursor, 2);
        EXPECT_TRUE(page.ok()) << page.status();
        if (!page.ok()) return views;
        for (const SenderStats& s : page->senders)
          view.senders.push_back(gift + ": " + Describe(s));
        if (!page->has_more) break;
        cursor = domain::SenderCursorAfter(cursor, page->senders);
      }
    }
    const WallSummary& s = wall.summary;
    view.summary = absl::StrFormat("gifts=%d count=%d coins=%d last=%d", s.distinct_gifts,
                                   s.total_gift_count, s.total_coins, s.last_received_at_ms);
  }
  return views;
}

// Every column of every wall and sender row but the row's own timestamps, as text.
std::string DumpRows(testing::TestDatabase& db) {
  std::string rows;
  for (const char* sql :
       {"SELECT GROUP_CONCAT(CONCAT_WS('|', user_id, gift_id, gift_count, total_coins, "
        "first_received_at_ms, last_received_at_ms, gift_name, gift_name_at_ms, "
        "gift_name_event_id, gift_icon, gift_icon_at_ms, gift_icon_event_id, sender_count, "
        "top_sender_user_id, top_sender_count, top_sender_coins, top_sender_first_sent_at_ms, "
        "top_sender_last_sent_at_ms, first_sender_user_id, first_sender_at_ms, "
        "first_sender_event_id) ORDER BY user_id, gift_id SEPARATOR '\\n') FROM user_gift_wall",
        "SELECT GROUP_CONCAT(CONCAT_WS('|', user_id, gift_id, sender_user_id, sent_count, "
        "sent_coins, first_sent_at_ms, last_sent_at_ms) ORDER BY user_id, gift_id, sender_user_id "
        "SEPARATOR '\\n') FROM user_gift_wall_sender"}) {
    absl::StrAppend(&rows, db.QueryString(sql), "\n--\n");
  }
  return rows;
}

// Delivers `deliveries` in random groups: each group is one transaction of several units, each
// unit a single event or a small batch, as the engine gathers concurrent callers' calls.
void DeliverInRandomGroups(GroupProjector& projector, const std::vector<GiftEvent>& deliveries,
                           std::mt19937& rng) {
  size_t i = 0;
  while (i < deliveries.size()) {
    std::vector<ProjectionUnit> group;
    const size_t group_size = std::min<size_t>(1 + rng() % 40, deliveries.size() - i);
    for (const size_t end = i + group_size; i < end;) {
      const size_t unit_size = rng() % 4 == 0 ? std::min<size_t>(1 + rng() % 5, end - i) : 1;
      ProjectionUnit unit;
      unit.by = rng() % 3 == 0 ? ProjectedBy::kScan : ProjectedBy::kRelay;
      unit.events.assign(deliveries.begin() + static_cast<std::ptrdiff_t>(i),
                         deliveries.begin() + static_cast<std::ptrdiff_t>(i + unit_size));
      group.push_back(std::move(unit));
      i += unit_size;
    }
    for (const UnitResult& r : projector.ProjectGroup(group)) ASSERT_TRUE(r.ok()) << r.status();
  }
}

TEST(ProjectionOrder, Rule10_AnyDeliveryOrderAndAnyGroupingGiveTheSameWalls) {
  const std::vector<RawEvent> raw = MakeEvents();
  const std::map<int64_t, WallView> expected = ExpectedWalls(raw);
  ASSERT_EQ(expected.size(), 4u);
  std::string first_rows;
  for (unsigned order = 0; order < 5; ++order) {
    SCOPED_TRACE(absl::StrCat("delivery order ", order));
    testing::TestDatabase db;
    ConnectionPool pool(db.PoolOptions(4));
    GroupProjector projector(pool, testing::FastRetry());
    WallRepository walls(pool);

    // Every event once, a fifth of them twice, shuffled.
    std::mt19937 rng(order);
    std::vector<GiftEvent> deliveries;
    for (const RawEvent& e : raw) {
      deliveries.push_back(GiftEvent{"demo", e.id, Payload(e), e.at});
      if (rng() % 5 == 0) deliveries.push_back(deliveries.back());
    }
    std::shuffle(deliveries.begin(), deliveries.end(), rng);
    if (order == 0) {
      // One by one, as a relay without batching delivers them.
      for (const GiftEvent& e : deliveries) {
        absl::StatusOr<domain::ProjectionResult> r = projector.Project(e, ProjectedBy::kRelay);
        ASSERT_TRUE(r.ok()) << r.status();
      }
    } else {
      DeliverInRandomGroups(projector, deliveries, rng);
    }
    EXPECT_EQ(db.QueryInt("SELECT COUNT(*) FROM wallet_projection_events WHERE status = 'done'"),
              static_cast<int64_t>(raw.size()));
    const std::map<int64_t, WallView> actual = ReadWalls(walls);
    for (const auto& [user, view] : expected) {
      SCOPED_TRACE(absl::StrCat("user ", user));
      EXPECT_EQ(actual.at(user).items, view.items);
      EXPECT_EQ(actual.at(user).senders, view.senders);
      EXPECT_EQ(actual.at(user).summary, view.summary);
    }
    const std::string rows = DumpRows(db);
    if (order == 0) {
      first_rows = rows;
    } else {
      EXPECT_EQ(rows, first_rows) << "the rows differ from those of one-by-one delivery";
    }
  }
}

}  // namespace
}  // namespace giftwall::projection
