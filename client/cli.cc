#include "client/cli.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "google/protobuf/util/json_util.h"
#include "server/env_flags.h"
#include "utf8proc.h"

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
ABSL_FLAG(bool, json, false,
          "print responses as JSON (for scripts), as grpcurl -emit-defaults prints them");
ABSL_FLAG(std::string, json_names, "json",
          "--json's field names: json (lowerCamel, protobuf's JSON mapping, as grpcurl) or proto "
          "(the .proto's snake_case)");
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
ABSL_FLAG(bool, all, false, "wall, senders, sponsors, sent, admin dead: fetch every page");

namespace giftwall::client {
namespace {

std::string Json(const google::protobuf::Message& message, bool whitespace) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = absl::GetFlag(FLAGS_json_names) == "proto";
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

absl::Status CheckCommonFlags() {
  if (const std::string names = absl::GetFlag(FLAGS_json_names);
      names != "json" && names != "proto") {
    return absl::InvalidArgumentError(
        absl::StrCat("--json_names: \"", names, "\" is neither json nor proto"));
  }
  return Credentials().status();
}

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
  const auto* bytes = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  const auto size = static_cast<utf8proc_ssize_t>(text.size());
  size_t width = 0;
  for (utf8proc_ssize_t i = 0; i < size;) {
    utf8proc_int32_t cp = 0;
    const utf8proc_ssize_t length = utf8proc_iterate(bytes + i, size - i, &cp);
    if (length <= 0) {  // not UTF-8 here: the byte alone, one column
      ++width;
      ++i;
      continue;
    }
    width += static_cast<size_t>(utf8proc_charwidth(cp));
    i += length;
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
