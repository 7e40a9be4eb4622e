// What the database node a session reaches says of itself (domain::NodeState): read by the
// readiness probe on its own session, every probe.
#ifndef GIFTWALL_SERVER_STORAGE_NODE_STATE_H_
#define GIFTWALL_SERVER_STORAGE_NODE_STATE_H_

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "server/domain/cluster_node.h"
#include "server/storage/sql_connection.h"

namespace giftwall::storage {

// Reads the node's state on `conn`; on a Galera node also records its wsrep_local_cert_failures
// for the metrics (LastWsrepCertFailures).
absl::StatusOr<domain::NodeState> ReadNodeState(SqlConnection& conn);

// The wsrep_local_cert_failures a ReadNodeState of this process last read; none if the node is
// not a Galera node, or none was read.
std::optional<int64_t> LastWsrepCertFailures();

}  // namespace giftwall::storage

#endif  // GIFTWALL_SERVER_STORAGE_NODE_STATE_H_
