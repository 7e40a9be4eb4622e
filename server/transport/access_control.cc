#include "server/transport/access_control.h"

#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "grpc/grpc_security_constants.h"
#include "server/common/whole_file.h"
#include "server/transport/call_log.h"
#include "server/transport/grpc_status.h"

namespace giftwall::transport {
namespace {

absl::StatusOr<std::string> ReadPolicyFile(const std::string& path) {
  std::optional<std::string> contents = ReadWholeFile(path);
  if (!contents.has_value()) return absl::InvalidArgumentError(absl::StrCat("cannot read ", path));
  return *std::move(contents);
}

}  // namespace

CallerCredentials CredentialsOf(const grpc::ServerContextBase& context) {
  std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  return CredentialsOf(auth.get(), context.client_metadata());
}

CallerCredentials CredentialsOf(const grpc::AuthContext* auth,
                                const std::multimap<grpc::string_ref, grpc::string_ref>& metadata) {
  CallerCredentials credentials;
  if (auth != nullptr && auth->IsPeerAuthenticated()) {
    // DNS and URI names only, as the policy says: not the email or IP addresses a certificate
    // may also carry (x509_subject_alternative_name mixes all four).
    for (const char* kind : {GRPC_PEER_DNS_PROPERTY_NAME, GRPC_PEER_URI_PROPERTY_NAME}) {
      for (const grpc::string_ref& name : auth->FindPropertyValues(kind)) {
        credentials.certificate_names.emplace_back(name.data(), name.size());
      }
    }
  }
  // A bearer token counts only over TLS: in plaintext anyone on the path could replay it.
  bool tls = false;
  if (auth != nullptr) {
    const std::vector<grpc::string_ref> security =
        auth->FindPropertyValues(GRPC_TRANSPORT_SECURITY_TYPE_PROPERTY_NAME);
    // TlsServerCredentials say "tls"; the older SslServerCredentials "ssl".
    tls = !security.empty() && (security.front() == GRPC_TLS_TRANSPORT_SECURITY_TYPE ||
                                security.front() == GRPC_SSL_TRANSPORT_SECURITY_TYPE);
  }
  if (auto it = metadata.find("authorization"); tls && it != metadata.end()) {
    const absl::string_view value(it->second.data(), it->second.size());
    constexpr absl::string_view kScheme = "bearer ";
    if (value.size() > kScheme.size() &&
        absl::EqualsIgnoreCase(value.substr(0, kScheme.size()), kScheme)) {
      // A blank token is no token: it would be what an unset $TOKEN sends.
      const absl::string_view token = absl::StripAsciiWhitespace(value.substr(kScheme.size()));
      if (!token.empty()) credentials.bearer_token = std::string(token);
    }
  }
  return credentials;
}

AccessControl::AccessControl(std::string path, std::shared_ptr<const AccessPolicy> policy,
                             std::string contents, absl::Duration refresh)
    : path_(std::move(path)),
      refresh_(refresh),
      policy_(std::move(policy)),
      contents_(std::move(contents)) {
  if (!path_.empty()) watcher_ = std::thread([this] { Watch(); });
}

std::unique_ptr<AccessControl> AccessControl::Open() {
  return std::unique_ptr<AccessControl>(new AccessControl("", nullptr, "", absl::ZeroDuration()));
}

absl::StatusOr<std::unique_ptr<AccessControl>> AccessControl::FromFile(const std::string& path,
                                                                       absl::Duration refresh) {
  absl::StatusOr<std::string> contents = ReadPolicyFile(path);
  if (!contents.ok()) return contents.status();
  absl::StatusOr<AccessPolicy> policy = AccessPolicy::Parse(*contents);
  if (!policy.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", policy.status().message()));
  }
  LOG(INFO) << "access policy " << path << ": " << policy->callers().size() << " caller(s)";
  return std::unique_ptr<AccessControl>(
      new AccessControl(path, std::make_shared<const AccessPolicy>(*std::move(policy)),
                        *std::move(contents), refresh));
}

AccessControl::~AccessControl() {
  stop_.Notify();
  if (watcher_.joinable()) watcher_.join();
}

void AccessControl::Watch() {
  while (!stop_.WaitForNotificationWithTimeout(refresh_)) {
    absl::StatusOr<std::string> contents = ReadPolicyFile(path_);
    if (!contents.ok()) {
      LOG(ERROR) << "access policy: " << contents.status().message()
                 << "; the previous policy stays in force";
      continue;
    }
    if (*contents == contents_) continue;
    contents_ = *std::move(contents);
    absl::StatusOr<AccessPolicy> policy = AccessPolicy::Parse(contents_);
    if (!policy.ok()) {
      LOG(ERROR) << "access policy " << path_ << ": " << policy.status().message()
                 << "; the previous policy stays in force";
      continue;
    }
    LOG(INFO) << "access policy " << path_ << " changed: " << policy->callers().size()
              << " caller(s)";
    auto next = std::make_shared<const AccessPolicy>(*std::move(policy));
    absl::MutexLock lock(&mu_);
    policy_ = std::move(next);
  }
}

std::shared_ptr<const AccessPolicy> AccessControl::Policy() const {
  absl::MutexLock lock(&mu_);
  return policy_;
}

grpc::Status AccessControl::Admit(const grpc::ServerContextBase& context, Role role,
                                  Admission* admission) const {
  admission->policy_ = Policy();
  if (admission->policy_ == nullptr) return grpc::Status::OK;
  absl::Status status =
      admission->policy_->Authorize(CredentialsOf(context), role, {}, &admission->caller_);
  if (admission->caller_ != nullptr) admission->name_ = admission->caller_->name;
  if (status.ok()) {
    status =
        limits_.Admit(admission->caller_->name, admission->caller_->max_concurrent_calls,
                      admission->caller_->max_calls_per_second, absl::Now(), &admission->permit_);
  }
  return ToGrpcStatus(status);
}

bool AccessControl::Knows(const CallerCredentials& credentials) const {
  const std::shared_ptr<const AccessPolicy> policy = Policy();
  return policy == nullptr || policy->Identify(credentials) != nullptr;
}

std::string AccessControl::CallerOf(const grpc::ServerContextBase& context) const {
  const std::shared_ptr<const AccessPolicy> policy = Policy();
  if (policy == nullptr) return "";
  const AccessPolicy::Caller* caller = policy->Identify(CredentialsOf(context));
  return caller == nullptr ? "" : caller->name;
}

namespace {

// Health and reflection stay open to every caller (probes, grpcurl).
bool OpenToEveryone(absl::string_view path) {
  return absl::StartsWith(path, "/grpc.health.v1.Health/") ||
         absl::StartsWith(path, "/grpc.reflection.v1alpha.ServerReflection/");
}

class RefuseStrangers final : public grpc::AuthMetadataProcessor {
 public:
  explicit RefuseStrangers(AccessControl& access) : access_(access) {}

  // Decides from memory (the policy, a SHA-256): on gRPC's thread, inline.
  bool IsBlocking() const override { return false; }

  grpc::Status Process(const InputMetadata& metadata, grpc::AuthContext* context,
                       OutputMetadata* /*consumed*/, OutputMetadata* /*response*/) override {
    const auto path = metadata.find(":path");
    const absl::string_view method =
        path == metadata.end() ? absl::string_view()
                               : absl::string_view(path->second.data(), path->second.size());
    if (OpenToEveryone(method) || access_.Knows(CredentialsOf(context, metadata))) {
      return grpc::Status::OK;
    }
    access_.CountRefusedBeforeReading();
    // No handler or interceptor sees this call: its line and trace id are made here.
    logging::LogContext log = TraceOf(metadata);
    const LoggedMethod logged = MethodForLog(method);
    log.method = logged.name;
    const logging::ScopedLogContext scope(&log);
    int64_t suppressed = 0;
    if (refusals_.Allow(logged.known ? logged.name : "unknown", absl::Now(), &suppressed)) {
      LOG(WARNING) << "refused before reading its request, a caller the access policy does not "
                      "know: UNAUTHENTICATED"
                   << (suppressed > 0 ? absl::StrCat(" (and ", suppressed, " like it not logged)")
                                      : "");
    }
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "the access policy knows no caller by this certificate or token");
  }

 private:
  AccessControl& access_;
  RepeatLimiter refusals_{CallLog::kRepeatPeriod};
};

}  // namespace

std::shared_ptr<grpc::AuthMetadataProcessor> AccessControl::RefuseStrangersBeforeReading() {
  return std::make_shared<RefuseStrangers>(*this);
}

grpc::Status Admission::MayTouch(absl::Span<const std::string> app_codes) const {
  if (caller_ == nullptr) return grpc::Status::OK;  // open (a refused call never gets here)
  return ToGrpcStatus(AccessPolicy::MayTouch(*caller_, app_codes));
}

bool Admission::Holds(Role role) const {
  return caller_ != nullptr && caller_->roles.count(role) > 0;
}

}  // namespace giftwall::transport
