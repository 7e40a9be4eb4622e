#include "server/domain/cluster_node.h"

#include "absl/strings/str_cat.h"

namespace giftwall::domain {
namespace {

constexpr int64_t kDonorDesynced = 2;
constexpr int64_t kSynced = 4;

std::string GaleraProblem(const NodeState& node) {
  if (node.wsrep_ready != "ON") {
    return absl::StrCat("the Galera node is not ready for queries (wsrep_ready=", node.wsrep_ready,
                        ")");
  }
  if (node.wsrep_cluster_status != "Primary") {
    return absl::StrCat("the Galera node is outside the primary component (wsrep_cluster_status=",
                        node.wsrep_cluster_status, ")");
  }
  if (node.wsrep_local_state == kSynced) return "";
  if (node.wsrep_local_state == kDonorDesynced && !node.wsrep_sst_donor_rejects_queries) {
    return "";  // a donor that answers queries serves, behind by what it is sending at most
  }
  return absl::StrCat("the Galera node is ", node.wsrep_local_state_comment,
                      ", not Synced (wsrep_local_state=", node.wsrep_local_state, ")");
}

}  // namespace

std::string NodeProblem(const NodeState& node) {
  if (node.wsrep_on) {
    if (std::string problem = GaleraProblem(node); !problem.empty()) return problem;
  }
  if (!node.group_member_state.empty() && node.group_member_state != "ONLINE") {
    return absl::StrCat("the Group Replication member is ", node.group_member_state,
                        ", not ONLINE");
  }
  if (node.read_only) {
    return "the database is read-only (a replica, a Group Replication secondary or a fenced "
           "node), and this server writes: point --mysql_url at the primary";
  }
  return "";
}

}  // namespace giftwall::domain
