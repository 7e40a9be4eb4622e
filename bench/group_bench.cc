// What a projection group costs the database, statement by statement, by group size: the
// database server's CPU (from /proc) around each of a group's statements, as the projector runs
// them (the path of new events: insert the ledger rows, merge senders, merge walls, commit), on
// events spread like load_bench's project mode. With --sort_indexes it first re-creates the four
// wall indexes that migration 0004 dropped, to show what they cost every merge. With --periods
// each event is also folded into those periods (DESIGN §2.15), as for an app keeping them: what
// the period rows cost the database.
//   group_bench --mysql_url=mysql://root@127.0.0.1:3306/db --db_pid=1234 --sizes=1,16,100
//   group_bench ... --periods=week:2023-W46,month:2023-11
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "server/domain/wall_fold.h"
#include "server/storage/mysql_url.h"
#include "server/storage/projection_store.h"
#include "server/storage/sql_connection.h"
#include "tests/support/process.h"

ABSL_FLAG(std::string, mysql_url, "", "a migrated database (its rows of app code 'groupbench')");
ABSL_FLAG(int, db_pid, 0, "the database server's process id, whose CPU is measured");
ABSL_FLAG(std::string, sizes, "1,16,100", "group sizes (events), comma-separated");
ABSL_FLAG(std::string, sql_rows, "auto",
          "how the statements read their rows: auto, json_table or values (--sql_rows)");
ABSL_FLAG(int, events, 12000, "events per group size (at least 300 groups)");
ABSL_FLAG(bool, sort_indexes, false,
          "re-create the wall's four sort indexes (dropped by migration 0004) for the run");
ABSL_FLAG(
    std::string, periods, "",
    "periods each event is also folded into, comma-separated (\"week:2023-W46,month:2023-11\"; "
    "the events occur in November 2023): the rows an app keeping those kinds writes");

namespace {

using giftwall::domain::FoldEvent;
using giftwall::storage::ProjectionStore;
using giftwall::storage::SqlConnection;

constexpr char kApp[] = "groupbench";
// begin, insert ledger, merge senders, merge walls, commit.
constexpr int kKinds = 5;

// The database server's CPU time so far, in milliseconds (utime + stime, in clock ticks).
int64_t DbCpuMs(int pid) { return static_cast<int64_t>(giftwall::process::CpuSeconds(pid) * 1000); }

void Check(const absl::Status& s, absl::string_view what) {
  if (s.ok()) return;
  std::cerr << what << ": " << s << "\n";
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  giftwall::storage::InitMysqlDriver();
  absl::StatusOr<giftwall::storage::MysqlEndpoint> endpoint =
      giftwall::storage::ParseMysqlUrl(absl::GetFlag(FLAGS_mysql_url));
  Check(endpoint.status(), "--mysql_url");
  const int pid = absl::GetFlag(FLAGS_db_pid);
  if (pid <= 0) Check(absl::InvalidArgumentError("--db_pid is required"), "--db_pid");
  giftwall::storage::SessionOptions session;
  if (!giftwall::storage::ParseRowsPath(absl::GetFlag(FLAGS_sql_rows), &session.rows_path)) {
    Check(absl::InvalidArgumentError("must be auto, json_table or values"), "--sql_rows");
  }
  absl::StatusOr<std::unique_ptr<SqlConnection>> conn = SqlConnection::Open(*endpoint, session);
  Check(conn.status(), "connect");
  SqlConnection& db = **conn;
  const bool sort_indexes = absl::GetFlag(FLAGS_sort_indexes);
  if (sort_indexes) {
    Check(db.ExecuteDirect(
              "ALTER TABLE user_gift_wall "
              "ADD INDEX idx_user_gift_wall_count (app_code, user_id, gift_count DESC, gift_id), "
              "ADD INDEX idx_user_gift_wall_last_received "
              "(app_code, user_id, last_received_at_ms DESC, gift_id), "
              "ADD INDEX idx_user_gift_wall_coins (app_code, user_id, total_coins DESC, gift_id), "
              "ADD INDEX idx_user_gift_wall_first_received "
              "(app_code, user_id, first_received_at_ms, gift_id)"),
          "adding the sort indexes");
  }
  ProjectionStore store(db);
  std::mt19937_64 rng(std::random_device{}());
  const int64_t run = static_cast<int64_t>(rng() % 1'000'000'000);

  const std::vector<std::string> periods =
      absl::StrSplit(absl::GetFlag(FLAGS_periods), ',', absl::SkipEmpty());
  std::string kinds;
  for (const std::string& period : periods) {
    absl::StrAppend(&kinds, kinds.empty() ? "" : " + ", period.substr(0, period.find(':')));
  }
  std::cout
      << "| wall sort indexes | period rows | group size | "
      << "begin | insert ledger | merge senders | merge walls | commit | a group | an event |\n"
      << "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (absl::string_view size_text : absl::StrSplit(absl::GetFlag(FLAGS_sizes), ',')) {
    int size = 0;
    if (!absl::SimpleAtoi(size_text, &size) || size <= 0) {
      Check(absl::InvalidArgumentError(absl::StrCat("not a size: ", size_text)), "--sizes");
    }
    // At least 300 groups of any size: the CPU figures come in 10 ms ticks.
    const int groups = std::max(300, absl::GetFlag(FLAGS_events) / size);
    int64_t cpu[kKinds] = {};
    for (int g = 0; g < groups; ++g) {
      std::vector<giftwall::storage::LedgerWrite> ledger;
      std::vector<FoldEvent> events;
      for (int i = 0; i < size; ++i) {
        FoldEvent e;
        e.event_id = absl::StrCat("gb-", run, "-", size, "-", g, "-", i);
        e.occurred_at_ms = 1'700'000'000'000 + g;
        e.gift.target_user_id = 1 + static_cast<int64_t>(rng() % 1000);
        e.gift.gift_id = absl::StrCat("gift-", rng() % 20);
        e.gift.gift_count = 1 + static_cast<int64_t>(rng() % 5);
        e.gift.sender_user_id = 100'000 + static_cast<int64_t>(rng() % 5000);
        e.gift.coin_amount = 100;
        e.periods = periods;
        giftwall::storage::LedgerWrite w;
        w.event_id = e.event_id;
        w.target_user_id = e.gift.target_user_id;
        ledger.push_back(std::move(w));
        events.push_back(std::move(e));
      }
      absl::StatusOr<giftwall::domain::WallDeltas> deltas = giftwall::domain::FoldDeltas(events);
      Check(deltas.status(), "fold");
      int64_t t = DbCpuMs(pid);
      auto lap = [&](int kind) {
        const int64_t now = DbCpuMs(pid);
        cpu[kind] += now - t;
        t = now;
      };
      Check(db.ExecuteDirect("START TRANSACTION"), "begin");
      lap(0);
      Check(store.InsertLedger(kApp, ledger).status(), "insert ledger");
      lap(1);
      absl::StatusOr<giftwall::storage::MergedSenders> merged = store.MergeSenders(kApp, *deltas);
      Check(merged.status(), "merge senders");
      lap(2);
      std::map<giftwall::domain::WallKey, giftwall::domain::SenderMerge> senders;
      for (const auto& [key, delta] : *deltas) {
        senders[key] = giftwall::domain::DescribeSenderMerge(delta, merged->at(key));
      }
      Check(store.MergeWalls(kApp, *deltas, senders).status(), "merge walls");
      lap(3);
      Check(db.ExecuteDirect("COMMIT"), "commit");
      lap(4);
    }
    int64_t total = 0;
    std::cout << "| " << (sort_indexes ? "4 (re-created)" : "none") << " | "
              << (kinds.empty() ? "none" : kinds) << " | " << size;
    for (int k = 0; k < kKinds; ++k) {
      total += cpu[k];
      std::cout << absl::StrFormat(" | %.0f", 1000.0 * static_cast<double>(cpu[k]) / groups);
    }
    std::cout << absl::StrFormat(" | %.0f | %.0f |\n", 1000.0 * static_cast<double>(total) / groups,
                                 1000.0 * static_cast<double>(total) / groups / size);
  }
  if (sort_indexes) {
    Check(db.ExecuteDirect("ALTER TABLE user_gift_wall DROP INDEX idx_user_gift_wall_count, "
                           "DROP INDEX idx_user_gift_wall_last_received, "
                           "DROP INDEX idx_user_gift_wall_coins, "
                           "DROP INDEX idx_user_gift_wall_first_received"),
          "dropping the sort indexes");
  }
  return 0;
}
