#include "server/domain/cluster_node.h"

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace giftwall::domain {
namespace {

using ::testing::HasSubstr;

NodeState Synced() {
  NodeState node;
  node.wsrep_on = true;
  node.wsrep_ready = "ON";
  node.wsrep_cluster_status = "Primary";
  node.wsrep_local_state = 4;
  node.wsrep_local_state_comment = "Synced";
  return node;
}

TEST(NodeProblem, APlainPrimaryAndASyncedGaleraNodeServe) {
  EXPECT_EQ(NodeProblem(NodeState{}), "");
  EXPECT_EQ(NodeProblem(Synced()), "");
}

TEST(NodeProblem, AGaleraNodeServesOnlyReadyInThePrimaryComponentAndSynced) {
  NodeState node = Synced();
  node.wsrep_ready = "OFF";
  EXPECT_THAT(NodeProblem(node), HasSubstr("not ready for queries (wsrep_ready=OFF)"));
  node = Synced();
  node.wsrep_cluster_status = "non-Primary";
  EXPECT_THAT(NodeProblem(node), HasSubstr("outside the primary component"));
  node = Synced();
  node.wsrep_local_state = 1;
  node.wsrep_local_state_comment = "Joining";
  EXPECT_THAT(NodeProblem(node), HasSubstr("is Joining, not Synced"));
  node.wsrep_local_state = 3;
  node.wsrep_local_state_comment = "Joined";
  EXPECT_THAT(NodeProblem(node), HasSubstr("is Joined, not Synced"));
}

TEST(NodeProblem, ADonorServesWhileItAnswersQueries) {
  NodeState node = Synced();
  node.wsrep_local_state = 2;
  node.wsrep_local_state_comment = "Donor/Desynced";
  EXPECT_EQ(NodeProblem(node), "");
  node.wsrep_sst_donor_rejects_queries = true;
  EXPECT_THAT(NodeProblem(node), HasSubstr("Donor/Desynced, not Synced"));
}

TEST(NodeProblem, AGroupReplicationMemberServesOnlyOnline) {
  NodeState node;
  node.group_member_state = "ONLINE";
  EXPECT_EQ(NodeProblem(node), "");
  for (const char* state : {"RECOVERING", "OFFLINE", "ERROR", "UNREACHABLE"}) {
    node.group_member_state = state;
    EXPECT_THAT(NodeProblem(node), HasSubstr(absl::StrCat("member is ", state, ", not ONLINE")));
  }
}

TEST(NodeProblem, ANodeThatTakesNoWritesDoesNotServe) {
  NodeState node;
  node.read_only = true;
  EXPECT_THAT(NodeProblem(node), HasSubstr("read-only"));
  node = Synced();
  node.read_only = true;
  EXPECT_THAT(NodeProblem(node), HasSubstr("read-only"));
  node = NodeState{};
  node.group_member_state = "ONLINE";
  node.read_only = true;  // a secondary of a single-primary group
  EXPECT_THAT(NodeProblem(node), HasSubstr("Group Replication secondary"));
}

}  // namespace
}  // namespace giftwall::domain
