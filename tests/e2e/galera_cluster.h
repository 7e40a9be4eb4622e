// A 3-node MariaDB Galera cluster on loopback for one test binary (scripts/lib/galera.sh), in a
// directory of its own, removed when destroyed.
#ifndef GIFTWALL_TESTS_E2E_GALERA_CLUSTER_H_
#define GIFTWALL_TESTS_E2E_GALERA_CLUSTER_H_

#include <cstdint>
#include <string>

namespace giftwall::testing {

class GaleraCluster {
 public:
  GaleraCluster();
  ~GaleraCluster();
  GaleraCluster(const GaleraCluster&) = delete;
  GaleraCluster& operator=(const GaleraCluster&) = delete;

  // Installs and starts the three nodes; fails the test (and returns false) unless all are
  // Synced.
  bool Start();
  // SIGKILL node n (1..3); Rejoin starts it again and waits until it is Synced.
  void Kill(int n);
  bool Rejoin(int n);
  // Cuts node n from the others (gmcast.isolate), or joins it back and waits until it is Synced.
  void Isolate(int n);
  bool Unisolate(int n);

  int port(int n) const { return base_ + n; }
  // mysql://root@127.0.0.1:PORT/database, of node n.
  std::string url(int n, const std::string& database) const;
  // Runs `sql` on node n as root (after the node has applied every write the cluster committed
  // before, wsrep_sync_wait); the output's first column of the first row.
  std::string Query(int n, const std::string& sql) const;

 private:
  bool Run(const std::string& verb, int n) const;

  std::string dir_;
  int base_;
};

}  // namespace giftwall::testing

#endif  // GIFTWALL_TESTS_E2E_GALERA_CLUSTER_H_
