#include "client/cli.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <tuple>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "google/protobuf/util/json_util.h"
#include "server/env_flags.h"

// Flags more than one command reads; each command's own flags live beside it.
ABSL_FLAG(std::string, server, "127.0.0.1:50051", "the service's host:port");
ABSL_FLAG(bool, tls, false,
          "call over TLS, trusting the system's CAs (implied by the other --tls_* flags)");
ABSL_FLAG(std::string, tls_ca_file, "", "TLS: trust the server certificates these CAs (PEM) sign");
ABSL_FLAG(std::string, tls_cert_file, "",
          "TLS: this caller's certificate (PEM), for servers that ask for one (mTLS)");
ABSL_FLAG(std::string, tls_key_file, "", "TLS: the private key of --tls_cert_file (PEM)");
ABSL_FLAG(std::string, tls_server_name, "",
          "TLS: the name the server's certificate must carry, when --server does not say it "
          "(e.g. through kubectl port-forward)");
ABSL_FLAG(std::string, token_file, "",
          "a file holding this caller's bearer token, sent as `authorization: Bearer` (over TLS "
          "only)");
ABSL_FLAG(bool, json, false, "print responses as JSON (for scripts)");
ABSL_FLAG(absl::Duration, timeout, absl::Seconds(10), "deadline of each call");
ABSL_FLAG(std::string, app_code, "", "the app (tenant)");
ABSL_FLAG(std::string, event_id, "", "project, admin event: the outbox event's id");
ABSL_FLAG(int64_t, user_id, 0,
          "wall, senders, sponsors, standing: whose wall; admin verify: only this user's wall (0: "
          "every wall)");
ABSL_FLAG(int, page_size, 0,
          "wall, senders, sponsors, admin dead: rows per page (0: the server's default, 50)");
ABSL_FLAG(std::string, page_token, "",
          "wall, senders, sponsors, admin dead: next_page_token of the previous page");
ABSL_FLAG(bool, all, false, "wall, senders, sponsors, admin dead: fetch every page");

namespace giftwall::client {
namespace {

std::string Json(const google::protobuf::Message& message, bool whitespace) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  options.add_whitespace = whitespace;
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  return out;
}

}  // namespace

int Fail(absl::string_view what) {
  std::fprintf(stderr, "giftwall: %s\n", std::string(what).c_str());
  return 2;
}

int RpcFailed(const grpc::Status& status) {
  // absl's status codes are gRPC's, by number: reuse its names.
  const std::string code =
      absl::StatusCodeToString(static_cast<absl::StatusCode>(status.error_code()));
  std::fprintf(stderr, "giftwall: %s: %s\n", code.c_str(), status.error_message().c_str());
  return 1;
}

// With whitespace, protobuf already ends the text with a newline.
std::string ToJson(const google::protobuf::Message& message) { return Json(message, true); }

std::string ToJsonLine(const google::protobuf::Message& message) {
  return absl::StrCat(Json(message, false), "\n");
}

void SetDeadline(grpc::ClientContext* context) {
  context->set_deadline(absl::ToChronoTime(absl::Now() + absl::GetFlag(FLAGS_timeout)));
}

namespace {

// The channel's credentials as the flags ask; INVALID_ARGUMENT naming a flag that cannot be met.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> Credentials() {
  const std::string cert = absl::GetFlag(FLAGS_tls_cert_file);
  const std::string key = absl::GetFlag(FLAGS_tls_key_file);
  const std::string ca = absl::GetFlag(FLAGS_tls_ca_file);
  const std::string token_file = absl::GetFlag(FLAGS_token_file);
  if (!absl::GetFlag(FLAGS_tls) && cert.empty() && key.empty() && ca.empty() &&
      absl::GetFlag(FLAGS_tls_server_name).empty()) {
    if (!token_file.empty()) {
      return absl::InvalidArgumentError(
          "--token_file: a token goes over TLS only (add --tls or --tls_ca_file)");
    }
    return grpc::InsecureChannelCredentials();
  }
  if (cert.empty() != key.empty()) {
    return absl::InvalidArgumentError("--tls_cert_file and --tls_key_file go together");
  }
  grpc::SslCredentialsOptions options;
  for (auto [flag, path, out] : {std::make_tuple("tls_ca_file", ca, &options.pem_root_certs),
                                 std::make_tuple("tls_cert_file", cert, &options.pem_cert_chain),
                                 std::make_tuple("tls_key_file", key, &options.pem_private_key)}) {
    absl::StatusOr<std::string> pem = ReadFlagFile(flag, path);
    if (!pem.ok()) return pem.status();
    *out = *std::move(pem);
  }
  std::shared_ptr<grpc::ChannelCredentials> tls = grpc::SslCredentials(options);
  if (token_file.empty()) return tls;
  absl::StatusOr<std::string> token = ReadFlagFile("token_file", token_file);
  if (!token.ok()) return token.status();
  const std::string trimmed(absl::StripAsciiWhitespace(*token));
  if (trimmed.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--token_file: ", token_file, " is empty"));
  }
  return grpc::CompositeChannelCredentials(tls, grpc::AccessTokenCredentials(trimmed));
}

}  // namespace

absl::Status CheckConnectionFlags() { return Credentials().status(); }

std::shared_ptr<grpc::Channel> Channel() {
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials = Credentials();
  if (!credentials.ok()) {
    // main checks the flags before any command runs.
    std::fprintf(stderr, "giftwall: %s\n", std::string(credentials.status().message()).c_str());
    std::exit(2);
  }
  grpc::ChannelArguments args;
  if (const std::string name = absl::GetFlag(FLAGS_tls_server_name); !name.empty()) {
    args.SetSslTargetNameOverride(name);
  }
  return grpc::CreateCustomChannel(absl::GetFlag(FLAGS_server), *credentials, args);
}

size_t DisplayWidth(absl::string_view text) {
  size_t width = 0;
  for (size_t i = 0; i < text.size();) {
    const unsigned char lead = static_cast<unsigned char>(text[i]);
    const size_t length = lead < 0x80    ? 1
                          : lead >= 0xf0 ? 4
                          : lead >= 0xe0 ? 3
                          : lead >= 0xc0 ? 2
                                         : 1;
    uint32_t cp = length == 1 ? lead : lead & (0x7f >> length);
    for (size_t k = 1; k < length && i + k < text.size(); ++k) {
      cp = (cp << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3f);
    }
    i += length;
    // East Asian wide and full-width ranges (Hangul, CJK, kana, full-width forms, emoji).
    const bool wide = (cp >= 0x1100 && cp <= 0x115f) || (cp >= 0x2e80 && cp <= 0xa4cf) ||
                      (cp >= 0xac00 && cp <= 0xd7a3) || (cp >= 0xf900 && cp <= 0xfaff) ||
                      (cp >= 0xfe30 && cp <= 0xfe4f) || (cp >= 0xff00 && cp <= 0xff60) ||
                      (cp >= 0xffe0 && cp <= 0xffe6) || (cp >= 0x1f300 && cp <= 0x1f64f) ||
                      (cp >= 0x1f900 && cp <= 0x1f9ff) || (cp >= 0x20000 && cp <= 0x3fffd);
    width += wide ? 2 : 1;
  }
  return width;
}

std::string FormatTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()));
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], DisplayWidth(row[i]));
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      absl::StrAppend(&line, row[i]);
      if (i + 1 < row.size()) line.append(widths[i] - DisplayWidth(row[i]) + 2, ' ');
    }
    absl::StrAppend(&out, line, "\n");
  }
  return out;
}

}  // namespace giftwall::client
