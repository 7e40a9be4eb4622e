// giftwall: the command-line client of the gift wall service.
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/admin_commands.h"
#include "client/cli.h"
#include "client/wall_table.h"
#include "giftwall/v1/giftwall.grpc.pb.h"
#include "google/protobuf/util/json_util.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "server/env_flags.h"
#include "server/version.h"

// The flags the commands below share (--server, --app_code, ...) are in client/cli.cc, the
// admin commands' in client/admin_commands.cc.
ABSL_FLAG(std::string, event_type, "WalletGiftDebited", "project: the event's type");
ABSL_FLAG(std::string, payload, "", "project: the event's JSON payload");
ABSL_FLAG(std::string, payload_file, "", "project: read the payload from this file");
ABSL_FLAG(std::string, message_file, "",
          "project: read the whole WalletOutboxMessage from this JSON file (proto field names)");
ABSL_FLAG(int64_t, occurred_at_ms, 0, "project: the event's time (default: now)");
ABSL_FLAG(std::string, sort, "count",
          "wall: count | coins | last_received | first_received | catalog");
ABSL_FLAG(bool, include_unlit, false,
          "wall: also the catalogue's on-sale gifts the wall lacks, after the lit ones");
ABSL_FLAG(std::string, gift_id, "",
          "senders, standing: which gift; sponsors: only this gift's (default: every gift); "
          "sent: list this gift's receivers");
ABSL_FLAG(std::string, period, "",
          "wall, senders, standing, sent: \"\" all-time; day, week, month: the current one in "
          "the app's zone; day:2026-12-03, week:2026-W49, month:2026-12: one");
ABSL_FLAG(std::string, period_kind, "month", "sponsors: day | week | month");
ABSL_FLAG(int64_t, sender_user_id, 0, "standing, privacy: the sender; sent: as --user_id");
ABSL_FLAG(int64_t, viewer_user_id, 0,
          "wall, senders, sponsors, standing, sent: who is looking (0: nobody in particular); "
          "senders who hid from them show as anonymous, and a sent wall shows them only what was "
          "sent in the open");
ABSL_FLAG(bool, hidden, true, "privacy: hide the sender from strangers (--nohidden: show again)");
ABSL_FLAG(std::string, service, "readiness", "health: the health service name to check");

namespace giftwall::client {
namespace {

constexpr char kUsage[] =
    "The gift wall service's command-line client.\n"
    "  giftwall project --app_code=A --event_id=E --payload='{...}'   project one message\n"
    "  giftwall project --message_file=m.json                         ... from a JSON file\n"
    "  giftwall wall --app_code=A --user_id=U [--sort=coins] [--period=month] [--include_unlit]\n"
    "                [--all]\n"
    "  giftwall senders --app_code=A --user_id=U --gift_id=G [--period=month] [--all]\n"
    "  giftwall sponsors --app_code=A --user_id=U [--period_kind=week] [--gift_id=G] [--all]\n"
    "      the 冠名 of each past period, newest first\n"
    "  giftwall standing --app_code=A --user_id=U --gift_id=G --sender_user_id=S [--period=month]\n"
    "      how many more S must send to take 冠名, and S's rank\n"
    "      wall, senders, sponsors and standing take --viewer_user_id=V: who is looking\n"
    "  giftwall privacy --app_code=A --sender_user_id=S [--nohidden]\n"
    "      hide S from strangers on every wall of the app (or show S again)\n"
    "  giftwall sent --app_code=A --user_id=U [--gift_id=G] [--viewer_user_id=V] [--all]\n"
    "      what U sent, per gift (the app must keep the sent wall; --period too); with\n"
    "      --gift_id, to whom\n"
    "  giftwall health [--service=readiness]\n"
    "  giftwall admin status|event|dead|requeue|catch-up|verify|rebuild|settings --app_code=A\n"
    "      operate the projection (server run with --enable_admin); `giftwall admin` for more\n"
    "  giftwall admin catalog import --file=catalog.json [--replace] | list --app_code=A\n"
    "      the app's gift catalogue\n"
    "Common: --server=host:port, --json [--json_names=proto], --timeout=10s; each flag also\n"
    "from GIFTWALL_CLI_<FLAG> (GIFTWALL_CLI_SERVER=host:port).";

int Project() {
  v1::ProjectMessageRequest request;
  v1::WalletOutboxMessage* message = request.mutable_message();
  if (const std::string file = absl::GetFlag(FLAGS_message_file); !file.empty()) {
    absl::StatusOr<std::string> json = ReadFlagFile("message_file", file);
    if (!json.ok()) return Fail(json.status().message());
    auto status = google::protobuf::util::JsonStringToMessage(*json, message);
    if (!status.ok()) return Fail(absl::StrCat("--message_file: ", status.ToString()));
  } else {
    message->set_app_code(absl::GetFlag(FLAGS_app_code));
    message->set_event_id(absl::GetFlag(FLAGS_event_id));
    message->set_event_type(absl::GetFlag(FLAGS_event_type));
    std::string payload = absl::GetFlag(FLAGS_payload);
    if (const std::string path = absl::GetFlag(FLAGS_payload_file); !path.empty()) {
      absl::StatusOr<std::string> read = ReadFlagFile("payload_file", path);
      if (!read.ok()) return Fail(read.status().message());
      payload = *std::move(read);
    }
    message->set_payload_json(payload);
    const int64_t occurred = absl::GetFlag(FLAGS_occurred_at_ms);
    message->set_occurred_at_ms(occurred != 0 ? occurred : absl::ToUnixMillis(absl::Now()));
  }
  std::unique_ptr<v1::GiftWallService::Stub> stub = v1::GiftWallService::NewStub(Channel());
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::ProjectMessageResponse response;
  grpc::Status status = stub->ProjectMessage(&context, request, &response);
  if (!status.ok()) return RpcFailed(status);
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << ToJson(response);
  } else {
    absl::string_view outcome = v1::ProjectionOutcome_Name(response.outcome());
    outcome.remove_prefix(absl::string_view("PROJECTION_OUTCOME_").size());
    std::cout << outcome << (response.detail().empty() ? "" : ": ") << response.detail() << "\n";
  }
  return 0;
}

std::unique_ptr<v1::GiftWallService::Stub> WallStub() {
  return v1::GiftWallService::NewStub(Channel());
}

int Wall() {
  v1::GetGiftWallRequest request;
  request.set_viewer_user_id(absl::GetFlag(FLAGS_viewer_user_id));
  request.set_app_code(absl::GetFlag(FLAGS_app_code));
  request.set_user_id(absl::GetFlag(FLAGS_user_id));
  request.set_page_size(absl::GetFlag(FLAGS_page_size));
  request.set_page_token(absl::GetFlag(FLAGS_page_token));
  request.set_period(absl::GetFlag(FLAGS_period));
  request.set_include_unlit(absl::GetFlag(FLAGS_include_unlit));
  const std::string sort = absl::GetFlag(FLAGS_sort);
  const std::map<std::string, v1::GiftWallSort> sorts = {
      {"count", v1::GIFT_WALL_SORT_COUNT_DESC},
      {"coins", v1::GIFT_WALL_SORT_COINS_DESC},
      {"last_received", v1::GIFT_WALL_SORT_LAST_RECEIVED_DESC},
      {"first_received", v1::GIFT_WALL_SORT_FIRST_RECEIVED_ASC},
      {"catalog", v1::GIFT_WALL_SORT_CATALOG}};
  auto it = sorts.find(sort);
  if (it == sorts.end()) {
    return Fail(absl::StrCat("--sort: \"", sort,
                             "\" is not one of count, coins, last_received, first_received, "
                             "catalog"));
  }
  request.set_sort(it->second);
  return Paged<v1::GetGiftWallRequest, v1::GetGiftWallResponse>(
      request,
      [](grpc::ClientContext* context, const v1::GetGiftWallRequest& r,
         v1::GetGiftWallResponse* page) { return WallStub()->GetGiftWall(context, r, page); },
      [](const v1::GetGiftWallResponse& page, v1::GetGiftWallResponse* all) {
        all->mutable_items()->MergeFrom(page.items());
        *all->mutable_summary() = page.summary();
        if (page.has_period()) *all->mutable_period() = page.period();
        all->set_next_page_token(page.next_page_token());
      },
      FormatWallTable);
}

int Senders() {
  v1::ListGiftWallSendersRequest request;
  request.set_viewer_user_id(absl::GetFlag(FLAGS_viewer_user_id));
  request.set_app_code(absl::GetFlag(FLAGS_app_code));
  request.set_user_id(absl::GetFlag(FLAGS_user_id));
  request.set_gift_id(absl::GetFlag(FLAGS_gift_id));
  request.set_page_size(absl::GetFlag(FLAGS_page_size));
  request.set_page_token(absl::GetFlag(FLAGS_page_token));
  request.set_period(absl::GetFlag(FLAGS_period));
  return Paged<v1::ListGiftWallSendersRequest, v1::ListGiftWallSendersResponse>(
      request,
      [](grpc::ClientContext* context, const v1::ListGiftWallSendersRequest& r,
         v1::ListGiftWallSendersResponse* page) {
        return WallStub()->ListGiftWallSenders(context, r, page);
      },
      [](const v1::ListGiftWallSendersResponse& page, v1::ListGiftWallSendersResponse* all) {
        all->mutable_senders()->MergeFrom(page.senders());
        if (page.has_period()) *all->mutable_period() = page.period();
        all->set_next_page_token(page.next_page_token());
      },
      FormatSendersTable);
}

int Sponsors() {
  v1::ListSponsorHistoryRequest request;
  request.set_viewer_user_id(absl::GetFlag(FLAGS_viewer_user_id));
  request.set_app_code(absl::GetFlag(FLAGS_app_code));
  request.set_user_id(absl::GetFlag(FLAGS_user_id));
  request.set_period_kind(absl::GetFlag(FLAGS_period_kind));
  request.set_gift_id(absl::GetFlag(FLAGS_gift_id));
  request.set_page_size(absl::GetFlag(FLAGS_page_size));
  request.set_page_token(absl::GetFlag(FLAGS_page_token));
  return Paged<v1::ListSponsorHistoryRequest, v1::ListSponsorHistoryResponse>(
      request,
      [](grpc::ClientContext* context, const v1::ListSponsorHistoryRequest& r,
         v1::ListSponsorHistoryResponse* page) {
        return WallStub()->ListSponsorHistory(context, r, page);
      },
      [](const v1::ListSponsorHistoryResponse& page, v1::ListSponsorHistoryResponse* all) {
        all->mutable_entries()->MergeFrom(page.entries());
        all->set_next_page_token(page.next_page_token());
      },
      FormatSponsorHistoryTable);
}

int Standing() {
  v1::GetSenderStandingRequest request;
  request.set_viewer_user_id(absl::GetFlag(FLAGS_viewer_user_id));
  request.set_app_code(absl::GetFlag(FLAGS_app_code));
  request.set_user_id(absl::GetFlag(FLAGS_user_id));
  request.set_gift_id(absl::GetFlag(FLAGS_gift_id));
  request.set_sender_user_id(absl::GetFlag(FLAGS_sender_user_id));
  request.set_period(absl::GetFlag(FLAGS_period));
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::GetSenderStandingResponse response;
  grpc::Status status = WallStub()->GetSenderStanding(&context, request, &response);
  if (!status.ok()) return RpcFailed(status);
  std::cout << (absl::GetFlag(FLAGS_json) ? ToJson(response) : FormatStanding(response));
  return 0;
}

int Privacy() {
  v1::SetSenderPrivacyRequest request;
  request.set_app_code(absl::GetFlag(FLAGS_app_code));
  request.set_sender_user_id(absl::GetFlag(FLAGS_sender_user_id));
  request.set_hidden(absl::GetFlag(FLAGS_hidden));
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::SetSenderPrivacyResponse response;
  grpc::Status status = WallStub()->SetSenderPrivacy(&context, request, &response);
  if (!status.ok()) return RpcFailed(status);
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << ToJson(response);
  } else {
    std::cout << "sender " << request.sender_user_id() << " is "
              << (request.hidden() ? "hidden from strangers" : "shown") << " on "
              << request.app_code() << (response.changed() ? "" : " (it already was)") << "\n";
  }
  return 0;
}

int Sent() {
  const std::string gift_id = absl::GetFlag(FLAGS_gift_id);
  // The sender: --user_id (whose sent wall), or --sender_user_id as the other commands name one.
  const int64_t sender = absl::GetFlag(FLAGS_user_id) != 0 ? absl::GetFlag(FLAGS_user_id)
                                                           : absl::GetFlag(FLAGS_sender_user_id);
  if (gift_id.empty()) {
    v1::GetSentGiftsRequest request;
    request.set_app_code(absl::GetFlag(FLAGS_app_code));
    request.set_sender_user_id(sender);
    request.set_viewer_user_id(absl::GetFlag(FLAGS_viewer_user_id));
    request.set_page_size(absl::GetFlag(FLAGS_page_size));
    request.set_page_token(absl::GetFlag(FLAGS_page_token));
    request.set_period(absl::GetFlag(FLAGS_period));
    return Paged<v1::GetSentGiftsRequest, v1::GetSentGiftsResponse>(
        request,
        [](grpc::ClientContext* context, const v1::GetSentGiftsRequest& r,
           v1::GetSentGiftsResponse* page) { return WallStub()->GetSentGifts(context, r, page); },
        [](const v1::GetSentGiftsResponse& page, v1::GetSentGiftsResponse* all) {
          all->mutable_gifts()->MergeFrom(page.gifts());
          all->set_next_page_token(page.next_page_token());
        },
        FormatSentTable);
  }
  v1::ListSentGiftReceiversRequest request;
  request.set_app_code(absl::GetFlag(FLAGS_app_code));
  request.set_sender_user_id(sender);
  request.set_gift_id(gift_id);
  request.set_viewer_user_id(absl::GetFlag(FLAGS_viewer_user_id));
  request.set_page_size(absl::GetFlag(FLAGS_page_size));
  request.set_page_token(absl::GetFlag(FLAGS_page_token));
  request.set_period(absl::GetFlag(FLAGS_period));
  return Paged<v1::ListSentGiftReceiversRequest, v1::ListSentGiftReceiversResponse>(
      request,
      [](grpc::ClientContext* context, const v1::ListSentGiftReceiversRequest& r,
         v1::ListSentGiftReceiversResponse* page) {
        return WallStub()->ListSentGiftReceivers(context, r, page);
      },
      [](const v1::ListSentGiftReceiversResponse& page, v1::ListSentGiftReceiversResponse* all) {
        all->mutable_receivers()->MergeFrom(page.receivers());
        all->set_next_page_token(page.next_page_token());
      },
      FormatSentReceiversTable);
}

int Health() {
  std::unique_ptr<grpc::health::v1::Health::Stub> stub =
      grpc::health::v1::Health::NewStub(Channel());
  grpc::ClientContext context;
  SetDeadline(&context);
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(absl::GetFlag(FLAGS_service));
  grpc::health::v1::HealthCheckResponse response;
  grpc::Status status = stub->Check(&context, request, &response);
  if (!status.ok()) return RpcFailed(status);
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << ToJson(response);
  } else {
    std::cout << grpc::health::v1::HealthCheckResponse::ServingStatus_Name(response.status())
              << "\n";
  }
  return response.status() == grpc::health::v1::HealthCheckResponse::SERVING ? 0 : 3;
}

}  // namespace
}  // namespace giftwall::client

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(giftwall::client::kUsage);
  // absl's --help lists only flags defined in a file named after the program; the client's are
  // spread over client/*.cc.
  absl::FlagsUsageConfig usage_config;
  usage_config.contains_help_flags = [](absl::string_view file) {
    return absl::StrContains(file, "client/");
  };
  usage_config.contains_helpshort_flags = usage_config.contains_help_flags;
  absl::SetFlagsUsageConfig(usage_config);
  giftwall::SetVersionFlag("giftwall");
  // GIFTWALL_CLI_*, never the server's GIFTWALL_*: run inside a server's pod, the client must
  // not present the server's certificate as its own.
  std::vector<char*> args = giftwall::ParseFlagsWithEnvironment(argc, argv, "GIFTWALL_CLI_");
  giftwall::WarnOfUnknownVariables("GIFTWALL_CLI_", "giftwall");
  if (args.size() < 2) return giftwall::client::Fail(giftwall::client::kUsage);
  if (absl::Status s = giftwall::client::CheckCommonFlags(); !s.ok()) {
    return giftwall::client::Fail(s.message());
  }
  const absl::string_view command = args[1];
  if (command == "admin") {
    // `admin catalog import|list` takes an action; the other subcommands none.
    const bool catalog = args.size() >= 3 && absl::string_view(args[2]) == "catalog";
    const size_t most = catalog ? 4 : 3;
    if (args.size() > most) {
      return giftwall::client::Fail(absl::StrCat("admin: unexpected argument \"", args[most],
                                                 "\"\n", giftwall::client::kAdminUsage));
    }
    if (catalog) return giftwall::client::RunCatalog(args.size() == 4 ? args[3] : "");
    return giftwall::client::RunAdmin(args.size() == 3 ? args[2] : "");
  }
  if (args.size() != 2) {
    return giftwall::client::Fail(
        absl::StrCat("unexpected argument \"", args[2], "\"\n", giftwall::client::kUsage));
  }
  if (command == "project") return giftwall::client::Project();
  if (command == "wall") return giftwall::client::Wall();
  if (command == "senders") return giftwall::client::Senders();
  if (command == "sponsors") return giftwall::client::Sponsors();
  if (command == "standing") return giftwall::client::Standing();
  if (command == "privacy") return giftwall::client::Privacy();
  if (command == "sent") return giftwall::client::Sent();
  if (command == "health") return giftwall::client::Health();
  return giftwall::client::Fail(
      absl::StrCat("unknown command \"", command, "\"\n", giftwall::client::kUsage));
}
