// Who may call what (DESIGN §6): the --access_policy_file, parsed and checked, and the decision
// for one call. Pure: no files, no gRPC.
#ifndef GIFTWALL_SERVER_TRANSPORT_ACCESS_POLICY_H_
#define GIFTWALL_SERVER_TRANSPORT_ACCESS_POLICY_H_

#include <array>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace giftwall::transport {

// What a method does, which the policy grants by role. kModerator is not a method's: it lets a
// reader see every sender unmasked (DESIGN §2.18).
enum class Role { kRelay, kReader, kAdmin, kCatalog, kPrivacy, kModerator };

absl::string_view RoleName(Role role);

// Who the transport says is calling.
struct CallerCredentials {
  // The subject alternative names of the client certificate TLS verified; empty without one.
  std::vector<std::string> certificate_names;
  // The token of an `authorization: Bearer <token>` header, if any.
  std::optional<std::string> bearer_token;
};

class AccessPolicy {
 public:
  struct Caller {
    std::string name;
    std::set<std::string> certificate_names;
    std::vector<std::array<uint8_t, 32>> token_digests;  // SHA-256
    std::set<Role> roles;
    bool every_app = false;
    std::set<std::string> app_codes;
    int max_concurrent_calls = 0;  // 0: no limit
    int max_calls_per_second = 0;  // 0: no limit
  };

  // The policy in `json` (giftwall.config.v1.AccessPolicy, protobuf's JSON form), or
  // INVALID_ARGUMENT naming what is wrong ("callers[2].roles[0]: ...").
  static absl::StatusOr<AccessPolicy> Parse(absl::string_view json);

  // The caller the credentials identify: by certificate first, then by token; null if none.
  const Caller* Identify(const CallerCredentials& credentials) const;

  // May the caller `credentials` identify take `role` on every one of `app_codes` (normalized)?
  // OK; UNAUTHENTICATED when no caller is identified; PERMISSION_DENIED naming the role or the
  // app that is not granted. *caller is the caller identified, if any (it lives as long as this).
  absl::Status Authorize(const CallerCredentials& credentials, Role role,
                         absl::Span<const std::string> app_codes, const Caller** caller) const;

  // May `caller` touch every one of `app_codes`? OK, or PERMISSION_DENIED naming the first app
  // it may not.
  static absl::Status MayTouch(const Caller& caller, absl::Span<const std::string> app_codes);

  const std::vector<Caller>& callers() const { return callers_; }

 private:
  std::vector<Caller> callers_;
};

}  // namespace giftwall::transport

#endif  // GIFTWALL_SERVER_TRANSPORT_ACCESS_POLICY_H_
