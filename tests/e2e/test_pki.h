// Certificates made at test time with the openssl command (Debian's openssl package): CAs, and
// server or client certificates they sign, valid or already expired.
#ifndef GIFTWALL_TESTS_E2E_TEST_PKI_H_
#define GIFTWALL_TESTS_E2E_TEST_PKI_H_

#include <string>

#include "grpcpp/security/credentials.h"

namespace giftwall::testing {

// A certificate and its key, as files.
struct Identity {
  std::string cert_file;
  std::string key_file;
};

// A directory of certificates, removed when destroyed. Every certificate names localhost,
// 127.0.0.1 and its own name (as DNS names), and may serve either end of a TLS connection.
// Failures fail the test at once.
class TestPki {
 public:
  TestPki();
  ~TestPki();
  TestPki(const TestPki&) = delete;
  TestPki& operator=(const TestPki&) = delete;

  // A self-signed CA called `name`: its certificate's file (the key lies beside it).
  std::string MakeCa(const std::string& name);
  // A certificate for `name` signed by the CA whose certificate is `ca_cert_file`. `days` 0
  // makes one whose validity ends the second it starts.
  // `extra_sans`: more subjectAltName entries, e.g. "URI:spiffe://x/y,email:a@b".
  Identity Issue(const std::string& ca_cert_file, const std::string& name, int days = 2,
                 const std::string& extra_sans = "");

  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  int serial_ = 1;
};

// TLS credentials of a caller that trusts `ca_cert_file` and, unless `identity` is empty,
// presents it.
std::shared_ptr<grpc::ChannelCredentials> TlsCallerCredentials(const std::string& ca_cert_file,
                                                               const Identity& identity = {});

}  // namespace giftwall::testing

#endif  // GIFTWALL_TESTS_E2E_TEST_PKI_H_
