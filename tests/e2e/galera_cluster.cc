#include "tests/e2e/galera_cluster.h"

#include <unistd.h>

#include <cstdlib>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/e2e/server_process.h"
#include "tests/support/process.h"

namespace giftwall::testing {

GaleraCluster::GaleraCluster()
    : dir_(absl::StrCat(::testing::TempDir(), "/giftwall-galera-", getpid())),
      // Node n uses base+n and base+10n..base+10n+2: 33 ports from a free one, in a range the
      // kernel does not hand out for outgoing connections.
      base_(20000 + process::FreePort() % 10000) {
  const std::string rm = absl::StrCat("rm -rf ", dir_);
  (void)system(rm.c_str());
}

GaleraCluster::~GaleraCluster() {
  std::string output;
  (void)RunCommand({GIFTWALL_GALERA_SCRIPT, "stop", dir_}, &output);
  const std::string rm = absl::StrCat("rm -rf ", dir_);
  (void)system(rm.c_str());
}

bool GaleraCluster::Start() {
  std::string output;
  const int rc = RunCommand({GIFTWALL_GALERA_SCRIPT, "start", dir_, absl::StrCat(base_)}, &output);
  EXPECT_EQ(rc, 0) << output;
  return rc == 0;
}

bool GaleraCluster::Run(const std::string& verb, int n) const {
  std::string output;
  const int rc = RunCommand({GIFTWALL_GALERA_SCRIPT, verb, dir_, absl::StrCat(n)}, &output);
  EXPECT_EQ(rc, 0) << verb << " " << n << ": " << output;
  return rc == 0;
}

void GaleraCluster::Kill(int n) { Run("kill", n); }

bool GaleraCluster::Rejoin(int n) { return Run("rejoin", n); }

void GaleraCluster::Isolate(int n) {
  Query(n, "SET GLOBAL wsrep_provider_options = 'gmcast.isolate=1'");
}

bool GaleraCluster::Unisolate(int n) {
  Query(n, "SET GLOBAL wsrep_provider_options = 'gmcast.isolate=0'");
  for (int i = 0; i < 600; ++i) {
    if (Query(n, "SHOW STATUS LIKE 'wsrep_local_state_comment'") == "Synced") return true;
    absl::SleepFor(absl::Milliseconds(100));
  }
  ADD_FAILURE() << "node " << n << " did not rejoin the cluster";
  return false;
}

std::string GaleraCluster::url(int n, const std::string& database) const {
  return absl::StrCat("mysql://root@127.0.0.1:", port(n), "/", database);
}

std::string GaleraCluster::Query(int n, const std::string& sql) const {
  std::string output;
  // SHOW and SET run anywhere; anything else waits for the writes the cluster committed.
  const bool plain = absl::StartsWith(sql, "SHOW") || absl::StartsWith(sql, "SET");
  const int rc = RunCommand(
      {"/usr/bin/mariadb", "--no-defaults", "-h127.0.0.1", absl::StrCat("-P", port(n)), "-uroot",
       "-N", "-e", plain ? sql : absl::StrCat("SET SESSION wsrep_sync_wait = 1; ", sql)},
      &output);
  EXPECT_EQ(rc, 0) << "node " << n << ": " << sql << ": " << output;
  // SHOW prints name and value: the value; a query prints its first column.
  std::vector<std::string> fields =
      absl::StrSplit(absl::StripTrailingAsciiWhitespace(output).substr(0, output.find('\n')), '\t');
  if (absl::StartsWith(sql, "SHOW") && fields.size() > 1) return fields[1];
  return fields.empty() ? "" : fields[0];
}

}  // namespace giftwall::testing
