#include "server/transport/admin_service.h"

#include <functional>
#include <thread>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "glog/logging.h"
#include "server/common/status_macros.h"
#include "server/domain/app_code.h"
#include "server/domain/page_token.h"
#include "server/domain/projection.h"
#include "server/domain/text.h"
#include "server/transport/audit.h"
#include "server/transport/call_log.h"
#include "server/transport/gift_wall_service.h"
#include "server/transport/grpc_status.h"

namespace giftwall::transport {

namespace {

absl::Status Invalid(absl::string_view message) { return absl::InvalidArgumentError(message); }

// The event id as the ledger keys it: byte for byte, never trimmed.
absl::Status CheckEventId(absl::string_view event_id) {
  if (domain::TrimSpace(event_id).empty()) return Invalid("event_id is required (it is blank)");
  return absl::OkStatus();
}

// An id in an answer: as text, C-escaped if it is not valid UTF-8 (a proto3 string must be), and
// then exactly as bytes beside it. Ids are bytes in the ledger: the scan writes any id it finds
// dead.
template <typename Message>
void SetEventId(const std::string& id, Message* message) {
  if (domain::IsValidUtf8(id)) {
    message->set_event_id(id);
  } else {
    message->set_event_id(absl::CHexEscape(id));
    message->set_raw_event_id(id);
  }
}

// An id in a log line or an error message.
std::string Printable(absl::string_view id) {
  return domain::IsValidUtf8(id) ? std::string(id) : absl::CHexEscape(id);
}

// Answers an admitted admin call that is refused (bad arguments), and audit-logs it.
grpc::ServerUnaryReactor* Refuse(grpc::CallbackServerContext* context, const AuditEntry& audit,
                                 grpc::Status status) {
  audit.Log(status);
  return FinishNow(context, std::move(status));
}

// Streams a rebuild's progress until it ends or the client goes away; the rebuild itself runs
// on the RebuildRunner's thread and does not stop with the stream. The blocking work (taking
// the rebuild lock, waiting for progress) runs on this stream's own thread: admin streams are
// few, and gRPC's threads must not block.
class RebuildStream final : public grpc::ServerWriteReactor<v1::RebuildGiftWallProgress> {
 public:
  RebuildStream(worker::RebuildRunner& rebuilds, AuditEntry audit,
                std::shared_ptr<const CallContext> call)
      : rebuilds_(rebuilds), audit_(std::move(audit)), call_(std::move(call)) {
    thread_ = std::thread([this] {
      const logging::ScopedLogContext scope(call_ != nullptr ? &call_->log : nullptr);
      Run();
    });
  }

  void OnWriteDone(bool ok) override {
    absl::MutexLock lock(&mu_);
    write_pending_ = false;
    write_ok_ = ok;
  }
  void OnCancel() override {
    absl::MutexLock lock(&mu_);
    cancelled_ = true;
  }
  void OnDone() override {
    // Normally the stream's thread has returned from Finish() and is exiting; gRPC may also run
    // this inline from that very Finish() call.
    if (thread_.get_id() == std::this_thread::get_id()) {
      thread_.detach();
    } else {
      thread_.join();
    }
    delete this;
  }

 private:
  void Run() {
    absl::StatusOr<std::shared_ptr<worker::RebuildJob>> job = rebuilds_.Start(audit_.app_code);
    if (!job.ok()) {
      End(ToGrpcStatus(job.status()));
      return;
    }
    uint64_t seen = 0;
    worker::RebuildProgress progress;
    for (;;) {
      const bool changed = (*job)->WaitForChange(&seen, absl::Milliseconds(500), &progress);
      if (Cancelled()) break;
      if (changed && !Write(progress)) break;
      if (progress.finished) {
        End(ToGrpcStatus(progress.result));
        return;
      }
    }
    End(grpc::Status(grpc::StatusCode::CANCELLED,
                     "the client went away; the rebuild goes on in the server"));
  }

  void End(grpc::Status status) {
    audit_.Log(status);
    Finish(std::move(status));
  }

  bool Cancelled() {
    absl::MutexLock lock(&mu_);
    return cancelled_;
  }

  // Sends one progress message and waits until it is written; false if the stream broke.
  bool Write(const worker::RebuildProgress& progress) {
    message_.set_phase(progress.phase);
    message_.set_done(progress.done);
    message_.set_total(progress.total);
    message_.set_unverifiable(progress.unverifiable);
    {
      absl::MutexLock lock(&mu_);
      write_pending_ = true;
    }
    StartWrite(&message_);
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](RebuildStream* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu_) { return !s->write_pending_; },
        this));
    return write_ok_ && !cancelled_;
  }

  worker::RebuildRunner& rebuilds_;
  const AuditEntry audit_;
  const std::shared_ptr<const CallContext> call_;  // its log context, for the stream's thread
  v1::RebuildGiftWallProgress message_;
  absl::Mutex mu_;
  bool write_pending_ ABSL_GUARDED_BY(mu_) = false;
  bool write_ok_ ABSL_GUARDED_BY(mu_) = true;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

// An app's settings as the API gives them, with when each zone takes effect and this server's
// retention.
void FillSettings(const domain::AppSettings& settings, const domain::PeriodRetention& retention,
                  v1::AppSettings* out) {
  out->set_time_zone(settings.zone());
  for (domain::PeriodKind kind : settings.kinds) {
    out->add_period_kinds(std::string(domain::PeriodKindName(kind)));
  }
  out->set_changed_at_ms(settings.changed_at_ms);
  out->set_changed_by(settings.changed_by);
  out->set_keep_sent_wall(settings.keep_sent_wall);
  // A zone whose data is missing here still shows, without when it takes effect.
  absl::StatusOr<domain::AppCalendar> calendar = domain::AppCalendar::Make(settings.zones);
  for (size_t i = 0; i < settings.zones.size(); ++i) {
    v1::AppTimeZone* zone = out->add_time_zones();
    zone->set_time_zone(settings.zones[i].zone);
    zone->set_since_ms(i == 0 ? 0 : settings.zones[i].since_ms);
    if (i == 0 || !calendar.ok()) continue;
    for (domain::PeriodKind kind : domain::kPeriodKinds) {
      (*zone->mutable_takes_effect_at_ms())[std::string(domain::PeriodKindName(kind))] =
          calendar->SwitchMs(kind, i);
    }
  }
  for (const auto& [kind, past] : retention.past) {
    (*out->mutable_retention())[std::string(domain::PeriodKindName(kind))] = past;
  }
}

// A stream refused before it started.
class RejectedStream final : public grpc::ServerWriteReactor<v1::RebuildGiftWallProgress> {
 public:
  explicit RejectedStream(grpc::Status status) { Finish(std::move(status)); }
  void OnDone() override { delete this; }
};

}  // namespace

grpc::Status AdminService::Admit(const grpc::ServerContextBase& context, absl::string_view method,
                                 const std::string& app_code, AuditEntry* audit) const {
  audit->method = std::string(method);
  audit->app_code = app_code;
  grpc::Status status = access_.Admit(context, Role::kAdmin, &audit->admission);
  if (status.ok()) {
    absl::StatusOr<std::string> normalized = domain::NormalizeAppCode(app_code);
    if (normalized.ok()) {
      audit->app_code = *std::move(normalized);
      status = audit->admission.MayTouch({audit->app_code});
    } else {
      status = InvalidArgument("", normalized.status());
    }
  }
  if (!status.ok()) audit->Log(status);
  return status;
}

grpc::ServerUnaryReactor* AdminService::Audited(grpc::CallbackServerContext* context,
                                                absl::string_view method,
                                                const std::string& app_code,
                                                const Prepare& prepare) const {
  return Audited(
      context, method, app_code,
      PrepareAs([&prepare](const std::string& app, const std::string&) { return prepare(app); }));
}

grpc::ServerUnaryReactor* AdminService::Audited(grpc::CallbackServerContext* context,
                                                absl::string_view method,
                                                const std::string& app_code,
                                                const PrepareAs& prepare) const {
  AuditEntry audit;
  if (grpc::Status s = Admit(*context, method, app_code, &audit); !s.ok()) {
    return FinishNow(context, s);
  }
  absl::StatusOr<AdminWork> work = prepare(audit.app_code, audit.admission.caller());
  if (!work.ok()) return Refuse(context, audit, InvalidArgument("", work.status()));
  return Offload(context, workers_, audit.Wrap(*std::move(work)));
}

grpc::ServerUnaryReactor* AdminService::GetProjectionStatus(
    grpc::CallbackServerContext* context, const v1::GetProjectionStatusRequest* request,
    v1::GetProjectionStatusResponse* response) {
  const CallScope scope(context);
  return Audited(context, "GetProjectionStatus", request->app_code(),
                 [this, response](const std::string& app_code) -> absl::StatusOr<AdminWork> {
                   return [this, app_code, response] {
                     absl::StatusOr<storage::ProjectionStatus> status = recovery_.Status(app_code);
                     if (!status.ok()) return ToGrpcStatus(status.status());
                     response->set_done_count(status->done);
                     response->set_failed_count(status->failed);
                     response->set_dead_count(status->dead);
                     response->set_processing_count(status->processing);
                     response->set_unprojected_count(status->unprojected);
                     response->set_oldest_unprojected_age_ms(status->oldest_unprojected_age_ms);
                     response->set_oldest_dead_age_ms(status->oldest_dead_age_ms);
                     response->set_recovered_by_scan_total(status->recovered_by_scan);
                     return grpc::Status::OK;
                   };
                 });
}

grpc::ServerUnaryReactor* AdminService::GetEventStatus(grpc::CallbackServerContext* context,
                                                       const v1::GetEventStatusRequest* request,
                                                       v1::GetEventStatusResponse* response) {
  const CallScope scope(context);
  return Audited(
      context, "GetEventStatus", request->app_code(),
      [this, request, response](const std::string& app_code) -> absl::StatusOr<AdminWork> {
        if (!request->raw_event_id().empty() && !request->event_id().empty()) {
          return Invalid("give event_id or raw_event_id, not both");
        }
        const std::string& event_id =
            request->raw_event_id().empty() ? request->event_id() : request->raw_event_id();
        RETURN_IF_ERROR(CheckEventId(event_id));
        return [this, app_code, event_id, response] {
          absl::StatusOr<std::optional<storage::EventStatus>> event =
              ledger_.Event(app_code, event_id);
          if (!event.ok()) return ToGrpcStatus(event.status());
          if (!event->has_value()) {
            return grpc::Status(
                grpc::StatusCode::NOT_FOUND,
                absl::StrCat("event \"", Printable(event_id), "\" of app_code ", app_code,
                             " has no ledger row: it was never delivered or scanned, "
                             "or it is not a WalletGiftDebited event"));
          }
          const storage::EventStatus& e = **event;
          response->set_status(std::string(domain::LedgerStatusName(e.status)));
          response->set_retry_count(static_cast<int32_t>(e.retry_count));
          response->set_requeue_count(static_cast<int32_t>(e.requeue_count));
          response->set_projected_by(e.projected_by);
          response->set_locked_by(e.locked_by);
          response->set_locked_until_ms(e.locked_until_ms);
          response->set_next_attempt_at_ms(e.next_attempt_at_ms);
          response->set_last_error(e.last_error);
          response->set_processed_at_ms(e.processed_at_ms);
          response->set_target_user_id(e.target_user_id);
          response->set_created_at_ms(e.created_at_ms);
          response->set_updated_at_ms(e.updated_at_ms);
          return grpc::Status::OK;
        };
      });
}

grpc::ServerUnaryReactor* AdminService::ListDeadEvents(grpc::CallbackServerContext* context,
                                                       const v1::ListDeadEventsRequest* request,
                                                       v1::ListDeadEventsResponse* response) {
  const CallScope scope(context);
  return Audited(
      context, "ListDeadEvents", request->app_code(),
      [this, request, response](const std::string& app_code) -> absl::StatusOr<AdminWork> {
        if (request->page_size() < 0) {
          return Invalid(absl::StrCat("page_size must be >= 0, got ", request->page_size()));
        }
        if (request->error_contains().size() > domain::kMaxLastErrorBytes) {
          return Invalid(absl::StrCat("error_contains is ", request->error_contains().size(),
                                      " bytes, at most ", domain::kMaxLastErrorBytes, " allowed"));
        }
        const int page_size = request->page_size() == 0
                                  ? kDefaultPageSize
                                  : std::min(request->page_size(), kMaxPageSize);
        std::string after;
        if (!request->page_token().empty()) {
          ASSIGN_OR_RETURN(domain::DeadEventPageToken token,
                           domain::DecodeDeadEventPageToken(request->page_token(), app_code,
                                                            request->error_contains()));
          after = std::move(token.event_id);
        }
        return [this, app_code, error = request->error_contains(), after = std::move(after),
                page_size, response] {
          absl::StatusOr<storage::DeadEventPage> page =
              ledger_.ListDead(app_code, error, after, page_size);
          if (!page.ok()) return ToGrpcStatus(page.status());
          for (const storage::DeadEvent& e : page->events) {
            v1::DeadEvent* out = response->add_events();
            SetEventId(e.event_id, out);
            out->set_last_error(e.last_error);
            out->set_retry_count(static_cast<int32_t>(e.retry_count));
            out->set_requeue_count(static_cast<int32_t>(e.requeue_count));
            out->set_target_user_id(e.target_user_id);
            out->set_updated_at_ms(e.updated_at_ms);
          }
          for (const storage::DeadErrorGroup& g : page->groups) {
            v1::DeadErrorGroup* out = response->add_groups();
            out->set_last_error(g.last_error);
            out->set_count(g.count);
          }
          if (page->has_more) {
            response->set_next_page_token(
                domain::EncodeDeadEventPageToken({app_code, error, page->events.back().event_id}));
          }
          return grpc::Status::OK;
        };
      });
}

grpc::ServerUnaryReactor* AdminService::RequeueDeadEvents(
    grpc::CallbackServerContext* context, const v1::RequeueDeadEventsRequest* request,
    v1::RequeueDeadEventsResponse* response) {
  const CallScope scope(context);
  return Audited(
      context, "RequeueDeadEvents", request->app_code(),
      [this, context, request, response](const std::string& app_code) -> absl::StatusOr<AdminWork> {
        const int given = request->event_ids_size() + request->raw_event_ids_size();
        if (given == 0 && domain::TrimSpace(request->error_contains()).empty()) {
          return Invalid(
              "give event_ids or a non-empty error_contains: requeueing every dead event at "
              "once is not allowed");
        }
        if (given > kMaxRequeue) {
          return Invalid(absl::StrCat("event_ids and raw_event_ids have ", given,
                                      " entries, at most ", kMaxRequeue, " allowed"));
        }
        std::vector<std::string> ids;
        ids.reserve(static_cast<size_t>(given));
        for (const auto& [field, list] : {std::pair{"event_ids", &request->event_ids()},
                                          std::pair{"raw_event_ids", &request->raw_event_ids()}}) {
          for (int i = 0; i < list->size(); ++i) {
            if (domain::TrimSpace(list->Get(i)).empty()) {
              return Invalid(absl::StrCat(field, "[", i, "] is blank"));
            }
            ids.push_back(list->Get(i));
          }
        }
        projection::RequeueRequest requeue{
            app_code,           std::move(ids),      request->error_contains(),
            request->dry_run(), size_t{kMaxRequeue}, size_t{kMaxSkippedListed}};
        return [this, context, requeue = std::move(requeue), response] {
          absl::StatusOr<projection::RequeueReport> report =
              recovery_.RequeueDeadEvents(requeue, [context] { return context->IsCancelled(); });
          if (!report.ok()) return ToGrpcStatus(report.status());
          response->set_matched(report->matched);
          response->set_requeued(report->requeued);
          for (const auto& [id, reason] : report->skipped) {
            v1::SkippedEvent* skipped = response->add_skipped();
            SetEventId(id, skipped);
            skipped->set_reason(reason);
          }
          response->set_skipped_not_listed(report->skipped_not_listed);
          return grpc::Status::OK;
        };
      });
}

grpc::ServerUnaryReactor* AdminService::RunCatchUp(grpc::CallbackServerContext* context,
                                                   const v1::RunCatchUpRequest* request,
                                                   v1::RunCatchUpResponse* response) {
  const CallScope scope(context);
  return Audited(
      context, "RunCatchUp", request->app_code(),
      [this, request, response](const std::string& app_code) -> absl::StatusOr<AdminWork> {
        if (request->limit() < 0) {
          return Invalid(absl::StrCat("limit must be >= 0, got ", request->limit()));
        }
        return [this, app_code, limit = request->limit(), response] {
          absl::StatusOr<projection::CatchUpTotals> totals = recovery_.CatchUpNow(app_code, limit);
          if (!totals.ok()) return ToGrpcStatus(totals.status());
          response->set_processed(totals->processed);
          response->set_found(totals->found);
          response->set_projected(totals->projected);
          response->set_dead(totals->dead);
          return grpc::Status::OK;
        };
      });
}

grpc::ServerUnaryReactor* AdminService::VerifyGiftWall(grpc::CallbackServerContext* context,
                                                       const v1::VerifyGiftWallRequest* request,
                                                       v1::VerifyGiftWallResponse* response) {
  const CallScope scope(context);
  return Audited(
      context, "VerifyGiftWall", request->app_code(),
      [this, context, request, response](const std::string& app_code) -> absl::StatusOr<AdminWork> {
        if (request->user_id() < 0) {
          return Invalid(
              absl::StrCat("user_id must be >= 0 (0: every user), got ", request->user_id()));
        }
        return [this, context, app_code, user_id = request->user_id(), repair = request->repair(),
                response] {
          absl::StatusOr<projection::VerifyReport> report = audit_.VerifyAndRepair(
              app_code, user_id, repair, [context] { return context->IsCancelled(); });
          if (!report.ok()) return ToGrpcStatus(report.status());
          response->set_users_checked(report->users_checked);
          response->set_rows_checked(report->rows_checked);
          response->set_drifted(report->drifted);
          const size_t listed =
              std::min(report->unverifiable_users.size(), size_t{kMaxUnverifiableListed});
          for (size_t i = 0; i < listed; ++i) {
            response->add_unverifiable_users(report->unverifiable_users[i]);
          }
          response->set_unverifiable_not_listed(
              static_cast<int64_t>(report->unverifiable_users.size() - listed));
          for (const projection::WallDrift& d : report->samples) {
            v1::Drift* out = response->add_samples();
            out->set_user_id(d.user_id);
            out->set_gift_id(d.difference.gift_id);
            out->set_sender_user_id(d.difference.sender_user_id);
            out->set_field(d.difference.field);
            out->set_expected(d.difference.expected);
            out->set_actual(d.difference.actual);
            out->set_period(d.difference.period);
          }
          response->set_repaired(report->repaired);
          response->set_sent_rows_repaired(report->sent_repaired);
          return grpc::Status::OK;
        };
      });
}

grpc::ServerWriteReactor<v1::RebuildGiftWallProgress>* AdminService::RebuildGiftWall(
    grpc::CallbackServerContext* context, const v1::RebuildGiftWallRequest* request) {
  const CallScope scope(context);
  // The stream learns of a departed client through OnCancel.
  AuditEntry audit;
  if (grpc::Status s = Admit(*context, "RebuildGiftWall", request->app_code(), &audit); !s.ok()) {
    return new RejectedStream(std::move(s));
  }
  return new RebuildStream(rebuilds_, std::move(audit), CallLog::Find(context));
}

grpc::ServerUnaryReactor* AdminService::SetAppSettings(grpc::CallbackServerContext* context,
                                                       const v1::SetAppSettingsRequest* request,
                                                       v1::SetAppSettingsResponse* response) {
  const CallScope scope(context);
  return Audited(
      context, "SetAppSettings", request->app_code(),
      PrepareAs([this, request, response](const std::string& app_code,
                                          const std::string& caller) -> absl::StatusOr<AdminWork> {
        domain::SettingsRequest change{
            request->time_zone(),
            {request->period_kinds().begin(), request->period_kinds().end()},
            caller.empty() ? "(anyone: no access policy)" : caller,
            request->has_keep_sent_wall() ? std::optional<bool>(request->keep_sent_wall())
                                          : std::nullopt};
        // The zone and the kinds are checked here, so that a bad one is refused at once.
        RETURN_IF_ERROR(domain::DecideSettingsChange(std::nullopt, change, 0).status());
        return [this, app_code, change = std::move(change), response] {
          absl::StatusOr<domain::SettingsChange> decided = settings_.Set(app_code, change);
          if (!decided.ok()) return ToGrpcStatus(decided.status());
          FillSettings(decided->settings, retention_, response->mutable_settings());
          response->set_changed(decided->changed);
          response->set_rebuild_needed(decided->rebuild_needed);
          response->set_note(decided->note);
          return grpc::Status::OK;
        };
      }));
}

grpc::ServerUnaryReactor* AdminService::GetAppSettings(grpc::CallbackServerContext* context,
                                                       const v1::GetAppSettingsRequest* request,
                                                       v1::GetAppSettingsResponse* response) {
  const CallScope scope(context);
  return Audited(context, "GetAppSettings", request->app_code(),
                 [this, response](const std::string& app_code) -> absl::StatusOr<AdminWork> {
                   return [this, app_code, response] {
                     absl::StatusOr<std::optional<domain::AppSettings>> settings =
                         settings_.Get(app_code);
                     if (!settings.ok()) return ToGrpcStatus(settings.status());
                     response->set_configured(settings->has_value());
                     if (settings->has_value()) {
                       FillSettings(**settings, retention_, response->mutable_settings());
                     }
                     return grpc::Status::OK;
                   };
                 });
}

}  // namespace giftwall::transport
