#include "server/transport/gift_wall_service.h"

#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/common/status_macros.h"
#include "server/domain/app_code.h"
#include "server/domain/envelope.h"
#include "server/domain/gift_catalog.h"
#include "server/domain/page_token.h"
#include "server/domain/sponsor.h"
#include "server/domain/text.h"
#include "server/domain/wall_page.h"
#include "server/transport/audit.h"
#include "server/transport/call_log.h"
#include "server/transport/grpc_status.h"

namespace giftwall::transport {
namespace {

v1::ProjectionOutcome ToProto(domain::ProjectionOutcome outcome) {
  switch (outcome) {
    case domain::ProjectionOutcome::kProjected:
      return v1::PROJECTION_OUTCOME_PROJECTED;
    case domain::ProjectionOutcome::kAlreadyProjected:
      return v1::PROJECTION_OUTCOME_ALREADY_PROJECTED;
    case domain::ProjectionOutcome::kIgnored:
      return v1::PROJECTION_OUTCOME_IGNORED;
    case domain::ProjectionOutcome::kDead:
      return v1::PROJECTION_OUTCOME_DEAD;
    case domain::ProjectionOutcome::kLeased:
      return v1::PROJECTION_OUTCOME_LEASED;
  }
  return v1::PROJECTION_OUTCOME_UNSPECIFIED;
}

void Fill(const domain::ProjectionResult& result, v1::ProjectMessageResponse* response) {
  response->set_outcome(ToProto(result.outcome));
  response->set_detail(result.detail);
}

void FillIgnored(const v1::WalletOutboxMessage& message, v1::ProjectMessageResponse* response) {
  response->set_outcome(v1::PROJECTION_OUTCOME_IGNORED);
  response->set_detail(absl::StrCat("event type \"", message.event_type(),
                                    "\" is not projected (only ", domain::kWalletGiftDebited, ")"));
}

// Hands `unit` to the engine and finishes the call once its group has committed: with `fill`'s
// answer, or with the status that kept the unit from being projected.
grpc::ServerUnaryReactor* SubmitUnit(
    grpc::CallbackServerContext* context, projection::ProjectionEngine& engine,
    projection::ProjectionUnit unit,
    std::function<void(const std::vector<domain::ProjectionResult>&)> fill) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  engine.Submit(
      projection::Submission{std::move(unit),
                             [reactor, fill = std::move(fill)](projection::UnitResult result) {
                               if (!result.ok()) {
                                 reactor->Finish(ToGrpcStatus(result.status()));
                                 return;
                               }
                               fill(*result);
                               reactor->Finish(grpc::Status::OK);
                             },
                             [context] { return StillWanted(context); }});
  return reactor;
}

absl::StatusOr<domain::GiftEvent> ValidateMessage(const v1::WalletOutboxMessage& message) {
  return domain::ValidateGiftEnvelope(
      domain::RawOutboxMessage{message.app_code(), message.event_id(), message.event_type(),
                               message.payload_json(), message.occurred_at_ms()});
}

std::optional<domain::WallSort> ToDomain(v1::GiftWallSort sort) {
  switch (sort) {
    case v1::GIFT_WALL_SORT_UNSPECIFIED:
    case v1::GIFT_WALL_SORT_COUNT_DESC:
      return domain::WallSort::kCountDesc;
    case v1::GIFT_WALL_SORT_LAST_RECEIVED_DESC:
      return domain::WallSort::kLastReceivedDesc;
    case v1::GIFT_WALL_SORT_COINS_DESC:
      return domain::WallSort::kCoinsDesc;
    case v1::GIFT_WALL_SORT_FIRST_RECEIVED_ASC:
      return domain::WallSort::kFirstReceivedAsc;
    case v1::GIFT_WALL_SORT_CATALOG:
      return domain::WallSort::kCatalog;
    default:
      return std::nullopt;
  }
}

void Fill(const domain::SenderStats& sender, v1::GiftWallSender* out) {
  out->set_user_id(sender.user_id);
  out->set_sent_count(sender.sent_count);
  out->set_sent_coins(sender.sent_coins);
  out->set_first_sent_at_ms(sender.first_sent_at_ms);
  out->set_last_sent_at_ms(sender.last_sent_at_ms);
}

void Fill(const domain::Period& period, v1::GiftWallPeriod* out) {
  out->set_kind(std::string(domain::PeriodKindName(period.kind)));
  out->set_key(period.key);
  out->set_start_ms(period.start_ms);
  out->set_end_ms(period.end_ms);
}

void Fill(const domain::WallItem& item, v1::GiftWallItem* out) {
  out->set_gift_id(item.gift_id);
  out->set_gift_count(item.gift_count);
  out->set_total_coins(item.total_coins);
  out->set_first_received_at_ms(item.first_received_at_ms);
  out->set_last_received_at_ms(item.last_received_at_ms);
  out->set_sender_count(item.sender_count);
  if (item.top_sender.has_value()) Fill(*item.top_sender, out->mutable_top_sender());
  out->set_first_sender_user_id(item.first_sender_user_id);
  out->set_lit(item.lit);
  const domain::CatalogGift* catalog = item.catalog;
  // The catalogue's name and icon win over the events' snapshot, unless it leaves them empty.
  out->set_gift_name(catalog != nullptr && !catalog->name.empty() ? catalog->name : item.gift_name);
  out->set_gift_icon(catalog != nullptr && !catalog->icon.empty() ? catalog->icon : item.gift_icon);
  if (catalog == nullptr) return;
  out->set_price_coins(catalog->price_coins);
  out->set_series(catalog->series);
  out->set_tier(catalog->tier);
  out->set_gift_unlit_icon(catalog->unlit_icon);
}

void Fill(const domain::WallSummary& summary, v1::GiftWallSummary* out) {
  out->set_distinct_gifts(summary.distinct_gifts);
  out->set_total_gift_count(summary.total_gift_count);
  out->set_total_coins(summary.total_coins);
  out->set_last_received_at_ms(summary.last_received_at_ms);
  out->set_lit_gifts(summary.lit_gifts);
  out->set_catalogue_gifts(summary.catalogue_gifts);
  out->set_lit_retired_gifts(summary.lit_retired_gifts);
  out->set_lit_uncatalogued_gifts(summary.lit_uncatalogued_gifts);
  for (const domain::SeriesSummary& series : summary.series) {
    v1::GiftWallSeries* s = out->add_series();
    s->set_series(series.series);
    s->set_lit_gifts(series.lit_gifts);
    s->set_catalogue_gifts(series.catalogue_gifts);
  }
}

// The rows a page holds: `requested`, 0 meaning `default_size`, clamped to `most`.
// INVALID_ARGUMENT if negative.
absl::StatusOr<int> PageSizeOf(int32_t requested, int default_size, int most) {
  if (requested < 0) {
    return absl::InvalidArgumentError(absl::StrCat("page_size must be >= 0, got ", requested));
  }
  return requested == 0 ? default_size : std::min<int>(requested, most);
}

// The checks every wall read shares: a valid app_code, a user_id > 0 and, for a paged read
// (`limit` not null), a page_size >= 0. Returns the normalized app_code and the page size.
absl::Status CheckWallRead(absl::string_view raw_app_code, absl::string_view user_field,
                           int64_t user_id, int32_t page_size, std::string* app_code, int* limit) {
  absl::StatusOr<std::string> code = domain::NormalizeAppCode(raw_app_code);
  if (!code.ok()) return code.status();
  if (user_id <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(user_field, " must be > 0, got ", user_id));
  }
  if (limit != nullptr) {
    absl::StatusOr<int> size = PageSizeOf(page_size, kDefaultPageSize, kMaxPageSize);
    if (!size.ok()) return size.status();
    *limit = *size;
  }
  *app_code = *std::move(code);
  return absl::OkStatus();
}

// A request's gift_id, trimmed as gift ids are stored (DESIGN §2.5); empty only if not
// `required`. INVALID_ARGUMENT if blank when required, or over 64 bytes.
absl::StatusOr<std::string> CheckGiftId(absl::string_view raw, bool required) {
  std::string gift_id(domain::TrimSpace(raw));
  if (gift_id.empty() && required) return absl::InvalidArgumentError("gift_id is required");
  if (gift_id.size() > domain::kMaxGiftIdBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gift_id is ", gift_id.size(), " bytes, at most ", domain::kMaxGiftIdBytes, " allowed"));
  }
  return gift_id;
}

// A sender shown masked (DESIGN §2.18): no id, counts as they are.
void Mask(v1::GiftWallSender* sender) {
  sender->set_user_id(0);
  sender->set_anonymous(true);
}

// Masks, in `out` (filled from `item` of `owner`'s wall), the top and first sender if they hid
// and `viewer` may not see them as they are (DESIGN §2.18). The wall read said who hid.
void MaskForViewer(const domain::WallItem& item, const domain::Viewer& viewer, int64_t owner,
                   v1::GiftWallItem* out) {
  if (item.top_sender.has_value() && item.top_sender_hidden &&
      !domain::SeesAsIs(viewer, owner, item.top_sender->user_id)) {
    Mask(out->mutable_top_sender());
  }
  if (item.first_sender_hidden && !domain::SeesAsIs(viewer, owner, item.first_sender_user_id)) {
    out->set_first_sender_user_id(0);
    out->set_first_sender_anonymous(true);
  }
}

// The senders a reply shows, to be masked for its viewer (DESIGN §2.18): the wall's owner, each
// sender and a moderator see them as they are; to anyone else, one who hid shows as user 0,
// anonymous, with their counts.
class SenderMasks {
 public:
  SenderMasks(domain::Viewer viewer, int64_t owner) : viewer_(viewer), owner_(owner) {}

  void Add(absl::string_view gift_id, v1::GiftWallSender* sender) {
    Add(gift_id, sender->user_id(), [sender] { Mask(sender); });
  }

  // Masks the senders the viewer may not see: `hidden` says who hid.
  absl::Status Apply(const domain::HiddenSendersFn& hidden) {
    ASSIGN_OR_RETURN(const std::vector<bool> masked,
                     domain::MaskedFor(viewer_, owner_, shown_, hidden));
    for (size_t i = 0; i < masked.size(); ++i) {
      if (masked[i]) mask_[i]();
    }
    return absl::OkStatus();
  }

 private:
  void Add(absl::string_view gift_id, int64_t sender, std::function<void()> mask) {
    if (sender == 0) return;
    shown_.push_back(domain::ShownSender{std::string(gift_id), sender});
    mask_.push_back(std::move(mask));
  }

  const domain::Viewer viewer_;
  const int64_t owner_;
  std::vector<domain::ShownSender> shown_;
  std::vector<std::function<void()>> mask_;
};

}  // namespace

grpc::ServerUnaryReactor* GiftWallService::ProjectMessage(grpc::CallbackServerContext* context,
                                                          const v1::ProjectMessageRequest* request,
                                                          v1::ProjectMessageResponse* response) {
  const CallScope scope(context);
  Admission admission;  // held until the call is answered
  if (grpc::Status s = access_.Admit(*context, Role::kRelay, &admission); !s.ok()) {
    return FinishNow(context, s);
  }
  if (const size_t bytes = request->ByteSizeLong(); bytes > kMaxRequestBytes) {
    return FinishNow(context, InvalidArgument("", absl::InvalidArgumentError(absl::StrFormat(
                                                      "the request is %d bytes, at most %d allowed",
                                                      bytes, kMaxRequestBytes))));
  }
  if (!request->has_message()) {
    return FinishNow(context,
                     InvalidArgument("", absl::InvalidArgumentError("message is required")));
  }
  const v1::WalletOutboxMessage& message = request->message();
  if (!domain::IsGiftEvent(message.event_type())) {
    FillIgnored(message, response);
    return FinishNow(context, grpc::Status::OK);
  }
  absl::StatusOr<domain::GiftEvent> event = ValidateMessage(message);
  if (!event.ok()) return FinishNow(context, InvalidArgument("message", event.status()));
  if (grpc::Status s = admission.MayTouch({event->app_code}); !s.ok()) {
    return FinishNow(context, s);
  }
  projection::ProjectionUnit unit;
  unit.events.push_back(*std::move(event));
  unit.by = domain::ProjectedBy::kRelay;
  return Project(
      context, std::move(unit), [](size_t) { return std::string("message"); }, admission.caller(),
      [response, admission](const std::vector<domain::ProjectionResult>& results) {
        Fill(results.front(), response);
      });
}

grpc::ServerUnaryReactor* GiftWallService::ProjectMessages(
    grpc::CallbackServerContext* context, const v1::ProjectMessagesRequest* request,
    v1::ProjectMessagesResponse* response) {
  const CallScope scope(context);
  Admission admission;  // held until the call is answered
  if (grpc::Status s = access_.Admit(*context, Role::kRelay, &admission); !s.ok()) {
    return FinishNow(context, s);
  }
  const int count = request->messages_size();
  if (const size_t bytes = request->ByteSizeLong(); bytes > kMaxRequestBytes) {
    return FinishNow(context,
                     InvalidArgument("", absl::InvalidArgumentError(absl::StrFormat(
                                             "the request is %d bytes, at most %d allowed "
                                             "(%d messages of 64 KiB payloads)",
                                             bytes, kMaxRequestBytes, kMaxBatchMessages))));
  }
  if (count > kMaxBatchMessages) {
    return FinishNow(context, InvalidArgument("", absl::InvalidArgumentError(absl::StrFormat(
                                                      "messages has %d entries, at most %d allowed",
                                                      count, kMaxBatchMessages))));
  }
  // The whole batch is checked before anything is written: one malformed envelope rejects it.
  std::vector<domain::GiftEvent> events;
  std::vector<int> event_index;  // response slot of each gift event
  for (int i = 0; i < count; ++i) {
    response->add_results();
    const v1::WalletOutboxMessage& message = request->messages(i);
    if (!domain::IsGiftEvent(message.event_type())) {
      FillIgnored(message, response->mutable_results(i));
      continue;
    }
    absl::StatusOr<domain::GiftEvent> event = ValidateMessage(message);
    if (!event.ok()) {
      response->clear_results();
      return FinishNow(context, InvalidArgument(absl::StrCat("messages[", i, "]"), event.status()));
    }
    events.push_back(*std::move(event));
    event_index.push_back(i);
  }
  if (events.empty()) return FinishNow(context, grpc::Status::OK);
  // Nothing is written unless the caller may touch every app of the batch.
  std::vector<std::string> app_codes;
  for (const domain::GiftEvent& event : events) app_codes.push_back(event.app_code);
  if (grpc::Status s = admission.MayTouch(app_codes); !s.ok()) {
    response->clear_results();
    return FinishNow(context, s);
  }
  projection::ProjectionUnit unit{std::move(events), domain::ProjectedBy::kRelay};
  auto field_of_event = [event_index](size_t j) {
    return absl::StrCat("messages[", event_index[j], "]");
  };
  return Project(context, std::move(unit), std::move(field_of_event), admission.caller(),
                 [response, event_index = std::move(event_index),
                  admission](const std::vector<domain::ProjectionResult>& results) {
                   for (size_t j = 0; j < results.size(); ++j) {
                     Fill(results[j], response->mutable_results(event_index[j]));
                   }
                 });
}

grpc::ServerUnaryReactor* GiftWallService::Project(
    grpc::CallbackServerContext* context, projection::ProjectionUnit unit,
    std::function<std::string(size_t)> field_of_event, std::string caller,
    std::function<void(const std::vector<domain::ProjectionResult>&)> fill) {
  if (std::shared_ptr<const CallContext> call = CallLog::Find(context); call != nullptr) {
    unit.trace_id = call->log.trace_id;
  }
  if (outbox_payloads_ == nullptr) {
    return SubmitUnit(context, projection_, std::move(unit), fill);
  }
  // The rows are read on a worker, which then waits for the group commit: the gRPC thread
  // must not block.
  return Offload(context, workers_,
                 [this, unit = std::move(unit), field_of_event = std::move(field_of_event),
                  caller = std::move(caller), fill = std::move(fill)]() mutable {
                   absl::StatusOr<std::vector<domain::ProjectionResult>> results =
                       outbox_payloads_->Project(std::move(unit), field_of_event, caller);
                   if (!results.ok()) return ToGrpcStatus(results.status());
                   fill(*results);
                   return grpc::Status::OK;
                 });
}

grpc::Status GiftWallService::AdmitWallRead(const grpc::ServerContextBase& context,
                                            const std::string& app_code_in, int64_t user_id,
                                            int64_t viewer_user_id, bool paged,
                                            int32_t page_size_in, AdmittedRead* read,
                                            absl::string_view user_field) const {
  if (grpc::Status s = access_.Admit(context, Role::kReader, &read->admission); !s.ok()) return s;
  if (absl::Status s = CheckWallRead(app_code_in, user_field, user_id, page_size_in,
                                     &read->app_code, paged ? &read->page_size : nullptr);
      !s.ok()) {
    return InvalidArgument("", s);
  }
  if (viewer_user_id < 0) {
    return InvalidArgument("", absl::InvalidArgumentError(absl::StrCat(
                                   "viewer_user_id must be >= 0, got ", viewer_user_id)));
  }
  read->viewer = domain::Viewer{viewer_user_id, read->admission.Holds(Role::kModerator)};
  return read->admission.MayTouch({read->app_code});
}

grpc::Status GiftWallService::AdmitAudited(const grpc::ServerContextBase& context, Role role,
                                           AuditEntry* audit, std::string* app_code) const {
  if (grpc::Status s = access_.Admit(context, role, &audit->admission); !s.ok()) return s;
  absl::StatusOr<std::string> code = domain::NormalizeAppCode(audit->app_code);
  if (!code.ok()) return InvalidArgument("", code.status());
  *app_code = *std::move(code);
  audit->app_code = *app_code;
  return audit->admission.MayTouch({*app_code});
}

domain::HiddenSendersFn GiftWallService::HiddenOn(const std::string& app_code,
                                                  int64_t owner) const {
  return [this, app_code, owner](absl::Span<const domain::ShownSender> senders) {
    return wall_.HiddenSenders(app_code, owner, senders);
  };
}

grpc::ServerUnaryReactor* GiftWallService::GetGiftWall(grpc::CallbackServerContext* context,
                                                       const v1::GetGiftWallRequest* request,
                                                       v1::GetGiftWallResponse* response) {
  const CallScope scope(context);
  AdmittedRead admitted;
  if (grpc::Status s =
          AdmitWallRead(*context, request->app_code(), request->user_id(),
                        request->viewer_user_id(), /*paged=*/true, request->page_size(), &admitted);
      !s.ok()) {
    return FinishNow(context, s);
  }
  const std::optional<domain::WallSort> sort = ToDomain(request->sort());
  if (!sort.has_value()) {
    return FinishNow(context,
                     InvalidArgument("", absl::InvalidArgumentError(absl::StrCat(
                                             "sort ", request->sort(), " is not a GiftWallSort"))));
  }
  absl::StatusOr<domain::PeriodSpec> period = domain::ParsePeriodSpec(request->period());
  if (!period.ok()) return FinishNow(context, InvalidArgument("", period.status()));
  std::optional<domain::WallCursor> after;
  if (!request->page_token().empty()) {
    absl::StatusOr<domain::GiftWallPageToken> token =
        domain::DecodeGiftWallPageToken(request->page_token(), admitted.app_code,
                                        request->user_id(), *sort, request->include_unlit());
    if (!token.ok()) return FinishNow(context, InvalidArgument("", token.status()));
    period = domain::ContinuePeriod(*period, token->period);
    if (!period.ok()) return FinishNow(context, InvalidArgument("", period.status()));
    after = domain::WallCursor{token->sort_value, std::move(token->gift_id), token->unlit};
  }
  // The page and the summary are cut from one read of the whole wall, which the reader may read
  // with other callers' walls in one statement.
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  const int64_t user_id = request->user_id();
  reads::WallRead read;
  read.app_code = admitted.app_code;
  read.user_id = user_id;
  read.period = *std::move(period);
  read.sort = *sort;
  read.include_unlit = request->include_unlit();
  read.still_wanted = [context] { return StillWanted(context); };
  read.done = [reactor, response, admitted, user_id, sort = *sort, after = std::move(after),
               include_unlit = read.include_unlit](absl::StatusOr<reads::WallAnswer> answer) {
    if (!answer.ok()) {
      reactor->Finish(ToGrpcStatus(answer.status()));
      return;
    }
    const std::string& app_code = admitted.app_code;
    const domain::WallSnapshot& wall = *answer->wall;
    const domain::WallPage page =
        domain::PageWall(wall, sort, after, admitted.page_size, include_unlit);
    for (const domain::WallItem* item : page.items) {
      v1::GiftWallItem* out = response->add_items();
      Fill(*item, out);
      MaskForViewer(*item, admitted.viewer, user_id, out);
    }
    if (page.has_more) {
      const domain::WallItem& last = *page.items.back();
      response->set_next_page_token(domain::EncodeGiftWallPageToken(
          {sort, app_code, user_id, domain::SortValue(last, sort), last.gift_id,
           answer->period.has_value() ? answer->period->Name() : "", include_unlit, !last.lit}));
    }
    if (answer->period.has_value()) Fill(*answer->period, response->mutable_period());
    Fill(wall.summary, response->mutable_summary());
    reactor->Finish(grpc::Status::OK);
  };
  reader_.Read(std::move(read));
  return reactor;
}

grpc::ServerUnaryReactor* GiftWallService::ListGiftWallSenders(
    grpc::CallbackServerContext* context, const v1::ListGiftWallSendersRequest* request,
    v1::ListGiftWallSendersResponse* response) {
  const CallScope scope(context);
  AdmittedRead admitted;
  if (grpc::Status s =
          AdmitWallRead(*context, request->app_code(), request->user_id(),
                        request->viewer_user_id(), /*paged=*/true, request->page_size(), &admitted);
      !s.ok()) {
    return FinishNow(context, s);
  }
  absl::StatusOr<std::string> gift_id = CheckGiftId(request->gift_id(), /*required=*/true);
  if (!gift_id.ok()) return FinishNow(context, InvalidArgument("", gift_id.status()));
  absl::StatusOr<domain::PeriodSpec> spec = domain::ParsePeriodSpec(request->period());
  if (!spec.ok()) return FinishNow(context, InvalidArgument("", spec.status()));
  std::optional<storage::SenderCursor> after;
  if (!request->page_token().empty()) {
    absl::StatusOr<domain::SenderPageToken> token = domain::DecodeSenderPageToken(
        request->page_token(), admitted.app_code, request->user_id(), *gift_id);
    if (!token.ok()) return FinishNow(context, InvalidArgument("", token.status()));
    spec = domain::ContinuePeriod(*spec, token->period);
    if (!spec.ok()) return FinishNow(context, InvalidArgument("", spec.status()));
    after = token->cursor;
  }
  return Offload(
      context, workers_,
      [this, admitted, user_id = request->user_id(), gift_id = *std::move(gift_id),
       spec = *std::move(spec), after = std::move(after), response] {
        const std::string& app_code = admitted.app_code;
        absl::StatusOr<std::optional<domain::Period>> period = periods_.Resolve(app_code, spec);
        if (!period.ok()) return ToGrpcStatus(period.status());
        absl::StatusOr<storage::SenderPage> page =
            wall_.ListSenders(app_code, user_id, *period, gift_id, after, admitted.page_size);
        if (!page.ok()) return ToGrpcStatus(page.status());
        SenderMasks masks(admitted.viewer, user_id);
        for (const domain::SenderStats& sender : page->senders) {
          v1::GiftWallSender* out = response->add_senders();
          Fill(sender, out);
          masks.Add(gift_id, out);
        }
        if (page->has_more) {
          response->set_next_page_token(domain::EncodeSenderPageToken(
              {app_code, user_id, gift_id, domain::SenderCursorAfter(after, page->senders),
               period->has_value() ? (*period)->Name() : ""}));
        }
        if (period->has_value()) Fill(**period, response->mutable_period());
        return ToGrpcStatus(masks.Apply(HiddenOn(app_code, user_id)));
      });
}

grpc::ServerUnaryReactor* GiftWallService::ListSponsorHistory(
    grpc::CallbackServerContext* context, const v1::ListSponsorHistoryRequest* request,
    v1::ListSponsorHistoryResponse* response) {
  const CallScope scope(context);
  AdmittedRead admitted;
  if (grpc::Status s =
          AdmitWallRead(*context, request->app_code(), request->user_id(),
                        request->viewer_user_id(), /*paged=*/true, request->page_size(), &admitted);
      !s.ok()) {
    return FinishNow(context, s);
  }
  const std::optional<domain::PeriodKind> kind = domain::ParsePeriodKind(request->period_kind());
  if (!kind.has_value()) {
    return FinishNow(context, InvalidArgument("", absl::InvalidArgumentError(absl::StrCat(
                                                      "period_kind \"", request->period_kind(),
                                                      "\" is not one of day, week, month"))));
  }
  absl::StatusOr<std::string> gift_id = CheckGiftId(request->gift_id(), /*required=*/false);
  if (!gift_id.ok()) return FinishNow(context, InvalidArgument("", gift_id.status()));
  storage::SponsorHistoryQuery query;
  query.kind = *kind;
  if (!gift_id->empty()) query.gift_id = *gift_id;
  query.limit = admitted.page_size;
  if (!request->page_token().empty()) {
    absl::StatusOr<domain::SponsorHistoryPageToken> token =
        domain::DecodeSponsorHistoryPageToken(request->page_token(), admitted.app_code,
                                              request->user_id(), request->period_kind(), *gift_id);
    if (!token.ok()) return FinishNow(context, InvalidArgument("", token.status()));
    query.after = {std::move(token->period_key), std::move(token->gift_id)};
  }
  return Offload(context, workers_,
                 [this, admitted, user_id = request->user_id(), gift_filter = *std::move(gift_id),
                  query = std::move(query), response]() mutable {
                   const std::string& app_code = admitted.app_code;
                   absl::StatusOr<domain::HistoryWindow> window =
                       periods_.History(app_code, query.kind);
                   if (!window.ok()) return ToGrpcStatus(window.status());
                   query.oldest_key = window->oldest.key;
                   query.current_key = window->current.key;
                   absl::StatusOr<storage::SponsorHistoryPage> page =
                       wall_.ListSponsorHistory(app_code, user_id, query);
                   if (!page.ok()) return ToGrpcStatus(page.status());
                   SenderMasks masks(admitted.viewer, user_id);
                   for (const storage::SponsorRecord& record : page->records) {
                     v1::SponsorHistoryEntry* entry = response->add_entries();
                     const std::optional<domain::Period> period =
                         window->calendar.Named(query.kind, record.period_key);
                     if (period.has_value()) Fill(*period, entry->mutable_period());
                     entry->set_gift_id(record.gift_id);
                     Fill(record.sponsor, entry->mutable_sponsor());
                     masks.Add(record.gift_id, entry->mutable_sponsor());
                     entry->set_periods_won(record.periods_won);
                   }
                   if (page->has_more) {
                     const storage::SponsorRecord& last = page->records.back();
                     response->set_next_page_token(domain::EncodeSponsorHistoryPageToken(
                         {app_code, user_id, std::string(domain::PeriodKindName(query.kind)),
                          gift_filter, last.period_key, last.gift_id}));
                   }
                   return ToGrpcStatus(masks.Apply(HiddenOn(app_code, user_id)));
                 });
}

grpc::ServerUnaryReactor* GiftWallService::GetSenderStanding(
    grpc::CallbackServerContext* context, const v1::GetSenderStandingRequest* request,
    v1::GetSenderStandingResponse* response) {
  const CallScope scope(context);
  AdmittedRead admitted;
  if (grpc::Status s = AdmitWallRead(*context, request->app_code(), request->user_id(),
                                     request->viewer_user_id(), /*paged=*/false,
                                     /*page_size_in=*/0, &admitted);
      !s.ok()) {
    return FinishNow(context, s);
  }
  absl::StatusOr<std::string> gift_id = CheckGiftId(request->gift_id(), /*required=*/true);
  if (!gift_id.ok()) return FinishNow(context, InvalidArgument("", gift_id.status()));
  if (request->sender_user_id() <= 0) {
    return FinishNow(
        context,
        InvalidArgument("", absl::InvalidArgumentError(absl::StrCat(
                                "sender_user_id must be > 0, got ", request->sender_user_id()))));
  }
  absl::StatusOr<domain::PeriodSpec> spec = domain::ParsePeriodSpec(request->period());
  if (!spec.ok()) return FinishNow(context, InvalidArgument("", spec.status()));
  return Offload(
      context, workers_,
      [this, admitted, user_id = request->user_id(), gift_id = *std::move(gift_id),
       sender = request->sender_user_id(), spec = *std::move(spec), response] {
        const std::string& app_code = admitted.app_code;
        absl::StatusOr<std::optional<domain::Period>> period = periods_.Resolve(app_code, spec);
        if (!period.ok()) return ToGrpcStatus(period.status());
        absl::StatusOr<storage::StandingRead> read =
            wall_.ReadStanding(app_code, user_id, *period, gift_id, sender);
        if (!read.ok()) return ToGrpcStatus(read.status());
        // The caller names the sender, so masking their id would hide nothing: to a
        // viewer who may not see them, a sender who hid stands as one who sent none.
        const std::vector<domain::ShownSender> asked = {
            {gift_id, sender}, {gift_id, read->sponsor.has_value() ? read->sponsor->user_id : 0}};
        absl::StatusOr<std::vector<bool>> masked =
            domain::MaskedFor(admitted.viewer, user_id, asked, HiddenOn(app_code, user_id));
        if (!masked.ok()) return ToGrpcStatus(masked.status());
        // Not even as the 冠名: the masked 冠名 stays someone else to this viewer.
        std::optional<domain::SenderStats> sponsor = read->sponsor;
        if ((*masked)[0] && sponsor.has_value() && sponsor->user_id == sender) sponsor->user_id = 0;
        const domain::SenderStanding standing =
            (*masked)[0]
                ? domain::StandingOf(sender, std::nullopt, sponsor, std::nullopt)
                : domain::StandingOf(sender, read->sent, read->sponsor, read->senders_ahead);
        Fill(standing.sender, response->mutable_sender());
        if (read->sponsor.has_value()) {
          Fill(*read->sponsor, response->mutable_sponsor());
          if ((*masked)[1]) Mask(response->mutable_sponsor());
        }
        response->set_needed_to_sponsor(standing.needed_to_sponsor);
        response->set_rank(standing.rank);
        response->set_rank_beyond_limit(standing.rank_beyond_limit);
        if (period->has_value()) Fill(**period, response->mutable_period());
        return grpc::Status::OK;
      });
}

namespace {

domain::CatalogItemInput ToDomain(const v1::GiftCatalogItem& item) {
  return domain::CatalogItemInput{item.gift_id(),    item.name(),        item.icon(),
                                  item.unlit_icon(), item.price_coins(), item.series(),
                                  item.tier(),       item.status(),      item.sort_order()};
}

void Fill(const domain::CatalogGift& gift, v1::GiftCatalogItem* out) {
  out->set_gift_id(gift.gift_id);
  out->set_name(gift.name);
  out->set_icon(gift.icon);
  out->set_unlit_icon(gift.unlit_icon);
  out->set_price_coins(gift.price_coins);
  out->set_series(gift.series);
  out->set_tier(gift.tier);
  out->set_status(std::string(domain::GiftStatusName(gift.status)));
  out->set_sort_order(gift.sort_order);
}

}  // namespace

grpc::ServerUnaryReactor* GiftWallService::PutGiftCatalog(grpc::CallbackServerContext* context,
                                                          const v1::PutGiftCatalogRequest* request,
                                                          v1::PutGiftCatalogResponse* response) {
  const CallScope scope(context);
  AuditEntry audit;  // every answer it gives is audit-logged, refusals of its arguments included
  audit.method = "PutGiftCatalog";
  audit.app_code = request->app_code();
  auto refuse = [&](grpc::Status status) {
    audit.Log(status);
    return FinishNow(context, std::move(status));
  };
  std::string app_code;
  if (grpc::Status s = AdmitAudited(*context, Role::kCatalog, &audit, &app_code); !s.ok()) {
    return refuse(s);
  }
  if (const size_t bytes = request->ByteSizeLong(); bytes > kMaxRequestBytes) {
    return refuse(InvalidArgument(
        "", absl::InvalidArgumentError(absl::StrFormat(
                "the request is %d bytes, at most %d allowed", bytes, kMaxRequestBytes))));
  }
  std::vector<domain::CatalogItemInput> items;
  items.reserve(static_cast<size_t>(request->items_size()));
  for (const v1::GiftCatalogItem& item : request->items()) items.push_back(ToDomain(item));
  absl::StatusOr<std::vector<domain::CatalogGift>> gifts = domain::CheckCatalogItems(items);
  if (!gifts.ok()) return refuse(InvalidArgument("", gifts.status()));
  return Offload(
      context, workers_,
      audit.Wrap([this, app_code = std::move(app_code), gifts = *std::move(gifts),
                  replace = request->replace(), by = audit.admission.caller(), response] {
        absl::StatusOr<storage::CatalogWrite> write = catalog_.Put(app_code, gifts, replace, by);
        // Even a failed write may have committed (a lost answer to COMMIT): read it again.
        catalogs_.Forget(app_code);
        if (!write.ok()) return ToGrpcStatus(write.status());
        response->set_upserted(write->upserted);
        response->set_removed(write->removed);
        response->set_catalog_gifts(write->catalog_gifts);
        return grpc::Status::OK;
      }));
}

grpc::ServerUnaryReactor* GiftWallService::ListGiftCatalog(
    grpc::CallbackServerContext* context, const v1::ListGiftCatalogRequest* request,
    v1::ListGiftCatalogResponse* response) {
  const CallScope scope(context);
  Admission admission;  // held until the call is answered
  if (grpc::Status s = access_.Admit(*context, Role::kReader, &admission); !s.ok()) {
    return FinishNow(context, s);
  }
  absl::StatusOr<std::string> app_code = domain::NormalizeAppCode(request->app_code());
  if (!app_code.ok()) return FinishNow(context, InvalidArgument("", app_code.status()));
  if (grpc::Status s = admission.MayTouch({*app_code}); !s.ok()) return FinishNow(context, s);
  absl::StatusOr<int> page_size =
      PageSizeOf(request->page_size(), kMaxCatalogPageSize, kMaxCatalogPageSize);
  if (!page_size.ok()) return FinishNow(context, InvalidArgument("", page_size.status()));
  std::optional<std::pair<int64_t, std::string>> after;
  if (!request->page_token().empty()) {
    absl::StatusOr<domain::CatalogPageToken> token =
        domain::DecodeCatalogPageToken(request->page_token(), *app_code);
    if (!token.ok()) return FinishNow(context, InvalidArgument("", token.status()));
    after = {token->sort_order, std::move(token->gift_id)};
  }
  return Offload(context, workers_,
                 [this, app_code = *std::move(app_code), after = std::move(after),
                  page_size = *page_size, response, admission] {
                   absl::StatusOr<storage::CatalogPage> page =
                       catalog_.List(app_code, after, page_size);
                   if (!page.ok()) return ToGrpcStatus(page.status());
                   for (const domain::CatalogGift& gift : page->gifts) {
                     Fill(gift, response->add_items());
                   }
                   if (page->has_more) {
                     const domain::CatalogGift& last = page->gifts.back();
                     response->set_next_page_token(
                         domain::EncodeCatalogPageToken({app_code, last.sort_order, last.gift_id}));
                   }
                   return grpc::Status::OK;
                 });
}

grpc::ServerUnaryReactor* GiftWallService::SetSenderPrivacy(
    grpc::CallbackServerContext* context, const v1::SetSenderPrivacyRequest* request,
    v1::SetSenderPrivacyResponse* response) {
  const CallScope scope(context);
  AuditEntry audit;  // every answer it gives is audit-logged, refusals of its arguments included
  audit.method = "SetSenderPrivacy";
  audit.app_code = request->app_code();
  audit.what = absl::StrCat("sender_user_id=", request->sender_user_id(),
                            " hidden=", request->hidden() ? "true" : "false");
  auto refuse = [&](grpc::Status status) {
    audit.Log(status);
    return FinishNow(context, std::move(status));
  };
  std::string app_code;
  if (grpc::Status s = AdmitAudited(*context, Role::kPrivacy, &audit, &app_code); !s.ok()) {
    return refuse(s);
  }
  if (request->sender_user_id() <= 0) {
    return refuse(
        InvalidArgument("", absl::InvalidArgumentError(absl::StrCat(
                                "sender_user_id must be > 0, got ", request->sender_user_id()))));
  }
  return Offload(
      context, workers_,
      audit.Wrap([this, app_code = std::move(app_code), sender = request->sender_user_id(),
                  hidden = request->hidden(), by = audit.admission.caller(), response] {
        absl::StatusOr<bool> changed = privacy_.Set(app_code, sender, hidden, by);
        // Even a failed write may have committed (a lost answer to COMMIT): read it again.
        opt_outs_.Forget(app_code);
        if (!changed.ok()) return ToGrpcStatus(changed.status());
        response->set_changed(*changed);
        return grpc::Status::OK;
      }));
}

absl::StatusOr<GiftWallService::SentRead> GiftWallService::ReadSent(
    const AdmittedRead& read, int64_t sender, const domain::PeriodSpec& spec) {
  RETURN_IF_ERROR(periods_.CheckKeepsSentWall(read.app_code));
  SentRead out;
  ASSIGN_OR_RETURN(out.period, periods_.Resolve(read.app_code, spec));
  if (out.period.has_value()) out.period_name = out.period->Name();
  bool opted_out = false;
  if (domain::SentViewFor(read.viewer, sender, false) != domain::SentView::kWhole) {
    ASSIGN_OR_RETURN(std::shared_ptr<const domain::OptOuts> opt_outs, opt_outs_.Get(read.app_code));
    opted_out = opt_outs->contains(sender);
  }
  out.view = domain::SentViewFor(read.viewer, sender, opted_out);
  return out;
}

grpc::ServerUnaryReactor* GiftWallService::GetSentGifts(grpc::CallbackServerContext* context,
                                                        const v1::GetSentGiftsRequest* request,
                                                        v1::GetSentGiftsResponse* response) {
  const CallScope scope(context);
  AdmittedRead admitted;
  if (grpc::Status s = AdmitWallRead(*context, request->app_code(), request->sender_user_id(),
                                     request->viewer_user_id(), /*paged=*/true,
                                     request->page_size(), &admitted, "sender_user_id");
      !s.ok()) {
    return FinishNow(context, s);
  }
  absl::StatusOr<domain::PeriodSpec> spec = domain::ParsePeriodSpec(request->period());
  if (!spec.ok()) return FinishNow(context, InvalidArgument("", spec.status()));
  std::optional<std::string> after;
  if (!request->page_token().empty()) {
    absl::StatusOr<domain::SentPageToken> token = domain::DecodeSentPageToken(
        request->page_token(), admitted.app_code, request->sender_user_id(), "");
    if (!token.ok()) return FinishNow(context, InvalidArgument("", token.status()));
    spec = domain::ContinuePeriod(*spec, token->period);
    if (!spec.ok()) return FinishNow(context, InvalidArgument("", spec.status()));
    after = std::move(token->after_gift);
  }
  return Offload(
      context, workers_,
      [this, admitted, sender = request->sender_user_id(), spec = *std::move(spec),
       after = std::move(after), response] {
        const std::string& app_code = admitted.app_code;
        absl::StatusOr<SentRead> read = ReadSent(admitted, sender, spec);
        if (!read.ok()) return ToGrpcStatus(read.status());
        if (read->period.has_value()) Fill(*read->period, response->mutable_period());
        if (read->view == domain::SentView::kNothing) return grpc::Status::OK;
        absl::StatusOr<std::shared_ptr<const domain::CatalogIndex>> catalog =
            catalogs_.Get(app_code);
        if (!catalog.ok()) return ToGrpcStatus(catalog.status());
        const bool open = read->view == domain::SentView::kInTheOpen;
        absl::StatusOr<storage::SentPage> page =
            open && read->period.has_value()
                ? sent_.ListOpenSent(app_code, sender, read->period_name, after, admitted.page_size)
                : sent_.ListSent(app_code, sender, read->period_name, after,
                                 /*shown_only=*/open, admitted.page_size);
        if (!page.ok()) return ToGrpcStatus(page.status());
        for (const storage::SentGift& gift : page->gifts) {
          const domain::SentTotals& shown = domain::ShownOf(read->view, gift.row);
          v1::SentGift* out = response->add_gifts();
          out->set_gift_id(gift.gift_id);
          out->set_sent_count(shown.sent_count);
          out->set_sent_coins(shown.sent_coins);
          out->set_receiver_count(shown.receiver_count);
          out->set_first_sent_at_ms(shown.first_sent_at_ms);
          out->set_last_sent_at_ms(shown.last_sent_at_ms);
          out->set_anonymous(read->view == domain::SentView::kWhole && gift.row.anonymous);
          if (const domain::CatalogGift* known = (*catalog)->Find(gift.gift_id)) {
            out->set_gift_name(known->name);
            out->set_gift_icon(known->icon);
          }
        }
        if (page->has_more) {
          response->set_next_page_token(domain::EncodeSentPageToken(
              {app_code, sender, "", page->gifts.back().gift_id, 0, read->period_name}));
        }
        return grpc::Status::OK;
      });
}

grpc::ServerUnaryReactor* GiftWallService::ListSentGiftReceivers(
    grpc::CallbackServerContext* context, const v1::ListSentGiftReceiversRequest* request,
    v1::ListSentGiftReceiversResponse* response) {
  const CallScope scope(context);
  AdmittedRead admitted;
  if (grpc::Status s = AdmitWallRead(*context, request->app_code(), request->sender_user_id(),
                                     request->viewer_user_id(), /*paged=*/true,
                                     request->page_size(), &admitted, "sender_user_id");
      !s.ok()) {
    return FinishNow(context, s);
  }
  absl::StatusOr<std::string> gift_id = CheckGiftId(request->gift_id(), /*required=*/true);
  if (!gift_id.ok()) return FinishNow(context, InvalidArgument("", gift_id.status()));
  absl::StatusOr<domain::PeriodSpec> spec = domain::ParsePeriodSpec(request->period());
  if (!spec.ok()) return FinishNow(context, InvalidArgument("", spec.status()));
  std::optional<int64_t> after;
  if (!request->page_token().empty()) {
    absl::StatusOr<domain::SentPageToken> token = domain::DecodeSentPageToken(
        request->page_token(), admitted.app_code, request->sender_user_id(), *gift_id);
    if (!token.ok()) return FinishNow(context, InvalidArgument("", token.status()));
    spec = domain::ContinuePeriod(*spec, token->period);
    if (!spec.ok()) return FinishNow(context, InvalidArgument("", spec.status()));
    after = token->after_receiver;
  }
  return Offload(
      context, workers_,
      [this, admitted, sender = request->sender_user_id(), gift_id = *std::move(gift_id),
       spec = *std::move(spec), after, response] {
        const std::string& app_code = admitted.app_code;
        absl::StatusOr<SentRead> read = ReadSent(admitted, sender, spec);
        if (!read.ok()) return ToGrpcStatus(read.status());
        if (read->period.has_value()) Fill(*read->period, response->mutable_period());
        if (read->view == domain::SentView::kNothing) return grpc::Status::OK;
        // Anyone but the sender sees the receivers whose walls show the sender: their sender
        // rows that are not anonymous, chosen by the statement, so that a page and its token
        // name none of the others.
        absl::StatusOr<storage::ReceiverPage> page = sent_.ListReceivers(
            app_code, sender, read->period_name, gift_id, after,
            /*open_only=*/read->view == domain::SentView::kInTheOpen, admitted.page_size);
        if (!page.ok()) return ToGrpcStatus(page.status());
        for (const storage::SentReceiver& receiver : page->receivers) {
          v1::SentGiftReceiver* out = response->add_receivers();
          out->set_user_id(receiver.user_id);
          out->set_sent_count(receiver.sent.sent_count);
          out->set_sent_coins(receiver.sent.sent_coins);
          out->set_first_sent_at_ms(receiver.sent.first_sent_at_ms);
          out->set_last_sent_at_ms(receiver.sent.last_sent_at_ms);
          out->set_anonymous(receiver.sent.anonymous);
        }
        if (page->has_more) {
          response->set_next_page_token(domain::EncodeSentPageToken(
              {app_code, sender, gift_id, "", page->receivers.back().user_id, read->period_name}));
        }
        return grpc::Status::OK;
      });
}

}  // namespace giftwall::transport
