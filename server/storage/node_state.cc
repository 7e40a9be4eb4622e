#include "server/storage/node_state.h"

#include <atomic>
#include <map>
#include <string>

#include "absl/strings/numbers.h"
#include "server/common/status_macros.h"
#include "server/storage/db_error.h"

namespace giftwall::storage {
namespace {

constexpr absl::string_view kVariables = R"sql(
SHOW GLOBAL VARIABLES WHERE Variable_name IN
  ('read_only', 'super_read_only', 'wsrep_on', 'wsrep_sst_donor_rejects_queries',
   'group_replication_group_name'))sql";

constexpr absl::string_view kWsrepStatus = R"sql(
SHOW GLOBAL STATUS WHERE Variable_name IN
  ('wsrep_ready', 'wsrep_cluster_status', 'wsrep_local_state', 'wsrep_local_state_comment',
   'wsrep_local_cert_failures'))sql";

// MySQL's Group Replication: this member's state (no row: not a member).
constexpr absl::string_view kGroupMemberState = R"sql(
SELECT MEMBER_STATE FROM performance_schema.replication_group_members
WHERE MEMBER_ID = @@server_uuid)sql";

constexpr int kNoSuchTable = 1146;
constexpr int kTableAccessDenied = 1142;

std::atomic<int64_t> cert_failures{-1};  // -1: none read

absl::StatusOr<std::map<std::string, std::string>> NameValues(SqlConnection& conn,
                                                              absl::string_view sql) {
  std::map<std::string, std::string> values;
  RETURN_IF_ERROR(conn.Query(sql, {}, [&](const SqlRow& row) { values[row.Str(0)] = row.Str(1); }));
  return values;
}

bool On(const std::map<std::string, std::string>& values, const std::string& name) {
  auto it = values.find(name);
  return it != values.end() && (it->second == "ON" || it->second == "1");
}

}  // namespace

absl::StatusOr<domain::NodeState> ReadNodeState(SqlConnection& conn) {
  domain::NodeState node;
  ASSIGN_OR_RETURN(const auto variables, NameValues(conn, kVariables));
  node.read_only = On(variables, "read_only") || On(variables, "super_read_only");
  node.wsrep_on = On(variables, "wsrep_on");
  node.wsrep_sst_donor_rejects_queries = On(variables, "wsrep_sst_donor_rejects_queries");
  if (node.wsrep_on) {
    ASSIGN_OR_RETURN(auto status, NameValues(conn, kWsrepStatus));
    node.wsrep_ready = status["wsrep_ready"];
    node.wsrep_cluster_status = status["wsrep_cluster_status"];
    node.wsrep_local_state_comment = status["wsrep_local_state_comment"];
    (void)absl::SimpleAtoi(status["wsrep_local_state"], &node.wsrep_local_state);
    if (int64_t failures = 0; absl::SimpleAtoi(status["wsrep_local_cert_failures"], &failures)) {
      node.wsrep_local_cert_failures = failures;
    }
  }
  cert_failures = node.wsrep_local_cert_failures.value_or(-1);
  // A member of a group (the plugin may be installed on a server that is in none): its state,
  // where performance_schema lets this user read it.
  if (auto group = variables.find("group_replication_group_name");
      group != variables.end() && !group->second.empty()) {
    absl::Status s = conn.Query(kGroupMemberState, {},
                                [&](const SqlRow& row) { node.group_member_state = row.Str(0); });
    if (!s.ok() && MysqlErrno(s) != kNoSuchTable && MysqlErrno(s) != kTableAccessDenied) {
      return s;
    }
  }
  return node;
}

std::optional<int64_t> LastWsrepCertFailures() {
  const int64_t failures = cert_failures.load();
  if (failures < 0) return std::nullopt;
  return failures;
}

}  // namespace giftwall::storage
