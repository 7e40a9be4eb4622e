// Who may call what, applied to gRPC calls: the caller's identity from the call (its verified
// client certificate, or its bearer token), checked against the access policy, which is read
// again whenever its file changes.
#ifndef GIFTWALL_SERVER_TRANSPORT_ACCESS_CONTROL_H_
#define GIFTWALL_SERVER_TRANSPORT_ACCESS_CONTROL_H_

#include <atomic>
#include <cstdint>
#include <map>
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
// The same, from a connection's auth context and a call's metadata.
CallerCredentials CredentialsOf(const grpc::AuthContext* auth,
                                const std::multimap<grpc::string_ref, grpc::string_ref>& metadata);

// A call let in for a role: who is calling, as the policy knew it then, and the call's place
// within that caller's limits, given back when the last copy of the Admission goes (keep one
// until the call is answered). The apps the call touches are checked against the same caller.
class Admission {
 public:
  // The caller's name; "" when there is no access policy.
  const std::string& caller() const { return name_; }
  // OK if the caller may touch every one of `app_codes` (normalized); else PERMISSION_DENIED.
  grpc::Status MayTouch(absl::Span<const std::string> app_codes) const;
  // Whether the policy grants the caller `role` too. Never without a policy: an open server has
  // no moderator.
  bool Holds(Role role) const;

 private:
  friend class AccessControl;
  std::shared_ptr<const AccessPolicy> policy_;  // keeps caller_ alive; null: open
  const AccessPolicy::Caller* caller_ = nullptr;
  std::string name_;
  std::shared_ptr<const CallerLimits::Permit> permit_;
};

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

  // Lets the call in if its caller may take `role` and is within its limits: OK with
  // *admission filled in (and *admission's caller named, once identified, even when refused);
  // else UNAUTHENTICATED, PERMISSION_DENIED or RESOURCE_EXHAUSTED, to answer.
  grpc::Status Admit(const grpc::ServerContextBase& context, Role role, Admission* admission) const
      ABSL_LOCKS_EXCLUDED(mu_);

  // Whether the policy knows the caller (always, without a policy).
  bool Knows(const CallerCredentials& credentials) const ABSL_LOCKS_EXCLUDED(mu_);
  // The policy's name for the call's caller: "" when the policy knows none, or there is none.
  std::string CallerOf(const grpc::ServerContextBase& context) const ABSL_LOCKS_EXCLUDED(mu_);

  // For the TLS server credentials: refuses callers the policy does not know (UNAUTHENTICATED)
  // from their metadata and certificate, before their request is read, and counts them; Health
  // and reflection stay open. The processor refers to this object, which must outlive the server.
  std::shared_ptr<grpc::AuthMetadataProcessor> RefuseStrangersBeforeReading();
  void CountRefusedBeforeReading() { refused_before_reading_.fetch_add(1); }
  int64_t refused_before_reading() const { return refused_before_reading_.load(); }

 private:
  AccessControl(std::string path, std::shared_ptr<const AccessPolicy> policy, std::string contents,
                absl::Duration refresh);
  void Watch();
  std::shared_ptr<const AccessPolicy> Policy() const ABSL_LOCKS_EXCLUDED(mu_);

  const std::string path_;
  const absl::Duration refresh_;
  mutable absl::Mutex mu_;
  std::shared_ptr<const AccessPolicy> policy_ ABSL_GUARDED_BY(mu_);  // null: open
  std::string contents_;         // the file as last read; the watcher's only
  mutable CallerLimits limits_;  // by caller name, across policy changes
  std::atomic<int64_t> refused_before_reading_{0};
  absl::Notification stop_;
  std::thread watcher_;
};

}  // namespace giftwall::transport

#endif  // GIFTWALL_SERVER_TRANSPORT_ACCESS_CONTROL_H_
