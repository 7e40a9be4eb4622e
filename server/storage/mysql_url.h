// Where the database is: parsed from mysql://user[:password]@host[:port]/database[?socket=PATH].
#ifndef GIFTWALL_SERVER_STORAGE_MYSQL_URL_H_
#define GIFTWALL_SERVER_STORAGE_MYSQL_URL_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace giftwall::storage {

struct MysqlEndpoint {
  std::string host;
  int port = 3306;
  std::string user;
  std::string password;
  std::string database;
  std::string socket;  // a Unix socket path; when set, host and port are not used

  // For logs: never includes the password.
  std::string Describe() const;
};

// Parses `url`; user and password may be percent-encoded. INVALID_ARGUMENT names what is wrong.
absl::StatusOr<MysqlEndpoint> ParseMysqlUrl(absl::string_view url);

}  // namespace giftwall::storage

#endif  // GIFTWALL_SERVER_STORAGE_MYSQL_URL_H_
