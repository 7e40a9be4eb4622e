// Whether the database node a session reaches can serve this service, from what the node says of
// itself (DESIGN §6, readiness): on a Galera node its wsrep state, on a Group Replication member
// its member state, on any server whether it takes writes.
#ifndef GIFTWALL_SERVER_DOMAIN_CLUSTER_NODE_H_
#define GIFTWALL_SERVER_DOMAIN_CLUSTER_NODE_H_

#include <cstdint>
#include <optional>
#include <string>

namespace giftwall::domain {

// What a node says, as its status and variables spell it; unset: the node does not say (no
// wsrep provider, no Group Replication).
struct NodeState {
  bool read_only = false;                 // @@read_only (or @@super_read_only): writes are refused
  bool wsrep_on = false;                  // a Galera node
  std::string wsrep_ready;                // "ON" once the node accepts queries
  std::string wsrep_cluster_status;       // "Primary" inside the primary component
  int64_t wsrep_local_state = 0;          // 4 Synced, 2 Donor/Desynced, 1 Joining, 3 Joined
  std::string wsrep_local_state_comment;  // its name, for messages
  bool wsrep_sst_donor_rejects_queries = false;
  std::optional<int64_t> wsrep_local_cert_failures;
  std::string group_member_state;  // Group Replication: "ONLINE", "RECOVERING", ...; "" if none
};

// Empty when the node can serve (read and write), else why not, for the readiness log. A Galera
// node serves when ready, in the primary component, and Synced, or a donor that still answers
// queries; a Group Replication member when ONLINE; any node only if it takes writes.
std::string NodeProblem(const NodeState& node);

}  // namespace giftwall::domain

#endif  // GIFTWALL_SERVER_DOMAIN_CLUSTER_NODE_H_
