// What every command of the command-line client shares: the common flags, the channel, error
// reporting with the client's exit codes, JSON output and paging.
#ifndef GIFTWALL_CLIENT_CLI_H_
#define GIFTWALL_CLIENT_CLI_H_

#include <cstdint>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "google/protobuf/message.h"
#include "grpcpp/grpcpp.h"

ABSL_DECLARE_FLAG(std::string, server);
ABSL_DECLARE_FLAG(bool, json);
ABSL_DECLARE_FLAG(absl::Duration, timeout);
ABSL_DECLARE_FLAG(std::string, app_code);
ABSL_DECLARE_FLAG(std::string, event_id);
ABSL_DECLARE_FLAG(int64_t, user_id);
ABSL_DECLARE_FLAG(int, page_size);
ABSL_DECLARE_FLAG(std::string, page_token);
ABSL_DECLARE_FLAG(bool, all);

namespace giftwall::client {

// Exit codes: 0 success, 1 the call failed, 2 bad usage; commands may add their own (health 3,
// admin verify 4).

// Prints "giftwall: WHAT" to stderr; returns 2, the exit code of bad usage.
int Fail(absl::string_view what);

// Prints the call's status code and message to stderr; returns 1.
int RpcFailed(const grpc::Status& status);

// The message as indented JSON with every field, ending in a newline: protobuf's JSON mapping, as
// grpcurl -emit-defaults prints it (lowerCamel names, 64-bit integers as strings, enums by name);
// with --json_names=proto, the .proto's field names.
std::string ToJson(const google::protobuf::Message& message);

// The same on one line without whitespace, ending in a newline: one line per message of a stream.
std::string ToJsonLine(const google::protobuf::Message& message);

// Sets the deadline of one call from --timeout.
void SetDeadline(grpc::ClientContext* context);

// Whether the common flags can be met (the --tls_* files read, --json_names known);
// INVALID_ARGUMENT naming the flag.
absl::Status CheckCommonFlags();

// A channel to --server: plaintext, or TLS when a --tls_* flag asks for it.
std::shared_ptr<grpc::Channel> Channel();

// Rows as columns padded to their widest cell, as a terminal shows it (DisplayWidth). The last
// column is not padded, so long free text belongs there.
std::string FormatTable(const std::vector<std::vector<std::string>>& rows);
// The columns `text` (UTF-8) takes on a terminal, by Unicode's East Asian Width as libutf8proc
// knows it: wide characters (冠名) and emoji take two, combining marks and variation selectors
// none; a byte that is not UTF-8 one.
size_t DisplayWidth(absl::string_view text);

// Fetches one page, or with --all every page merged into one by merge(page, &all), and prints it
// as JSON (--json) or format(all). call(context, request, &page) makes the RPC.
template <typename Request, typename Response, typename Call, typename Merge, typename Format>
int Paged(Request request, Call call, Merge merge, Format format) {
  Response all;
  for (;;) {
    grpc::ClientContext context;
    SetDeadline(&context);
    Response page;
    grpc::Status status = call(&context, request, &page);
    if (!status.ok()) return RpcFailed(status);
    if (!absl::GetFlag(FLAGS_all)) {
      all = std::move(page);
      break;
    }
    merge(page, &all);
    if (page.next_page_token().empty()) break;
    request.set_page_token(page.next_page_token());
  }
  std::cout << (absl::GetFlag(FLAGS_json) ? ToJson(all) : format(all));
  return 0;
}

}  // namespace giftwall::client

#endif  // GIFTWALL_CLIENT_CLI_H_
