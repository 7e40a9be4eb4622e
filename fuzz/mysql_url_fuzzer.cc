// ParseMysqlUrl: any text is parsed without crashing, into an endpoint that keeps the bounds of
// mysql_url.h, or refused with INVALID_ARGUMENT that says "mysql_url:"; and a URL written from
// an endpoint's parts (user, password and socket percent-encoded) parses back into those parts.
// Input (FuzzedDataProvider): the last byte's low bit chooses. 0: the rest is the URL. 1: a round
// trip, with the port in the bytes before it (a byte whose low bit says "default port", then two
// for the port) and, from the front, user, password, host, database and socket, each ended by a
// backslash and one more byte.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "glog/logging.h"
#include "server/storage/mysql_url.h"

namespace giftwall::storage {
namespace {

void CheckEndpoint(const MysqlEndpoint& ep) {
  CHECK(!ep.user.empty());
  CHECK(!ep.database.empty());
  CHECK(!absl::StrContains(ep.database, '/')) << ep.database;
  CHECK(!ep.host.empty() || !ep.socket.empty());
  CHECK_GE(ep.port, 1);
  CHECK_LE(ep.port, 65535);
  CHECK(absl::StartsWith(ep.Describe(), "mysql://"));
}

// Every byte but letters and digits as %XX, in either case of hex digit.
std::string PercentEncode(absl::string_view s) {
  std::string out;
  for (char c : s) {
    const auto b = static_cast<unsigned char>(c);
    if (absl::ascii_isalnum(c)) {
      out.push_back(c);
    } else if ((b & 1) != 0) {
      absl::StrAppendFormat(&out, "%%%02x", b);
    } else {
      absl::StrAppendFormat(&out, "%%%02X", b);
    }
  }
  return out;
}

// Writes a URL from parts that need no encoding where the parser does not decode them, and
// checks it parses back into them.
void CheckRoundTrip(FuzzedDataProvider& provider) {
  MysqlEndpoint want;
  want.user = provider.ConsumeRandomLengthString(32);
  want.password = provider.ConsumeRandomLengthString(32);
  want.host = provider.ConsumeRandomLengthString(32);
  want.database = provider.ConsumeRandomLengthString(32);
  want.socket = provider.ConsumeRandomLengthString(64);
  const bool default_port = provider.ConsumeBool();
  want.port = default_port ? 3306 : provider.ConsumeIntegralInRange<int>(1, 65535);
  // Host and database are taken as written: they cannot hold the URL's separators.
  if (want.user.empty() || want.database.empty() || want.host.empty() ||
      want.host.find_first_of("/?@[]") != std::string::npos ||
      want.database.find_first_of("/?@") != std::string::npos) {
    return;
  }
  const std::string host =
      absl::StrContains(want.host, ':') ? absl::StrCat("[", want.host, "]") : want.host;
  std::string url = absl::StrCat("mysql://", PercentEncode(want.user), ":",
                                 PercentEncode(want.password), "@", host);
  if (!default_port) absl::StrAppend(&url, ":", want.port);
  absl::StrAppend(&url, "/", want.database);
  if (!want.socket.empty()) absl::StrAppend(&url, "?socket=", PercentEncode(want.socket));

  const absl::StatusOr<MysqlEndpoint> got = ParseMysqlUrl(url);
  CHECK(got.ok()) << got.status() << " for " << url;
  CheckEndpoint(*got);
  CHECK(got->user == want.user) << url;
  CHECK(got->password == want.password) << url;
  CHECK(got->host == want.host) << url;
  CHECK_EQ(got->port, want.port) << url;
  CHECK(got->database == want.database) << url;
  CHECK(got->socket == want.socket) << url;
}

void FuzzOne(FuzzedDataProvider& provider) {
  if (provider.ConsumeBool()) {
    CheckRoundTrip(provider);
    return;
  }
  const std::string url = provider.ConsumeRemainingBytesAsString();
  const absl::StatusOr<MysqlEndpoint> ep = ParseMysqlUrl(url);
  if (!ep.ok()) {
    CHECK(ep.status().code() == absl::StatusCode::kInvalidArgument) << ep.status();
    CHECK(absl::StartsWith(ep.status().message(), "mysql_url: ")) << ep.status();
    return;
  }
  CheckEndpoint(*ep);
}

}  // namespace
}  // namespace giftwall::storage

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider provider(data, size);
  giftwall::storage::FuzzOne(provider);
  return 0;
}
