// The configuration, in-process: every flag's validation names the flag, and Describe prints
// every setting the server has a flag for.
#include "server/server_config.h"

#include <string>
#include <vector>

#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace giftwall {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

class ServerConfigTest : public ::testing::Test {
 protected:
  ServerConfigTest() {
    Set("mysql_url", "mysql://giftwall@127.0.0.1:3306/giftwall");
    Set("plaintext", "true");
    Set("worker_id", "test-pod");
  }
  static void Set(const std::string& flag, const std::string& value) {
    absl::CommandLineFlag* f = absl::FindCommandLineFlag(flag);
    ASSERT_NE(f, nullptr) << "no flag --" << flag;
    std::string error;
    ASSERT_TRUE(f->ParseFrom(value, &error)) << "--" << flag << "=" << value << ": " << error;
  }

  absl::FlagSaver saver_;  // every test's flags are put back
};

TEST_F(ServerConfigTest, TheDefaultsMakeAServerThatCanServe) {
  absl::StatusOr<ServerConfig> config = ServerConfigFromFlags();
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(CheckCanServe(*config).ok());
  EXPECT_EQ(config->worker_id, "test-pod");
}

TEST_F(ServerConfigTest, DescribeNamesEveryFlagOfTheServer) {
  absl::StatusOr<ServerConfig> config = ServerConfigFromFlags();
  ASSERT_TRUE(config.ok()) << config.status();
  const std::string line = " " + Describe(*config);
  int flags = 0;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (!absl::EndsWith(flag->Filename(), "server/server_config.cc")) continue;
    ++flags;
    EXPECT_THAT(line, HasSubstr(absl::StrCat(" ", name, "="))) << "Describe leaves out --" << name;
  }
  EXPECT_GT(flags, 40) << "the server's flags were not found";
  EXPECT_THAT(line, HasSubstr(" mysql_url=mysql://giftwall@127.0.0.1:3306/giftwall "));
}

TEST_F(ServerConfigTest, DescribePrintsNoSecret) {
  Set("mysql_url", "mysql://giftwall:hunter2@127.0.0.1:3306/giftwall");
  absl::StatusOr<ServerConfig> config = ServerConfigFromFlags();
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->pool.endpoint.password, "hunter2");
  EXPECT_THAT(Describe(*config), ::testing::Not(HasSubstr("hunter2")));
}

struct BadFlag {
  std::string flag;
  std::string value;
  std::string says;  // in the error, after "--flag: "
};

TEST_F(ServerConfigTest, EveryBadValueIsRefusedNamingItsFlag) {
  const std::vector<BadFlag> cases = {
      {"listen", "no-port", ""},
      {"mysql_url", "", ""},
      {"mysql_url", "postgres://x@y/z", ""},
      {"mysql_password_file", "/nonexistent/secret", ""},
      {"mysql_read_url", "nope", ""},
      {"db_pool_size", "0", "must be > 0"},
      {"db_background_pool_size", "0", "must be > 0"},
      {"db_acquire_timeout", "0s", ""},
      {"db_connect_timeout", "0s", ""},
      {"db_statement_timeout", "0s", ""},
      {"lock_wait_timeout", "20s", ""},
      {"worker_id", std::string(200, 'w'), "at most 128 bytes"},
      {"workers", "0", "must be > 0"},
      {"queue_capacity", "0", "must be > 0"},
      {"max_retries", "0", "must be > 0"},
      {"max_wall_gifts", "0", "must be > 0"},
      {"period_retention", "year=3", "year"},
      {"period_retention", "month=-1", "month"},
      {"max_concurrent_rebuilds", "0", "must be > 0"},
      {"group_max_events", "0", "must be > 0"},
      {"group_by", "user_id", "must be none or app_code"},
      {"sql_rows", "VALUES", "must be auto, json_table or values"},
      {"projection_lanes", "0", "must be > 0"},
      {"read_lanes", "0", "must be > 0"},
      {"projection_lanes", "64", "must stay below"},
      {"drain_delay", "-1s", "must be >= 0"},
      {"shutdown_grace", "-1s", "must be >= 0"},
      {"catchup_interval", "-1s", "must be >= 0"},
      {"catchup_min_age", "-1s", "must be >= 0"},
      {"catchup_safety_margin", "-1s", "must be >= 0"},
      {"catchup_full_sweep", "0s", ""},
      {"catchup_batch", "101", "must be in 1..100"},
      {"catchup_app_codes", "not a code!", ""},
      {"catchup_status_every", "0s", ""},
      {"keepalive_time", "0s", ""},
      {"keepalive_timeout", "0s", ""},
      {"max_connection_age", "-1s", "must be >= 0"},
      {"max_connection_age_grace", "0s", ""},
      {"metrics_listen", "nope", "is not host:port"},
      {"tls_client_auth", "sometimes", ""},
      {"payload_source", "carrier-pigeon", ""},
  };
  for (const BadFlag& c : cases) {
    absl::FlagSaver one;
    Set(c.flag, c.value);
    absl::StatusOr<ServerConfig> config = ServerConfigFromFlags();
    ASSERT_FALSE(config.ok()) << "--" << c.flag << "=" << c.value << " was accepted";
    EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument) << c.flag;
    EXPECT_THAT(std::string(config.status().message()), StartsWith("--" + c.flag + ": "))
        << "--" << c.flag << "=" << c.value;
    EXPECT_THAT(std::string(config.status().message()), HasSubstr(c.says)) << c.flag;
  }
}

TEST_F(ServerConfigTest, TheBackgroundPoolHoldsWhatRunsOnIt) {
  Set("enable_admin", "true");
  Set("max_concurrent_rebuilds", "3");
  Set("db_background_pool_size", "10");
  absl::StatusOr<ServerConfig> config = ServerConfigFromFlags();
  ASSERT_TRUE(config.ok()) << config.status();
  // Admin threads, a worker per rebuild (its lease has a session apart), the scan's reads, the
  // projection lane, the heartbeat.
  EXPECT_EQ(BackgroundSessionsNeeded(*config),
            kAdminThreads + 3 + 1 + kBackgroundProjectionLanes + 1);
  Set("db_background_pool_size", absl::StrCat(BackgroundSessionsNeeded(*config) - 1));
  absl::StatusOr<ServerConfig> small = ServerConfigFromFlags();
  ASSERT_FALSE(small.ok());
  EXPECT_THAT(std::string(small.status().message()),
              StartsWith(absl::StrCat("--db_background_pool_size: must be at least ",
                                      BackgroundSessionsNeeded(*config))));
  Set("enable_admin", "false");
  Set("catchup_interval", "0s");
  config = ServerConfigFromFlags();
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(BackgroundSessionsNeeded(*config), 1) << "only the heartbeat runs in the background";
}

}  // namespace
}  // namespace giftwall
