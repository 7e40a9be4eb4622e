// The server's transport security: TLS from PEM files that are watched, so that a certificate
// renewed on disk (a cert-manager secret, a mesh's rotation) is served without a restart, and
// optionally client certificates verified against a CA (mTLS).
#ifndef GIFTWALL_SERVER_TRANSPORT_TLS_H_
#define GIFTWALL_SERVER_TRANSPORT_TLS_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "grpcpp/security/server_credentials.h"

namespace giftwall::transport {

struct TlsOptions {
  std::string cert_file;  // the server's certificate chain, PEM
  std::string key_file;   // its private key, PEM
  // PEM bundle of the CAs that sign callers' certificates; empty: no client certificates.
  std::string client_ca_file;
  // With client_ca_file: refuse a caller without a certificate (else one is verified only when
  // presented, and callers without may identify themselves otherwise).
  bool require_client_cert = true;
  // How often the files are read again.
  absl::Duration refresh_interval = absl::Minutes(1);
};

// INVALID_ARGUMENT naming the flag (--tls_cert_file, ...) of a file that cannot be read or holds
// no PEM block of the kind expected.
absl::Status CheckTlsFiles(const TlsOptions& options);

// Credentials that serve the files and pick up their changes.
std::shared_ptr<grpc::ServerCredentials> TlsCredentials(const TlsOptions& options);

}  // namespace giftwall::transport

#endif  // GIFTWALL_SERVER_TRANSPORT_TLS_H_
