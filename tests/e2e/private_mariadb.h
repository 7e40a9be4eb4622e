// A MariaDB of one test's own, in a directory of its own, touching no system service: a test
// that must stop, freeze or configure its database starts one.
#ifndef GIFTWALL_TESTS_E2E_PRIVATE_MARIADB_H_
#define GIFTWALL_TESTS_E2E_PRIVATE_MARIADB_H_

#include <sys/types.h>

#include <string>
#include <vector>

namespace giftwall::testing {

class PrivateMariaDb {
 public:
  // Installs an empty instance (root without a password). `extra_args` go to mariadbd after its
  // defaults, so that a later flag wins (e.g. --bind-address, --ssl-cert).
  explicit PrivateMariaDb(std::vector<std::string> extra_args = {});
  ~PrivateMariaDb();
  PrivateMariaDb(const PrivateMariaDb&) = delete;
  PrivateMariaDb& operator=(const PrivateMariaDb&) = delete;

  // Starts the server and waits until root can run a query over TCP; fails the test if not.
  void Start();
  // SIGSTOP: the server neither answers nor closes a connection, as on a hung host.
  void Freeze();
  void Thaw();
  void Stop();

  int port() const { return port_; }
  // mysql://root@127.0.0.1:PORT/mysql
  std::string server_url() const;
  // Runs `sql` as root with the mariadb client; fails the test on error.
  void Exec(const std::string& sql) const;

 private:
  std::string dir_;
  int port_;
  std::vector<std::string> extra_args_;
  pid_t pid_ = -1;
};

}  // namespace giftwall::testing

#endif  // GIFTWALL_TESTS_E2E_PRIVATE_MARIADB_H_
