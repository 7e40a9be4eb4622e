// The audit log: one line per audited call, whatever its answer.
#ifndef GIFTWALL_SERVER_TRANSPORT_AUDIT_H_
#define GIFTWALL_SERVER_TRANSPORT_AUDIT_H_

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "glog/logging.h"
#include "grpcpp/grpcpp.h"
#include "server/transport/access_control.h"

namespace giftwall::transport {

// One audited call (admin calls, catalogue writes) as the audit log records it: who, what,
// on which app, and how it ended.
struct AuditEntry {
  Admission admission;  // who; held until the call is answered
  std::string method;
  std::string app_code;  // as the request gave it until it is known to be valid
  std::string what;      // what the call asked for, when the method alone does not say

  void Log(const grpc::Status& status) const {
    absl::string_view who = admission.caller();
    if (who.empty()) {
      who = status.error_code() == grpc::StatusCode::UNAUTHENTICATED ? "(unidentified)"
                                                                     : "(anyone: no access policy)";
    }
    LOG(INFO) << "audit: caller=" << who << " method=" << method
              << " app_code=" << absl::CEscape(app_code) << (what.empty() ? "" : " ") << what
              << " result="
              << absl::StatusCodeToString(static_cast<absl::StatusCode>(status.error_code()));
  }

  // `work`, logging how it ended.
  std::function<grpc::Status()> Wrap(std::function<grpc::Status()> work) const {
    return [entry = *this, work = std::move(work)] {
      grpc::Status status = work();
      entry.Log(status);
      return status;
    };
  }
};

}  // namespace giftwall::transport

#endif  // GIFTWALL_SERVER_TRANSPORT_AUDIT_H_
