#include "server/transport/gift_wall_service.h"

#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/domain/app_code.h"
#include "server/domain/envelope.h"
#include "server/domain/page_token.h"
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
    default:
      return std::nullopt;
  }
}

}  // namespace

grpc::ServerUnaryReactor* GiftWallService::ProjectMessage(grpc::CallbackServerContext* context,
                                                          const v1::ProjectMessageRequest* request,
                                                          v1::ProjectMessageResponse* response) {
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
  return Offload(context, workers_, [this, event = *std::move(event), response] {
    absl::StatusOr<domain::ProjectionResult> result =
        projection_.Project(event, domain::ProjectedBy::kRelay);
    if (!result.ok()) return ToGrpcStatus(result.status());
    Fill(*result, response);
    return grpc::Status::OK;
  });
}

grpc::ServerUnaryReactor* GiftWallService::ProjectMessages(
    grpc::CallbackServerContext* context, const v1::ProjectMessagesRequest* request,
    v1::ProjectMessagesResponse* response) {
  const int count = request->messages_size();
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
  return Offload(
      context, workers_,
      [this, events = std::move(events), event_index = std::move(event_index), response] {
        absl::StatusOr<std::vector<domain::ProjectionResult>> results =
            projection_.ProjectBatch(events, domain::ProjectedBy::kRelay);
        if (!results.ok()) {
          response->clear_results();
          return ToGrpcStatus(results.status());
        }
        for (size_t j = 0; j < results->size(); ++j) {
          Fill((*results)[j], response->mutable_results(event_index[j]));
        }
        return grpc::Status::OK;
      });
}

grpc::ServerUnaryReactor* GiftWallService::GetGiftWall(grpc::CallbackServerContext* context,
                                                       const v1::GetGiftWallRequest* request,
                                                       v1::GetGiftWallResponse* response) {
  absl::StatusOr<std::string> app_code = domain::NormalizeAppCode(request->app_code());
  if (!app_code.ok()) return FinishNow(context, InvalidArgument("", app_code.status()));
  if (request->user_id() <= 0) {
    return FinishNow(context,
                     InvalidArgument("", absl::InvalidArgumentError(absl::StrCat(
                                             "user_id must be > 0, got ", request->user_id()))));
  }
  if (request->page_size() < 0) {
    return FinishNow(
        context, InvalidArgument("", absl::InvalidArgumentError(absl::StrCat(
                                         "page_size must be >= 0, got ", request->page_size()))));
  }
  const std::optional<domain::WallSort> sort = ToDomain(request->sort());
  if (!sort.has_value()) {
    return FinishNow(context,
                     InvalidArgument("", absl::InvalidArgumentError(absl::StrCat(
                                             "sort ", request->sort(), " is not a GiftWallSort"))));
  }
  std::optional<storage::WallCursor> after;
  if (!request->page_token().empty()) {
    absl::StatusOr<domain::GiftWallPageToken> token = domain::DecodeGiftWallPageToken(
        request->page_token(), *app_code, request->user_id(), *sort);
    if (!token.ok()) return FinishNow(context, InvalidArgument("", token.status()));
    after = storage::WallCursor{token->sort_value, std::move(token->gift_id)};
  }
  const int page_size =
      request->page_size() == 0 ? kDefaultPageSize : std::min(request->page_size(), kMaxPageSize);
  return Offload(context, workers_,
                 [this, app_code = *std::move(app_code), user_id = request->user_id(), sort = *sort,
                  after = std::move(after), page_size, response] {
                   absl::StatusOr<storage::WallPage> page =
                       wall_.ListWall(app_code, user_id, sort, after, page_size);
                   if (!page.ok()) return ToGrpcStatus(page.status());
                   absl::StatusOr<storage::WallSummary> summary =
                       wall_.Summarize(app_code, user_id);
                   if (!summary.ok()) return ToGrpcStatus(summary.status());
                   for (const storage::WallItem& item : page->items) {
                     v1::GiftWallItem* out = response->add_items();
                     out->set_gift_id(item.gift_id);
                     out->set_gift_count(item.gift_count);
                     out->set_first_received_at_ms(item.first_received_at_ms);
                     out->set_last_received_at_ms(item.last_received_at_ms);
                   }
                   if (page->has_more) {
                     const storage::WallItem& last = page->items.back();
                     response->set_next_page_token(domain::EncodeGiftWallPageToken(
                         {sort, app_code, user_id, storage::SortValue(last, sort), last.gift_id}));
                   }
                   v1::GiftWallSummary* out = response->mutable_summary();
                   out->set_distinct_gifts(summary->distinct_gifts);
                   out->set_total_gift_count(summary->total_gift_count);
                   out->set_last_received_at_ms(summary->last_received_at_ms);
                   return grpc::Status::OK;
                 });
}

}  // namespace giftwall::transport
