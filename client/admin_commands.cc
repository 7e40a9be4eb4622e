#include "client/admin_commands.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/cli.h"
#include "client/progress_bar.h"
#include "client/wall_table.h"
#include "giftwall/v1/admin.grpc.pb.h"
#include "giftwall/v1/giftwall.grpc.pb.h"
#include "google/protobuf/util/json_util.h"
#include "server/env_flags.h"

ABSL_FLAG(std::string, error_contains, "",
          "admin dead, requeue: only dead events whose last_error contains this text "
          "(case-sensitive)");
ABSL_FLAG(std::vector<std::string>, event_ids, {},
          "admin requeue: the dead events to requeue, comma-separated");
ABSL_FLAG(bool, dry_run, false, "admin requeue: report what would be requeued; change nothing");
ABSL_FLAG(int, limit, 0,
          "admin catch-up: events to examine per pass, 1..100 (0: the server's default, 20)");
ABSL_FLAG(bool, until_done, false,
          "admin catch-up: repeat passes until one finds nothing, showing progress");
ABSL_FLAG(bool, repair, false, "admin verify: rebuild the walls of users found drifted");
ABSL_FLAG(std::string, time_zone, "",
          "admin settings: set the app's IANA time zone (e.g. Asia/Shanghai), with "
          "--period_kinds; unset: show the settings");
ABSL_FLAG(std::optional<bool>, keep_sent_wall, std::nullopt,
          "admin settings: true keeps the sent wall (giftwall sent), false stops it; unset "
          "leaves it as it is; with --time_zone");
ABSL_FLAG(std::vector<std::string>, period_kinds, {},
          "admin settings: the period walls the app keeps besides the all-time one, any of "
          "day,week,month (none: the all-time wall only)");

ABSL_FLAG(std::string, file, "",
          "admin catalog import: the catalogue, a JSON PutGiftCatalogRequest "
          "({\"items\": [{\"gift_id\": \"rose\", \"name\": \"Rose\", \"price_coins\": 10, ...}]})");
ABSL_FLAG(bool, replace, false,
          "admin catalog import: the file is the whole catalogue (gifts it lacks are removed)");

namespace giftwall::client {

const char kAdminUsage[] =
    "giftwall admin SUBCOMMAND --app_code=A   (the server must run with --enable_admin)\n"
    "  status                                 counts and lag of the projection\n"
    "  event --event_id=E                     one event's ledger row\n"
    "  dead [--error_contains=TEXT] [--page_size=N] [--page_token=T] [--all]\n"
    "                                         dead events, and how many died of each error\n"
    "  requeue --event_ids=a,b,c | --error_contains=TEXT [--dry_run]\n"
    "                                         re-project dead events (fix their outbox first)\n"
    "  catch-up [--limit=N] [--until_done]    project what the relay did not deliver\n"
    "  verify [--user_id=U] [--repair]        compare walls with their events; exit 4 on drift\n"
    "  rebuild                                rebuild every wall of the app from its events\n"
    "  settings [--time_zone=Z --period_kinds=day,week,month --keep_sent_wall=true]\n"
    "                                         show, or replace, the app's zone and period walls\n"
    "  catalog import --file=F [--replace]    write the app's gift catalogue (role catalog;\n"
    "                                         any server: GiftWallService)\n"
    "  catalog list                           show the app's gift catalogue";

namespace {

using Stub = v1::ProjectionAdminService::Stub;

// Errors are free text from the server; a table cell must stay on one line and narrow enough to
// read beside the other columns (--json has them in full).
constexpr size_t kErrorDisplayBytes = 80;
// Unverifiable users listed before "... and N more".
constexpr int kMaxListedUsers = 20;

int AdminRpcFailed(const grpc::Status& status) {
  const int code = RpcFailed(status);
  if (status.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
    // What a server without --enable_admin answers.
    std::fprintf(stderr, "giftwall: is the server running with --enable_admin?\n");
  }
  return code;
}

// Text for a table cell: control characters become spaces, and anything beyond max_bytes is cut
// at a UTF-8 character boundary and marked "...". "-" if empty.
std::string Cell(absl::string_view text, size_t max_bytes = std::string::npos) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    out.push_back(absl::ascii_iscntrl(static_cast<unsigned char>(c)) ? ' ' : c);
  }
  if (out.size() > max_bytes) {
    size_t cut = max_bytes;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
    out.resize(cut);
    out.append("...");
  }
  return out.empty() ? "-" : out;
}

std::string Age(int64_t ms) { return ms == 0 ? "-" : FormatShortDuration(absl::Milliseconds(ms)); }

std::string UserId(int64_t id) { return id == 0 ? "-" : absl::StrCat(id); }

// --- status -------------------------------------------------------------------------------------

int ShowStatus(Stub& stub) {
  v1::GetProjectionStatusRequest request;
  request.set_app_code(absl::GetFlag(FLAGS_app_code));
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::GetProjectionStatusResponse response;
  grpc::Status status = stub.GetProjectionStatus(&context, request, &response);
  if (!status.ok()) return AdminRpcFailed(status);
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << ToJson(response);
    return 0;
  }
  std::cout << FormatTable({
      {"", "COUNT", "OLDEST"},
      {"done", absl::StrCat(response.done_count())},
      {"processing", absl::StrCat(response.processing_count())},
      {"failed (retrying)", absl::StrCat(response.failed_count())},
      {"dead", absl::StrCat(response.dead_count()), Age(response.oldest_dead_age_ms())},
      {"unprojected", absl::StrCat(response.unprojected_count()),
       Age(response.oldest_unprojected_age_ms())},
      {"recovered by scan", absl::StrCat(response.recovered_by_scan_total())},
  });
  return 0;
}

// --- event --------------------------------------------------------------------------------------

int ShowEvent(Stub& stub) {
  v1::GetEventStatusRequest request;
  request.set_app_code(absl::GetFlag(FLAGS_app_code));
  request.set_event_id(absl::GetFlag(FLAGS_event_id));
  if (request.event_id().empty()) return Fail("--event_id is required");
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::GetEventStatusResponse response;
  grpc::Status status = stub.GetEventStatus(&context, request, &response);
  if (!status.ok()) return AdminRpcFailed(status);
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << ToJson(response);
    return 0;
  }
  const std::string locked =
      response.locked_by().empty()
          ? "-"
          : absl::StrCat(response.locked_by(), " until ", FormatTimeMs(response.locked_until_ms()));
  std::cout << FormatTable({
      {"status:", Cell(response.status())},
      {"projected by:", Cell(response.projected_by())},
      {"target user:", UserId(response.target_user_id())},
      {"retries:", absl::StrCat(response.retry_count())},
      {"requeues:", absl::StrCat(response.requeue_count())},
      {"last error:", Cell(response.last_error())},
      {"next attempt:", FormatTimeMs(response.next_attempt_at_ms())},
      {"locked by:", locked},
      {"processed at:", FormatTimeMs(response.processed_at_ms())},
      {"created at:", FormatTimeMs(response.created_at_ms())},
      {"updated at:", FormatTimeMs(response.updated_at_ms())},
  });
  return 0;
}

// --- dead ---------------------------------------------------------------------------------------

std::string FormatDead(const v1::ListDeadEventsResponse& page) {
  std::string out;
  if (page.events().empty()) {
    // The groups count every matching dead event: none means there are none at all.
    out = page.groups().empty() ? "(no dead events)\n" : "(no dead events on this page)\n";
  } else {
    std::vector<std::vector<std::string>> rows = {
        {"EVENT", "RETRY", "REQUEUE", "USER", "DIED AT", "LAST ERROR"}};
    for (const v1::DeadEvent& e : page.events()) {
      rows.push_back({e.event_id(), absl::StrCat(e.retry_count()), absl::StrCat(e.requeue_count()),
                      UserId(e.target_user_id()), FormatTimeMs(e.updated_at_ms()),
                      Cell(e.last_error(), kErrorDisplayBytes)});
    }
    out = FormatTable(rows);
  }
  if (!page.groups().empty()) {
    // The groups cover every matching dead event, not just this page's.
    std::vector<std::vector<std::string>> rows = {{"COUNT", "LAST ERROR"}};
    for (const v1::DeadErrorGroup& g : page.groups()) {
      rows.push_back({absl::StrCat(g.count()), Cell(g.last_error(), kErrorDisplayBytes)});
    }
    absl::StrAppend(&out, "\nall matching dead events by last error:\n", FormatTable(rows));
  }
  if (!page.next_page_token().empty()) {
    absl::StrAppend(&out, "more: --page_token=", page.next_page_token(), "\n");
  }
  return out;
}

int ListDead(Stub& stub) {
  v1::ListDeadEventsRequest request;
  request.set_app_code(absl::GetFlag(FLAGS_app_code));
  request.set_error_contains(absl::GetFlag(FLAGS_error_contains));
  request.set_page_size(absl::GetFlag(FLAGS_page_size));
  request.set_page_token(absl::GetFlag(FLAGS_page_token));
  return Paged<v1::ListDeadEventsRequest, v1::ListDeadEventsResponse>(
      request,
      [&stub](grpc::ClientContext* context, const v1::ListDeadEventsRequest& r,
              v1::ListDeadEventsResponse* page) { return stub.ListDeadEvents(context, r, page); },
      [](const v1::ListDeadEventsResponse& page, v1::ListDeadEventsResponse* all) {
        all->mutable_events()->MergeFrom(page.events());
        // Every page carries all the groups: keep one set, the latest.
        *all->mutable_groups() = page.groups();
        all->set_next_page_token(page.next_page_token());
      },
      FormatDead);
}

// --- requeue ------------------------------------------------------------------------------------

int Requeue(Stub& stub) {
  v1::RequeueDeadEventsRequest request;
  request.set_app_code(absl::GetFlag(FLAGS_app_code));
  for (const std::string& id : absl::GetFlag(FLAGS_event_ids)) {
    // Tolerates "a, b" and a trailing comma from scripts.
    const absl::string_view trimmed = absl::StripAsciiWhitespace(id);
    if (!trimmed.empty()) request.add_event_ids(std::string(trimmed));
  }
  request.set_error_contains(absl::GetFlag(FLAGS_error_contains));
  request.set_dry_run(absl::GetFlag(FLAGS_dry_run));
  if (request.event_ids().empty() && absl::StripAsciiWhitespace(request.error_contains()).empty()) {
    return Fail(
        "admin requeue needs --event_ids=a,b,c or a non-empty --error_contains=TEXT (requeueing "
        "every dead event at once is not allowed)");
  }
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::RequeueDeadEventsResponse response;
  grpc::Status status = stub.RequeueDeadEvents(&context, request, &response);
  if (!status.ok()) return AdminRpcFailed(status);
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << ToJson(response);
    return 0;
  }
  if (request.dry_run()) {
    std::cout << "matched " << response.matched() << ", would requeue " << response.requeued()
              << " (dry run: nothing changed)\n";
  } else {
    std::cout << "matched " << response.matched() << ", requeued " << response.requeued() << "\n";
  }
  if (!response.skipped().empty()) {
    std::vector<std::vector<std::string>> rows = {{"EVENT", "REASON"}};
    for (const v1::SkippedEvent& s : response.skipped()) {
      rows.push_back({s.event_id(), Cell(s.reason())});
    }
    std::cout << "\nskipped " << response.skipped_size() + response.skipped_not_listed() << ":\n"
              << FormatTable(rows);
    if (response.skipped_not_listed() > 0) {
      std::cout << "... and " << response.skipped_not_listed()
                << " more not listed (the server lists the first " << response.skipped_size()
                << ")\n";
    }
  }
  return 0;
}

// --- catch-up -----------------------------------------------------------------------------------

int CatchUp(Stub& stub) {
  const int limit = absl::GetFlag(FLAGS_limit);
  if (limit < 0) return Fail("--limit must be >= 0 (0: the server's default, 20)");
  const bool json = absl::GetFlag(FLAGS_json);
  v1::RunCatchUpRequest request;
  request.set_app_code(absl::GetFlag(FLAGS_app_code));
  request.set_limit(limit);

  if (!absl::GetFlag(FLAGS_until_done)) {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::RunCatchUpResponse response;
    grpc::Status status = stub.RunCatchUp(&context, request, &response);
    if (!status.ok()) return AdminRpcFailed(status);
    if (json) {
      std::cout << ToJson(response);
    } else {
      std::cout << "found " << response.found() << ", processed " << response.processed()
                << " (projected " << response.projected() << ", dead " << response.dead() << ")\n";
    }
    return 0;
  }

  // The bar's total: what is waiting now. Events arriving meanwhile can push done past it.
  int64_t total = 0;
  {
    v1::GetProjectionStatusRequest status_request;
    status_request.set_app_code(request.app_code());
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::GetProjectionStatusResponse status_response;
    grpc::Status status = stub.GetProjectionStatus(&context, status_request, &status_response);
    if (!status.ok()) return AdminRpcFailed(status);
    total = status_response.unprojected_count();
  }
  const absl::Time start = absl::Now();
  std::optional<ProgressBar> bar;
  if (!json) bar.emplace("catching up");
  int64_t passes = 0;
  v1::RunCatchUpResponse sum;
  for (;;) {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::RunCatchUpResponse pass;
    grpc::Status status = stub.RunCatchUp(&context, request, &pass);
    if (!status.ok()) {
      if (bar) bar->Finish();
      return AdminRpcFailed(status);
    }
    ++passes;
    sum.set_processed(sum.processed() + pass.processed());
    sum.set_found(sum.found() + pass.found());
    sum.set_projected(sum.projected() + pass.projected());
    sum.set_dead(sum.dead() + pass.dead());
    if (json) {
      std::cout << ToJsonLine(pass) << std::flush;
    } else {
      bar->Update(sum.processed(), total);
    }
    if (pass.processed() == 0 && pass.found() == 0) break;
    // Found work but finished none of it (failures waiting for their retry, leases held by a
    // worker): give them time rather than hammering the server with empty passes.
    if (pass.processed() == 0) absl::SleepFor(absl::Seconds(1));
  }
  if (bar) bar->Finish();
  if (!json) {
    std::cout << "catch-up done: " << passes << (passes == 1 ? " pass" : " passes")
              << ", processed " << sum.processed() << " (projected " << sum.projected() << ", dead "
              << sum.dead() << ") in " << FormatShortDuration(absl::Now() - start) << "\n";
  }
  return 0;
}

// --- verify -------------------------------------------------------------------------------------

int Verify(Stub& stub) {
  v1::VerifyGiftWallRequest request;
  request.set_app_code(absl::GetFlag(FLAGS_app_code));
  request.set_user_id(absl::GetFlag(FLAGS_user_id));
  request.set_repair(absl::GetFlag(FLAGS_repair));
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::VerifyGiftWallResponse response;
  grpc::Status status = stub.VerifyGiftWall(&context, request, &response);
  if (!status.ok()) return AdminRpcFailed(status);
  // Drift is reported even when repaired: it means something wrote the walls wrong, which a
  // script should alert on either way.
  const int exit_code = response.drifted() == 0 ? 0 : 4;
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << ToJson(response);
    return exit_code;
  }
  std::cout << "users checked: " << response.users_checked()
            << ", rows checked: " << response.rows_checked()
            << ", drifted rows: " << response.drifted();
  if (request.repair()) {
    std::cout << ", users repaired: " << response.repaired()
              << ", sent-wall rows repaired: " << response.sent_rows_repaired();
  }
  std::cout << "\n";
  if (!response.unverifiable_users().empty()) {
    const int64_t n = response.unverifiable_users_size() + response.unverifiable_not_listed();
    std::vector<int64_t> listed(response.unverifiable_users().begin(),
                                response.unverifiable_users().begin() +
                                    std::min(response.unverifiable_users_size(), kMaxListedUsers));
    std::cout << "unverifiable users, not recomputable from the outbox and the ledger (neither "
                 "compared nor repaired): "
              << absl::StrJoin(listed, ", ");
    if (n > static_cast<int64_t>(listed.size())) {
      std::cout << " ... and " << n - static_cast<int64_t>(listed.size()) << " more";
    }
    std::cout << "\n";
  }
  if (!response.samples().empty()) {
    std::vector<std::vector<std::string>> rows = {
        {"USER", "PERIOD", "GIFT", "SENDER", "FIELD", "EXPECTED", "ACTUAL"}};
    for (const v1::Drift& d : response.samples()) {
      rows.push_back({absl::StrCat(d.user_id()), Cell(d.period()), Cell(d.gift_id()),
                      UserId(d.sender_user_id()), Cell(d.field()), Cell(d.expected()),
                      Cell(d.actual())});
    }
    std::cout << "\n" << FormatTable(rows);
    if (response.drifted() > response.samples_size()) {
      std::cout << "(the first " << response.samples_size() << " of " << response.drifted()
                << " drifted rows)\n";
    }
  }
  return exit_code;
}

// --- rebuild ------------------------------------------------------------------------------------

int Rebuild(Stub& stub) {
  v1::RebuildGiftWallRequest request;
  request.set_app_code(absl::GetFlag(FLAGS_app_code));
  // No deadline: a rebuild takes as long as the app's walls take, and --timeout bounds single
  // calls. Interrupting only stops watching; the server finishes the rebuild.
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReader<v1::RebuildGiftWallProgress>> reader =
      stub.RebuildGiftWall(&context, request);
  const bool json = absl::GetFlag(FLAGS_json);
  std::optional<ProgressBar> bar;
  if (!json) bar.emplace("rebuilding");
  v1::RebuildGiftWallProgress progress;
  v1::RebuildGiftWallProgress last;
  while (reader->Read(&progress)) {
    if (json) {
      std::cout << ToJsonLine(progress) << std::flush;
    } else {
      bar->SetLabel(progress.phase());
      bar->Update(progress.done(), progress.total());
    }
    last = progress;
  }
  grpc::Status status = reader->Finish();
  if (bar) bar->Finish();
  if (!status.ok()) return AdminRpcFailed(status);
  if (!json) {
    // done counts every user handled, the unverifiable ones included.
    std::cout << "rebuild " << (last.phase().empty() ? "finished" : last.phase()) << ": "
              << last.done() << " of " << last.total() << " users";
    if (last.unverifiable() > 0) {
      std::cout << " (" << last.unverifiable()
                << " unverifiable, left alone: not recomputable from the outbox and the ledger; "
                   "see admin verify)";
    }
    std::cout << "\n";
  }
  return 0;
}

// --- settings -----------------------------------------------------------------------------------

void PrintSettings(const v1::AppSettings& settings) {
  std::vector<std::vector<std::string>> rows = {
      {"time zone:", settings.time_zone()},
      {"period walls:", settings.period_kinds().empty()
                            ? "none (the all-time wall only)"
                            : absl::StrJoin(settings.period_kinds(), ",")},
      {"sent wall:", settings.keep_sent_wall() ? "kept" : "not kept"},
      {"changed:",
       absl::StrCat(FormatTimeMs(settings.changed_at_ms()), " by ", Cell(settings.changed_by()))},
  };
  for (const v1::AppTimeZone& zone : settings.time_zones()) {
    if (zone.since_ms() == 0) continue;  // the first zone: all of history
    std::vector<std::string> effect;
    for (const std::string& kind : settings.period_kinds()) {
      auto at = zone.takes_effect_at_ms().find(kind);
      if (at != zone.takes_effect_at_ms().end()) {
        effect.push_back(absl::StrCat(kind, " from ", FormatTimeMs(at->second)));
      }
    }
    rows.push_back(
        {"zone change:", absl::StrCat(zone.time_zone(), " set ", FormatTimeMs(zone.since_ms()),
                                      "; ", absl::StrJoin(effect, ", "))});
  }
  std::vector<std::string> kept;
  for (const std::string& kind : settings.period_kinds()) {
    auto past = settings.retention().find(kind);
    if (past != settings.retention().end()) kept.push_back(absl::StrCat(kind, "=", past->second));
  }
  if (!kept.empty()) rows.push_back({"past periods kept:", absl::StrJoin(kept, ",")});
  std::cout << FormatTable(rows);
}

int Settings(Stub& stub) {
  const std::string app_code = absl::GetFlag(FLAGS_app_code);
  const bool json = absl::GetFlag(FLAGS_json);
  grpc::ClientContext context;
  SetDeadline(&context);
  if (absl::GetFlag(FLAGS_time_zone).empty()) {
    if (!absl::GetFlag(FLAGS_period_kinds).empty() ||
        absl::GetFlag(FLAGS_keep_sent_wall).has_value()) {
      return Fail(
          "--period_kinds and --keep_sent_wall need --time_zone: the settings are replaced as a "
          "whole");
    }
    v1::GetAppSettingsRequest request;
    request.set_app_code(app_code);
    v1::GetAppSettingsResponse response;
    grpc::Status status = stub.GetAppSettings(&context, request, &response);
    if (!status.ok()) return AdminRpcFailed(status);
    if (json) {
      std::cout << ToJson(response);
    } else if (!response.configured()) {
      std::cout << "app " << app_code << " keeps the all-time wall only (no settings)\n";
    } else {
      PrintSettings(response.settings());
    }
    return 0;
  }
  v1::SetAppSettingsRequest request;
  request.set_app_code(app_code);
  request.set_time_zone(absl::GetFlag(FLAGS_time_zone));
  for (const std::string& kind : absl::GetFlag(FLAGS_period_kinds)) {
    request.add_period_kinds(kind);
  }
  if (const std::optional<bool> keep = absl::GetFlag(FLAGS_keep_sent_wall); keep.has_value()) {
    request.set_keep_sent_wall(*keep);
  }
  v1::SetAppSettingsResponse response;
  grpc::Status status = stub.SetAppSettings(&context, request, &response);
  if (!status.ok()) return AdminRpcFailed(status);
  if (json) {
    std::cout << ToJson(response);
    return 0;
  }
  std::cout << (response.changed() ? "changed: " : "unchanged: ") << response.note() << "\n";
  PrintSettings(response.settings());
  if (response.rebuild_needed()) {
    std::cout << "to fold the earlier events in: giftwall admin rebuild --app_code=" << app_code
              << "\n";
  }
  return 0;
}

}  // namespace

int RunAdmin(absl::string_view subcommand) {
  static constexpr std::pair<absl::string_view, int (*)(Stub&)> kSubcommands[] = {
      {"status", ShowStatus}, {"event", ShowEvent}, {"dead", ListDead},   {"requeue", Requeue},
      {"catch-up", CatchUp},  {"verify", Verify},   {"rebuild", Rebuild}, {"settings", Settings},
  };
  for (const auto& [name, run] : kSubcommands) {
    if (name != subcommand) continue;
    if (absl::GetFlag(FLAGS_app_code).empty()) return Fail("--app_code is required");
    std::unique_ptr<Stub> stub = v1::ProjectionAdminService::NewStub(Channel());
    return run(*stub);
  }
  if (subcommand.empty()) return Fail(absl::StrCat("admin needs a subcommand\n", kAdminUsage));
  return Fail(absl::StrCat("unknown admin subcommand \"", subcommand, "\"\n", kAdminUsage));
}

namespace {

int ImportCatalog(v1::GiftWallService::Stub& stub, const std::string& app_code) {
  absl::StatusOr<std::string> json = ReadFlagFile("file", absl::GetFlag(FLAGS_file));
  if (!json.ok()) return Fail(json.status().message());
  if (json->empty()) return Fail("admin catalog import needs --file=catalog.json");
  v1::PutGiftCatalogRequest request;
  if (auto status = google::protobuf::util::JsonStringToMessage(*json, &request); !status.ok()) {
    return Fail(absl::StrCat("--file: ", status.ToString()));
  }
  if (!request.app_code().empty() && request.app_code() != app_code) {
    return Fail(absl::StrCat("--file is for app ", request.app_code(), ", not ", app_code));
  }
  request.set_app_code(app_code);
  // Only the flag replaces: a file's own "replace" never removes gifts unasked.
  request.set_replace(absl::GetFlag(FLAGS_replace));
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::PutGiftCatalogResponse response;
  grpc::Status status = stub.PutGiftCatalog(&context, request, &response);
  if (!status.ok()) return RpcFailed(status);
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << ToJson(response);
  } else {
    std::cout << "wrote " << response.upserted() << " gifts, removed " << response.removed()
              << "; the catalogue of " << app_code << " holds " << response.catalog_gifts() << "\n";
  }
  return 0;
}

int ListCatalog(v1::GiftWallService::Stub& stub, const std::string& app_code) {
  v1::ListGiftCatalogRequest request;
  request.set_app_code(app_code);
  request.set_page_size(absl::GetFlag(FLAGS_page_size));
  request.set_page_token(absl::GetFlag(FLAGS_page_token));
  return Paged<v1::ListGiftCatalogRequest, v1::ListGiftCatalogResponse>(
      request,
      [&stub](grpc::ClientContext* context, const v1::ListGiftCatalogRequest& r,
              v1::ListGiftCatalogResponse* page) { return stub.ListGiftCatalog(context, r, page); },
      [](const v1::ListGiftCatalogResponse& page, v1::ListGiftCatalogResponse* all) {
        all->mutable_items()->MergeFrom(page.items());
        all->set_next_page_token(page.next_page_token());
      },
      [&app_code](const v1::ListGiftCatalogResponse& page) {
        if (page.items().empty()) return absl::StrCat("app ", app_code, " has no gift catalogue\n");
        std::vector<std::vector<std::string>> rows = {
            {"ORDER", "GIFT", "PRICE", "SERIES", "TIER", "STATUS", "NAME"}};
        for (const v1::GiftCatalogItem& item : page.items()) {
          rows.push_back({absl::StrCat(item.sort_order()), item.gift_id(),
                          absl::StrCat(item.price_coins()), Cell(item.series()), Cell(item.tier()),
                          item.status(), Cell(item.name())});
        }
        std::string out = absl::StrCat(FormatTable(rows), page.items_size(), " gifts\n");
        if (!page.next_page_token().empty()) {
          absl::StrAppend(&out, "more: --page_token=", page.next_page_token(), "\n");
        }
        return out;
      });
}

}  // namespace

int RunCatalog(absl::string_view action) {
  const std::string app_code = absl::GetFlag(FLAGS_app_code);
  if (app_code.empty()) return Fail("--app_code is required");
  std::unique_ptr<v1::GiftWallService::Stub> stub = v1::GiftWallService::NewStub(Channel());
  if (action == "import") return ImportCatalog(*stub, app_code);
  if (action == "list") return ListCatalog(*stub, app_code);
  return Fail(
      absl::StrCat("admin catalog needs import or list, not \"", action, "\"\n", kAdminUsage));
}

}  // namespace giftwall::client
