#include "server/transport/tls.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/security/tls_certificate_provider.h"
#include "grpcpp/security/tls_credentials_options.h"

namespace giftwall::transport {
namespace {

// `marker` is a line fragment that a PEM block of the kind expected has.
absl::Status CheckPem(absl::string_view flag, const std::string& path, absl::string_view kind,
                      absl::string_view marker) {
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("--", flag, ": cannot read ", path));
  std::stringstream contents;
  contents << in.rdbuf();
  if (!absl::StrContains(contents.str(), marker)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, ": ", path, " holds no PEM ", kind, " block"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckTlsFiles(const TlsOptions& options) {
  constexpr absl::string_view kCertificate = "-----BEGIN CERTIFICATE-----";
  if (absl::Status s = CheckPem("tls_cert_file", options.cert_file, "certificate", kCertificate);
      !s.ok()) {
    return s;
  }
  // PKCS#8 ("BEGIN PRIVATE KEY") and the traditional "BEGIN EC/RSA PRIVATE KEY" alike.
  if (absl::Status s =
          CheckPem("tls_key_file", options.key_file, "private key", "PRIVATE KEY-----");
      !s.ok()) {
    return s;
  }
  if (!options.client_ca_file.empty()) {
    return CheckPem("tls_client_ca_file", options.client_ca_file, "certificate", kCertificate);
  }
  return absl::OkStatus();
}

std::shared_ptr<grpc::ServerCredentials> TlsCredentials(const TlsOptions& options) {
  const auto refresh = static_cast<unsigned int>(
      std::max<int64_t>(1, absl::ToInt64Seconds(options.refresh_interval)));
  auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      options.key_file, options.cert_file, options.client_ca_file, refresh);
  grpc::experimental::TlsServerCredentialsOptions tls(provider);
  tls.watch_identity_key_cert_pairs();
  if (options.client_ca_file.empty()) {
    tls.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  } else {
    tls.watch_root_certs();
    tls.set_cert_request_type(options.require_client_cert
                                  ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                                  : GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY);
  }
  return grpc::experimental::TlsServerCredentials(tls);
}

}  // namespace giftwall::transport
