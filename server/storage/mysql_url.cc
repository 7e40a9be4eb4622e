#include "server/storage/mysql_url.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "server/common/status_macros.h"

namespace giftwall::storage {
namespace {

constexpr absl::string_view kScheme = "mysql://";

absl::StatusOr<std::string> PercentDecode(absl::string_view s, absl::string_view what) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out.push_back(s[i]);
      continue;
    }
    if (i + 2 >= s.size() || !absl::ascii_isxdigit(s[i + 1]) || !absl::ascii_isxdigit(s[i + 2])) {
      return absl::InvalidArgumentError(
          absl::StrCat("mysql_url: bad percent-encoding in the ", what));
    }
    int value = 0;
    for (char c : s.substr(i + 1, 2)) {
      value = value * 16 + (absl::ascii_isdigit(c) ? c - '0' : absl::ascii_tolower(c) - 'a' + 10);
    }
    out.push_back(static_cast<char>(value));
    i += 2;
  }
  return out;
}

absl::Status Invalid(absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("mysql_url: ", why, " (want mysql://user[:password]@host[:port]/database)"));
}

// user[:password], percent-encoded.
absl::Status ParseUserInfo(absl::string_view userinfo, MysqlEndpoint& ep) {
  absl::string_view user = userinfo, password;
  if (size_t colon = userinfo.find(':'); colon != absl::string_view::npos) {
    user = userinfo.substr(0, colon);
    password = userinfo.substr(colon + 1);
  }
  if (user.empty()) return Invalid("missing user");
  absl::StatusOr<std::string> decoded_user = PercentDecode(user, "user");
  if (!decoded_user.ok()) return decoded_user.status();
  absl::StatusOr<std::string> decoded_password = PercentDecode(password, "password");
  if (!decoded_password.ok()) return decoded_password.status();
  ep.user = *std::move(decoded_user);
  ep.password = *std::move(decoded_password);

  return absl::OkStatus();
}

// host[:port], or [ipv6][:port].
absl::Status ParseHostPort(absl::string_view hostport, MysqlEndpoint& ep) {
  absl::string_view host = hostport, port;
  if (!hostport.empty() && hostport.front() == '[') {
    const size_t close = hostport.find(']');
    if (close == absl::string_view::npos) return Invalid("unclosed [ in host");
    host = hostport.substr(1, close - 1);
    absl::string_view after = hostport.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return Invalid("unexpected text after ]");
      port = after.substr(1);
    }
  } else if (size_t colon = hostport.rfind(':'); colon != absl::string_view::npos) {
    host = hostport.substr(0, colon);
    port = hostport.substr(colon + 1);
  }
  ep.host = std::string(host);
  if (!port.empty() && (!absl::SimpleAtoi(port, &ep.port) || ep.port <= 0 || ep.port > 65535)) {
    return Invalid(absl::StrCat("port \"", port, "\" is not a number in 1..65535"));
  }

  return absl::OkStatus();
}

constexpr std::pair<absl::string_view, SslMode> kSslModes[] = {
    {"DISABLED", SslMode::kDisabled},
    {"PREFERRED", SslMode::kPreferred},
    {"REQUIRED", SslMode::kRequired},
    {"VERIFY_IDENTITY", SslMode::kVerifyIdentity},
};

absl::Status ParseSslMode(absl::string_view value, MysqlTls& tls) {
  const std::string upper = absl::AsciiStrToUpper(value);
  if (upper == "VERIFY_CA") {
    return Invalid(
        "ssl-mode=VERIFY_CA cannot be given exactly: this build's connector (MariaDB Connector/C) "
        "checks the certificate chain and the host name together; use VERIFY_IDENTITY (a "
        "certificate naming the host), or REQUIRED (TLS, the certificate unchecked)");
  }
  for (const auto& [name, mode] : kSslModes) {
    if (upper == name) {
      tls.mode = mode;
      return absl::OkStatus();
    }
  }
  return Invalid(absl::StrCat("ssl-mode \"", value,
                              "\" is not one of DISABLED, PREFERRED, REQUIRED, VERIFY_IDENTITY"));
}

// The TLS parameters make sense together: a CA only to verify against, a certificate with its
// key, nothing with DISABLED.
absl::Status CheckTls(const MysqlTls& tls) {
  if (tls.mode == SslMode::kDisabled &&
      !(tls.ca_file.empty() && tls.cert_file.empty() && tls.key_file.empty())) {
    return Invalid("ssl-mode=DISABLED takes no ssl-ca, ssl-cert or ssl-key");
  }
  if (tls.mode == SslMode::kVerifyIdentity && tls.ca_file.empty()) {
    return Invalid(
        "ssl-mode=VERIFY_IDENTITY needs ssl-ca, the CA the server's certificate is "
        "checked against");
  }
  if (tls.mode != SslMode::kVerifyIdentity && !tls.ca_file.empty()) {
    return Invalid(absl::StrCat("ssl-ca is used only by ssl-mode=VERIFY_IDENTITY, not ",
                                SslModeName(tls.mode), " (which would leave it unchecked)"));
  }
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    return Invalid("ssl-cert and ssl-key go together: a client certificate needs its key");
  }
  return absl::OkStatus();
}

}  // namespace

absl::string_view SslModeName(SslMode mode) {
  for (const auto& [name, value] : kSslModes) {
    if (value == mode) return name;
  }
  return "?";
}

std::string MysqlEndpoint::Describe() const {
  const std::string tls_mode =
      tls.mode == SslMode::kPreferred ? "" : absl::StrCat("ssl-mode=", SslModeName(tls.mode));
  if (!socket.empty()) {
    return absl::StrCat("mysql://", user, "@localhost/", database, "?socket=", socket,
                        tls_mode.empty() ? "" : "&", tls_mode);
  }
  return absl::StrCat("mysql://", user, "@", host, ":", port, "/", database,
                      tls_mode.empty() ? "" : "?", tls_mode);
}

absl::StatusOr<MysqlEndpoint> ParseMysqlUrl(absl::string_view url) {
  if (!absl::StartsWith(url, kScheme)) return Invalid("must start with mysql://");
  absl::string_view rest = url.substr(kScheme.size());
  MysqlEndpoint ep;

  absl::string_view query;
  if (size_t q = rest.find('?'); q != absl::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  const size_t at = rest.rfind('@');
  if (at == absl::string_view::npos) return Invalid("missing user@");
  absl::string_view userinfo = rest.substr(0, at);
  absl::string_view hostpath = rest.substr(at + 1);

  RETURN_IF_ERROR(ParseUserInfo(userinfo, ep));
  const size_t slash = hostpath.find('/');
  if (slash == absl::string_view::npos || slash + 1 == hostpath.size()) {
    return Invalid("missing /database");
  }
  ep.database = std::string(hostpath.substr(slash + 1));
  if (ep.database.find('/') != std::string::npos) return Invalid("database name contains '/'");
  RETURN_IF_ERROR(ParseHostPort(hostpath.substr(0, slash), ep));
  for (absl::string_view param : absl::StrSplit(query, '&', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(param, absl::MaxSplits('=', 1));
    ASSIGN_OR_RETURN(std::string value, PercentDecode(kv.second, kv.first));
    if (kv.first == "socket") {
      ep.socket = std::move(value);
    } else if (kv.first == "ssl-mode") {
      RETURN_IF_ERROR(ParseSslMode(value, ep.tls));
    } else if (kv.first == "ssl-ca") {
      ep.tls.ca_file = std::move(value);
    } else if (kv.first == "ssl-cert") {
      ep.tls.cert_file = std::move(value);
    } else if (kv.first == "ssl-key") {
      ep.tls.key_file = std::move(value);
    } else {
      return Invalid(absl::StrCat("unknown parameter \"", kv.first,
                                  "\" (known: socket, ssl-mode, ssl-ca, ssl-cert, ssl-key)"));
    }
  }
  if (ep.host.empty() && ep.socket.empty()) return Invalid("missing host");
  RETURN_IF_ERROR(CheckTls(ep.tls));
  return ep;
}

}  // namespace giftwall::storage
