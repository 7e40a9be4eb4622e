// Where the database is, and how to reach it: parsed from
// mysql://user[:password]@host[:port]/database[?socket=PATH][&ssl-mode=MODE][&ssl-ca=FILE]
// [&ssl-cert=FILE&ssl-key=FILE], MySQL's URI parameters.
#ifndef GIFTWALL_SERVER_STORAGE_MYSQL_URL_H_
#define GIFTWALL_SERVER_STORAGE_MYSQL_URL_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace giftwall::storage {

// MySQL's ssl-mode values but VERIFY_CA, which the connector (on MariaDB Connector/C) cannot
// give: it checks the certificate chain and the host name together.
enum class SslMode {
  kDisabled,        // plaintext
  kPreferred,       // TLS when the server offers it (the default, as MySQL's clients)
  kRequired,        // TLS or no session; the server's certificate is not checked
  kVerifyIdentity,  // TLS, a certificate chained to ssl-ca that names the host
};

struct MysqlTls {
  SslMode mode = SslMode::kPreferred;
  std::string ca_file;    // the CA the server's certificate must chain to (kVerifyIdentity)
  std::string cert_file;  // the client's certificate and key, shown to a server that asks
  std::string key_file;

  // Whether a session must run over TLS (refused otherwise).
  bool required() const { return mode == SslMode::kRequired || mode == SslMode::kVerifyIdentity; }
};

// "DISABLED", "PREFERRED", ...: as the URL spells it.
absl::string_view SslModeName(SslMode mode);

struct MysqlEndpoint {
  std::string host;
  int port = 3306;
  std::string user;
  std::string password;
  std::string database;
  std::string socket;  // a Unix socket path; when set, host and port are not used
  MysqlTls tls;

  // For logs: never includes the password.
  std::string Describe() const;
};

// Parses `url`; user, password and parameters may be percent-encoded. INVALID_ARGUMENT names what
// is wrong, including a TLS set-up the connector cannot give exactly (never weakened silently).
absl::StatusOr<MysqlEndpoint> ParseMysqlUrl(absl::string_view url);

}  // namespace giftwall::storage

#endif  // GIFTWALL_SERVER_STORAGE_MYSQL_URL_H_
