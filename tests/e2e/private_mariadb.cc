#include "tests/e2e/private_mariadb.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/e2e/server_process.h"
#include "tests/support/process.h"

namespace giftwall::testing {

PrivateMariaDb::PrivateMariaDb(std::vector<std::string> extra_args)
    : dir_(absl::StrCat(::testing::TempDir(), "/giftwall-private-db-", getpid(), "-",
                        process::FreePort())),
      port_(process::FreePort()),
      extra_args_(std::move(extra_args)) {
  // Its own tmpdir: in a shared /tmp, other tests' clean-ups reach its temporary tables.
  const std::string prepare = absl::StrCat("rm -rf ", dir_, " && mkdir -p ", dir_, ".tmp");
  (void)system(prepare.c_str());
  std::vector<std::string> install = {"/usr/bin/mariadb-install-db",
                                      "--no-defaults",
                                      absl::StrCat("--datadir=", dir_),
                                      absl::StrCat("--tmpdir=", dir_, ".tmp"),
                                      "--auth-root-authentication-method=normal",
                                      "--skip-test-db"};
  if (getuid() == 0) install.push_back("--user=root");
  std::string output;
  EXPECT_EQ(RunCommand(install, &output), 0) << output;
}

PrivateMariaDb::~PrivateMariaDb() {
  Stop();
  const std::string rm = absl::StrCat("rm -rf ", dir_, " ", dir_, ".log ", dir_, ".tmp");
  (void)system(rm.c_str());
}

void PrivateMariaDb::Start() {
  std::vector<std::string> args = {"/usr/sbin/mariadbd",
                                   "--no-defaults",
                                   absl::StrCat("--datadir=", dir_),
                                   absl::StrCat("--tmpdir=", dir_, ".tmp"),
                                   absl::StrCat("--port=", port_),
                                   "--bind-address=127.0.0.1",
                                   absl::StrCat("--socket=", dir_, "/mariadb.sock"),
                                   "--skip-log-bin",
                                   "--innodb-buffer-pool-size=64M",
                                   "--innodb-flush-log-at-trx-commit=2"};
  if (getuid() == 0) args.push_back("--user=root");
  args.insert(args.end(), extra_args_.begin(), extra_args_.end());
  pid_ = process::Spawn(args, absl::StrCat(dir_, ".log"));
  for (int i = 0; i < 300; ++i) {
    std::string output;
    if (RunCommand({"/usr/bin/mariadb", "--no-defaults", "-h127.0.0.1", absl::StrCat("-P", port_),
                    "-uroot", "-e", "SELECT 1"},
                   &output) == 0) {
      return;
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
  ADD_FAILURE() << "private MariaDB did not start: "
                << process::ReadFile(absl::StrCat(dir_, ".log"));
}

void PrivateMariaDb::Freeze() { kill(pid_, SIGSTOP); }

void PrivateMariaDb::Thaw() { kill(pid_, SIGCONT); }

void PrivateMariaDb::Stop() {
  if (pid_ <= 0) return;
  kill(pid_, SIGCONT);  // a frozen server cannot act on SIGTERM
  kill(pid_, SIGTERM);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

std::string PrivateMariaDb::server_url() const {
  return absl::StrCat("mysql://root@127.0.0.1:", port_, "/mysql");
}

void PrivateMariaDb::Exec(const std::string& sql) const {
  std::string output;
  EXPECT_EQ(RunCommand({"/usr/bin/mariadb", "--no-defaults", "-h127.0.0.1",
                        absl::StrCat("-P", port_), "-uroot", "-e", sql},
                       &output),
            0)
      << sql << ": " << output;
}

}  // namespace giftwall::testing
