// giftwall.v1.GiftWallService: request validation and the mapping between the API's messages
// and the domain. Projections go to the projection engine, wall reads to the wall reader, the
// other reads and the catalogue's writes to the worker pool.
#ifndef GIFTWALL_SERVER_TRANSPORT_GIFT_WALL_SERVICE_H_
#define GIFTWALL_SERVER_TRANSPORT_GIFT_WALL_SERVICE_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "giftwall/v1/giftwall.grpc.pb.h"
#include "server/domain/gift_payload.h"
#include "server/domain/viewer.h"
#include "server/projection/outbox_payloads.h"
#include "server/projection/projection_engine.h"
#include "server/reads/catalog_cache.h"
#include "server/reads/opt_out_cache.h"
#include "server/reads/wall_reader.h"
#include "server/storage/catalog_repository.h"
#include "server/storage/sender_privacy_repository.h"
#include "server/storage/sent_wall_store.h"
#include "server/storage/wall_repository.h"
#include "server/transport/access_control.h"
#include "server/transport/arena_allocator.h"
#include "server/transport/audit.h"
#include "server/transport/worker_pool.h"

namespace giftwall::transport {

inline constexpr int kDefaultPageSize = 50;
inline constexpr int kMaxPageSize = 200;
inline constexpr int kMaxBatchMessages = 500;
// A catalogue page, default and most: at the fields' largest, under gRPC's 4 MiB default limit.
inline constexpr int kMaxCatalogPageSize = 1000;
// The largest legal request: a full batch of 64 KiB payloads, with room for their envelopes.
// A larger one answers INVALID_ARGUMENT (a dead letter for the relay); the server's transport
// limit is a little above this, 1 MiB (past it, gRPC itself answers RESOURCE_EXHAUSTED before
// any handler sees the request), so that one call holds little more than a legal batch.
inline constexpr size_t kMaxRequestBytes =
    size_t{kMaxBatchMessages} * (domain::kMaxPayloadBytes + 2 * 1024);
inline constexpr int kMaxReceiveMessageBytes = static_cast<int>(kMaxRequestBytes + (1 << 20));

class GiftWallService final : public giftwall::v1::GiftWallService::CallbackService {
 public:
  // Every call is checked by `access` (the relay role projects, the reader role reads) before it
  // does anything. With `outbox_payloads` (--payload_source=outbox), ProjectMessage(s) project
  // the wallet's outbox rows, not the messages' payloads.
  GiftWallService(projection::ProjectionEngine& projection, reads::WallReader& reader,
                  reads::PeriodResolver& periods, storage::WallRepository& wall,
                  storage::CatalogRepository& catalog, reads::CatalogCache& catalogs,
                  storage::SenderPrivacyRepository& privacy, reads::OptOutCache& opt_outs,
                  storage::SentWallRepository& sent, WorkerPool& workers,
                  const AccessControl& access,
                  const projection::OutboxPayloads* outbox_payloads = nullptr)
      : projection_(projection),
        reader_(reader),
        periods_(periods),
        wall_(wall),
        catalog_(catalog),
        catalogs_(catalogs),
        privacy_(privacy),
        opt_outs_(opt_outs),
        sent_(sent),
        workers_(workers),
        access_(access),
        outbox_payloads_(outbox_payloads) {
    SetMessageAllocatorFor_GetGiftWall(&wall_messages_);
  }

  grpc::ServerUnaryReactor* ProjectMessage(grpc::CallbackServerContext* context,
                                           const v1::ProjectMessageRequest* request,
                                           v1::ProjectMessageResponse* response) override;
  grpc::ServerUnaryReactor* ProjectMessages(grpc::CallbackServerContext* context,
                                            const v1::ProjectMessagesRequest* request,
                                            v1::ProjectMessagesResponse* response) override;
  grpc::ServerUnaryReactor* GetGiftWall(grpc::CallbackServerContext* context,
                                        const v1::GetGiftWallRequest* request,
                                        v1::GetGiftWallResponse* response) override;
  grpc::ServerUnaryReactor* ListGiftWallSenders(grpc::CallbackServerContext* context,
                                                const v1::ListGiftWallSendersRequest* request,
                                                v1::ListGiftWallSendersResponse* response) override;
  grpc::ServerUnaryReactor* ListSponsorHistory(grpc::CallbackServerContext* context,
                                               const v1::ListSponsorHistoryRequest* request,
                                               v1::ListSponsorHistoryResponse* response) override;
  grpc::ServerUnaryReactor* GetSenderStanding(grpc::CallbackServerContext* context,
                                              const v1::GetSenderStandingRequest* request,
                                              v1::GetSenderStandingResponse* response) override;
  grpc::ServerUnaryReactor* PutGiftCatalog(grpc::CallbackServerContext* context,
                                           const v1::PutGiftCatalogRequest* request,
                                           v1::PutGiftCatalogResponse* response) override;
  grpc::ServerUnaryReactor* ListGiftCatalog(grpc::CallbackServerContext* context,
                                            const v1::ListGiftCatalogRequest* request,
                                            v1::ListGiftCatalogResponse* response) override;
  grpc::ServerUnaryReactor* SetSenderPrivacy(grpc::CallbackServerContext* context,
                                             const v1::SetSenderPrivacyRequest* request,
                                             v1::SetSenderPrivacyResponse* response) override;
  grpc::ServerUnaryReactor* GetSentGifts(grpc::CallbackServerContext* context,
                                         const v1::GetSentGiftsRequest* request,
                                         v1::GetSentGiftsResponse* response) override;
  grpc::ServerUnaryReactor* ListSentGiftReceivers(
      grpc::CallbackServerContext* context, const v1::ListSentGiftReceiversRequest* request,
      v1::ListSentGiftReceiversResponse* response) override;

 private:
  // Projects `unit` and answers with `fill`, or the status that kept it from being projected:
  // from the engine directly, or, with outbox_payloads_, on a worker.
  grpc::ServerUnaryReactor* Project(
      grpc::CallbackServerContext* context, projection::ProjectionUnit unit,
      std::function<std::string(size_t)> field_of_event, std::string caller,
      std::function<void(const std::vector<domain::ProjectionResult>&)> fill);

  // A wall read let in: its normalized arguments and who is calling.
  struct AdmittedRead {
    std::string app_code;
    int page_size = 0;  // 0 for a read without pages
    domain::Viewer viewer;
    Admission admission;  // held until the call is answered
  };

  // A wall read's caller and arguments: OK with *read filled in, or the status to answer
  // (UNAUTHENTICATED, PERMISSION_DENIED, RESOURCE_EXHAUSTED, INVALID_ARGUMENT). A read without
  // pages passes `paged` false.
  // `user_field` names the user read in a refusal ("user_id" of a wall).
  grpc::Status AdmitWallRead(const grpc::ServerContextBase& context, const std::string& app_code_in,
                             int64_t user_id, int64_t viewer_user_id, bool paged,
                             int32_t page_size_in, AdmittedRead* read,
                             absl::string_view user_field = "user_id") const;

  // What the admitted viewer reads of `sender`'s sent wall (DESIGN §2.19): which period, and how
  // much they see. FAILED_PRECONDITION if the app keeps none; the period's errors as
  // reads::PeriodResolver gives them.
  struct SentRead {
    std::optional<domain::Period> period;  // none: all-time
    std::string period_name;               // "" for all-time
    domain::SentView view = domain::SentView::kNothing;
  };
  absl::StatusOr<SentRead> ReadSent(const AdmittedRead& read, int64_t sender,
                                    const domain::PeriodSpec& spec);

  // An audited write's caller and app (audit->app_code as the request gave it): OK with
  // *app_code normalized and audit->app_code set to it, or the status to answer (to be logged).
  grpc::Status AdmitAudited(const grpc::ServerContextBase& context, Role role, AuditEntry* audit,
                            std::string* app_code) const;

  // Which of the senders shown to `read`'s viewer on `owner`'s wall hid (DESIGN §2.18).
  domain::HiddenSendersFn HiddenOn(const std::string& app_code, int64_t owner) const;

  projection::ProjectionEngine& projection_;
  reads::WallReader& reader_;
  reads::PeriodResolver& periods_;
  storage::WallRepository& wall_;
  storage::CatalogRepository& catalog_;  // on the primary: the catalogue is written and read there
  reads::CatalogCache& catalogs_;        // the wall reads'; a write here makes it read again
  storage::SenderPrivacyRepository& privacy_;  // on the primary
  reads::OptOutCache& opt_outs_;               // the wall reads'; a write here makes it read again
  storage::SentWallRepository& sent_;
  WorkerPool& workers_;
  const AccessControl& access_;
  const projection::OutboxPayloads* const outbox_payloads_;
  // GetGiftWall's messages, on an arena per call.
  ArenaMessageAllocator<v1::GetGiftWallRequest, v1::GetGiftWallResponse> wall_messages_;
};

}  // namespace giftwall::transport

#endif  // GIFTWALL_SERVER_TRANSPORT_GIFT_WALL_SERVICE_H_
