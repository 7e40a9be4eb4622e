// giftwall.v1.ProjectionAdminService: operating the projection (DESIGN §3). Served only with
// --enable_admin.
#ifndef GIFTWALL_SERVER_TRANSPORT_ADMIN_SERVICE_H_
#define GIFTWALL_SERVER_TRANSPORT_ADMIN_SERVICE_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "giftwall/v1/admin.grpc.pb.h"
#include "server/projection/app_settings.h"
#include "server/projection/recovery.h"
#include "server/projection/wall_audit.h"
#include "server/storage/ledger_repository.h"
#include "server/transport/access_control.h"
#include "server/transport/worker_pool.h"
#include "server/worker/rebuild_runner.h"

namespace giftwall::transport {

// At most this many events are requeued by one call.
inline constexpr int kMaxRequeue = 10'000;
// What one answer lists at most: requeue's skipped events, verify's unverifiable users. The rest
// are counted (skipped_not_listed, unverifiable_not_listed).
inline constexpr int kMaxSkippedListed = 100;
inline constexpr int kMaxUnverifiableListed = 1000;

struct AuditEntry;

class AdminService final : public giftwall::v1::ProjectionAdminService::CallbackService {
 public:
  AdminService(storage::LedgerRepository& ledger, projection::Recovery& recovery,
               projection::WallAudit& audit, worker::RebuildRunner& rebuilds,
               projection::AppSettingsEditor& settings, domain::PeriodRetention retention,
               WorkerPool& workers, const AccessControl& access)
      : ledger_(ledger),
        recovery_(recovery),
        audit_(audit),
        rebuilds_(rebuilds),
        settings_(settings),
        retention_(std::move(retention)),
        workers_(workers),
        access_(access) {}

  grpc::ServerUnaryReactor* GetProjectionStatus(grpc::CallbackServerContext* context,
                                                const v1::GetProjectionStatusRequest* request,
                                                v1::GetProjectionStatusResponse* response) override;
  grpc::ServerUnaryReactor* GetEventStatus(grpc::CallbackServerContext* context,
                                           const v1::GetEventStatusRequest* request,
                                           v1::GetEventStatusResponse* response) override;
  grpc::ServerUnaryReactor* ListDeadEvents(grpc::CallbackServerContext* context,
                                           const v1::ListDeadEventsRequest* request,
                                           v1::ListDeadEventsResponse* response) override;
  grpc::ServerUnaryReactor* RequeueDeadEvents(grpc::CallbackServerContext* context,
                                              const v1::RequeueDeadEventsRequest* request,
                                              v1::RequeueDeadEventsResponse* response) override;
  grpc::ServerUnaryReactor* RunCatchUp(grpc::CallbackServerContext* context,
                                       const v1::RunCatchUpRequest* request,
                                       v1::RunCatchUpResponse* response) override;
  grpc::ServerUnaryReactor* VerifyGiftWall(grpc::CallbackServerContext* context,
                                           const v1::VerifyGiftWallRequest* request,
                                           v1::VerifyGiftWallResponse* response) override;
  grpc::ServerWriteReactor<v1::RebuildGiftWallProgress>* RebuildGiftWall(
      grpc::CallbackServerContext* context, const v1::RebuildGiftWallRequest* request) override;
  grpc::ServerUnaryReactor* SetAppSettings(grpc::CallbackServerContext* context,
                                           const v1::SetAppSettingsRequest* request,
                                           v1::SetAppSettingsResponse* response) override;
  grpc::ServerUnaryReactor* GetAppSettings(grpc::CallbackServerContext* context,
                                           const v1::GetAppSettingsRequest* request,
                                           v1::GetAppSettingsResponse* response) override;

 private:
  using AdminWork = std::function<grpc::Status()>;
  // From the call's normalized app code: its work, or what is wrong with the request.
  using Prepare = std::function<absl::StatusOr<AdminWork>(const std::string& app_code)>;
  // The same, also given the caller's name ("" without an access policy).
  using PrepareAs = std::function<absl::StatusOr<AdminWork>(const std::string& app_code,
                                                            const std::string& caller)>;

  // The one way a unary admin call is served, so that every call is audit-logged however it
  // ends: admitted (Admit), its arguments checked by `prepare` (what is wrong with them answers
  // INVALID_ARGUMENT), then its work run on an admin thread.
  grpc::ServerUnaryReactor* Audited(grpc::CallbackServerContext* context, absl::string_view method,
                                    const std::string& app_code, const Prepare& prepare) const;
  grpc::ServerUnaryReactor* Audited(grpc::CallbackServerContext* context, absl::string_view method,
                                    const std::string& app_code, const PrepareAs& prepare) const;

  // The caller may take the admin role on the request's app: OK with `audit` filled in (the
  // normalized app code), or the status to answer, audit-logged.
  grpc::Status Admit(const grpc::ServerContextBase& context, absl::string_view method,
                     const std::string& app_code, AuditEntry* audit) const;

  storage::LedgerRepository& ledger_;
  projection::Recovery& recovery_;
  projection::WallAudit& audit_;
  worker::RebuildRunner& rebuilds_;
  projection::AppSettingsEditor& settings_;
  const domain::PeriodRetention retention_;
  WorkerPool& workers_;
  const AccessControl& access_;
};

}  // namespace giftwall::transport

#endif  // GIFTWALL_SERVER_TRANSPORT_ADMIN_SERVICE_H_
