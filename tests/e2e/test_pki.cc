#include "tests/e2e/test_pki.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/e2e/server_process.h"

namespace giftwall::testing {
namespace {

void Openssl(const std::vector<std::string>& args) {
  std::vector<std::string> command = {"/usr/bin/openssl"};
  command.insert(command.end(), args.begin(), args.end());
  std::string output;
  ASSERT_EQ(RunCommand(command, &output), 0) << absl::StrCat("openssl ", args[0], ": ", output);
}

std::vector<std::string> NewKey(const std::string& key_file) {
  return {"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key_file};
}

}  // namespace

TestPki::TestPki() {
  std::string pattern = absl::StrCat(::testing::TempDir(), "/pki-XXXXXX");
  const char* made = mkdtemp(pattern.data());
  EXPECT_NE(made, nullptr) << "mkdtemp " << pattern;
  dir_ = pattern;
}

TestPki::~TestPki() {
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

std::string TestPki::MakeCa(const std::string& name) {
  const std::string base = absl::StrCat(dir_, "/", name);
  std::vector<std::string> args = {"req", "-x509"};
  for (std::string& arg : NewKey(base + ".key")) args.push_back(std::move(arg));
  args.insert(args.end(),
              {"-out", base + ".crt", "-subj", absl::StrCat("/CN=", name), "-days", "30"});
  Openssl(args);
  return base + ".crt";
}

Identity TestPki::Issue(const std::string& ca_cert_file, const std::string& name, int days,
                        const std::string& extra_sans) {
  const std::string ca_key = ca_cert_file.substr(0, ca_cert_file.size() - 4) + ".key";
  const std::string base = absl::StrCat(dir_, "/", name);
  std::vector<std::string> request = {"req"};
  for (std::string& arg : NewKey(base + ".key")) request.push_back(std::move(arg));
  request.insert(request.end(), {"-out", base + ".csr", "-subj", absl::StrCat("/CN=", name)});
  Openssl(request);
  std::ofstream(base + ".ext") << "subjectAltName=DNS:localhost,IP:127.0.0.1,DNS:" << name
                               << (extra_sans.empty() ? "" : ",") << extra_sans << "\n"
                               << "basicConstraints=CA:FALSE\n"
                               << "keyUsage=digitalSignature,keyEncipherment\n"
                               << "extendedKeyUsage=serverAuth,clientAuth\n";
  Openssl({"x509", "-req", "-in", base + ".csr", "-CA", ca_cert_file, "-CAkey", ca_key,
           "-set_serial", absl::StrCat(serial_++), "-days", absl::StrCat(days), "-extfile",
           base + ".ext", "-out", base + ".crt"});
  return {base + ".crt", base + ".key"};
}

std::shared_ptr<grpc::ChannelCredentials> TlsCallerCredentials(const std::string& ca_cert_file,
                                                               const Identity& identity) {
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = process::ReadFile(ca_cert_file);
  if (!identity.cert_file.empty()) {
    options.pem_cert_chain = process::ReadFile(identity.cert_file);
    options.pem_private_key = process::ReadFile(identity.key_file);
  }
  return grpc::SslCredentials(options);
}

}  // namespace giftwall::testing
