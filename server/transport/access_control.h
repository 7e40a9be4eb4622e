// Who may call what, applied to gRPC calls: the caller's identity from the call (its verified
// client certificate, or its bearer token), checked against the access policy, which is read
// again whenever its file changes.
#ifndef GIFTWALL_SERVER_TRANSPORT_ACCESS_CONTROL_H_
#define GIFTWALL_SERVER_TRANSPORT_ACCESS_CONTROL_H_

#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "grpcpp/grpcpp.h"
#include "server/transport/access_policy.h"
#include "server/transport/caller_limits.h"

namespace giftwall::transport {

// Who the call's transport says is calling: its verified client certificate's names, and its
// `authorization: Bearer` token (over TLS only).
CallerCredentials CredentialsOf(const grpc::ServerContextBase& context);

// A call's place within its caller's limits; null when it has none.
using CallPermit = std::shared_ptr<const CallerLimits::Permit>;

class AccessControl {
 public:
  // Every caller may call everything (no --access_policy_file).
  static std::unique_ptr<AccessControl> Open();
  // The policy in `path`: INVALID_ARGUMENT if it cannot be read or does not parse now. It is read
  // again every `refresh`; a change that does not parse is logged and leaves the policy as it was.
  static absl::StatusOr<std::unique_ptr<AccessControl>> FromFile(const std::string& path,
                                                                 absl::Duration refresh);
  ~AccessControl();
  AccessControl(const AccessControl&) = delete;
  AccessControl& operator=(const AccessControl&) = delete;

  // OK if the call's caller may take `role` on every one of `app_codes` (normalized), with
  // *caller set to its name ("" when open); else UNAUTHENTICATED or PERMISSION_DENIED, to answer.
  // With `permit`, the call also takes a place within its caller's limits (RESOURCE_EXHAUSTED
  // past them), held until the last copy of *permit goes: the first check of a call asks for
  // one and keeps it until the call is answered.
  grpc::Status Check(const grpc::ServerContextBase& context, Role role,
                     absl::Span<const std::string> app_codes, std::string* caller,
                     CallPermit* permit = nullptr) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  AccessControl(std::string path, std::shared_ptr<const AccessPolicy> policy, std::string contents,
                absl::Duration refresh);
  void Watch();

  const std::string path_;
  const absl::Duration refresh_;
  mutable absl::Mutex mu_;
  std::shared_ptr<const AccessPolicy> policy_ ABSL_GUARDED_BY(mu_);  // null: open
  std::string contents_;         // the file as last read; the watcher's only
  mutable CallerLimits limits_;  // by caller name, across policy changes
  absl::Notification stop_;
  std::thread watcher_;
};

}  // namespace giftwall::transport

#endif  // GIFTWALL_SERVER_TRANSPORT_ACCESS_CONTROL_H_
