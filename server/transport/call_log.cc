#include "server/transport/call_log.h"

#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "google/protobuf/descriptor.h"
#include "server/domain/text.h"
#include "server/logging/trace_context.h"

namespace giftwall::transport {
namespace {

using grpc::experimental::InterceptionHookPoints;

// The calls running now, by the ServerContext that serves each.
class Registry {
 public:
  void Add(const grpc::ServerContextBase* context, std::shared_ptr<CallContext> call) {
    absl::MutexLock lock(&mu_);
    calls_[context] = std::move(call);
  }
  // Only `call`'s entry: a context's address may serve a new call by then.
  void Remove(const grpc::ServerContextBase* context, const CallContext* call) {
    absl::MutexLock lock(&mu_);
    if (auto it = calls_.find(context); it != calls_.end() && it->second.get() == call) {
      calls_.erase(it);
    }
  }
  std::shared_ptr<const CallContext> Find(const grpc::ServerContextBase* context) {
    absl::MutexLock lock(&mu_);
    auto it = calls_.find(context);
    return it != calls_.end() ? it->second : nullptr;
  }

 private:
  absl::Mutex mu_;
  absl::flat_hash_map<const grpc::ServerContextBase*, std::shared_ptr<CallContext>> calls_
      ABSL_GUARDED_BY(mu_);
};

Registry& Calls() {
  static Registry* const registry = new Registry();
  return *registry;
}

// An id as a log line shows it: at most 128 bytes, cut between characters.
std::string Shown(const std::string& id) {
  constexpr size_t kMaxBytes = 128;
  if (id.size() <= kMaxBytes) return id;
  return absl::StrCat(domain::TruncateUtf8(id, kMaxBytes), "...");
}

// ProjectMessage and ProjectMessages: a failed one is a failed projection.
constexpr absl::string_view kProjectMethods = "/giftwall.v1.GiftWallService/ProjectMessage";

// The codes that answer a request refused as it stands (the caller's to change), as opposed to
// a failure of the server or the database.
bool IsRefusal(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::NOT_FOUND:
    case grpc::StatusCode::ALREADY_EXISTS:
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::OUT_OF_RANGE:
    case grpc::StatusCode::UNIMPLEMENTED:
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::CANCELLED:
      return true;
    default:
      return false;
  }
}

}  // namespace

LoggedMethod MethodForLog(absl::string_view path) {
  // Exactly "/<service's full name>/<method>", as gRPC routes it: no other spelling of it.
  const size_t slash = path.rfind('/');
  if (absl::StartsWith(path, "/") && slash != 0 && slash != absl::string_view::npos) {
    const google::protobuf::ServiceDescriptor* service =
        google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
            std::string(path.substr(1, slash - 1)));
    if (service != nullptr &&
        service->FindMethodByName(std::string(path.substr(slash + 1))) != nullptr) {
      return LoggedMethod{std::string(path), true};
    }
  }
  constexpr size_t kMaxBytes = 100;
  return LoggedMethod{absl::StrCat("unknown: ", absl::CEscape(path.substr(0, kMaxBytes)),
                                   path.size() > kMaxBytes ? "..." : ""),
                      false};
}

logging::LogContext TraceOf(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata) {
  logging::LogContext log;
  if (auto it = metadata.find("traceparent"); it != metadata.end()) {
    if (std::optional<logging::TraceParent> parent =
            logging::ParseTraceParent(absl::string_view(it->second.data(), it->second.size()))) {
      log.trace_id = std::move(parent->trace_id);
    }
  }
  if (log.trace_id.empty()) log.trace_id = logging::NewTraceId();
  log.span_id = logging::NewSpanId();
  return log;
}

void DescribeRequest(const google::protobuf::Message& request, logging::LogContext* log) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Descriptor& type = *request.GetDescriptor();
  const google::protobuf::Reflection& fields = *request.GetReflection();
  const auto string_field = [&](const char* name) -> const FieldDescriptor* {
    const FieldDescriptor* f = type.FindFieldByName(name);
    return f != nullptr && f->type() == FieldDescriptor::TYPE_STRING ? f : nullptr;
  };
  if (const FieldDescriptor* f = string_field("app_code"); f != nullptr && !f->is_repeated()) {
    if (log->app_code.empty()) log->app_code = Shown(fields.GetString(request, f));
  }
  if (const FieldDescriptor* f = string_field("event_id"); f != nullptr && !f->is_repeated()) {
    if (const std::string id = fields.GetString(request, f); !id.empty()) {
      log->AddEventId(Shown(id));
    }
  }
  if (const FieldDescriptor* f = string_field("event_ids"); f != nullptr && f->is_repeated()) {
    for (int i = 0; i < fields.FieldSize(request, f); ++i) {
      log->AddEventId(Shown(fields.GetRepeatedString(request, f, i)));
    }
  }
  for (const char* name : {"message", "messages"}) {
    const FieldDescriptor* f = type.FindFieldByName(name);
    if (f == nullptr || f->type() != FieldDescriptor::TYPE_MESSAGE) continue;
    if (!f->is_repeated()) {
      if (fields.HasField(request, f)) DescribeRequest(fields.GetMessage(request, f), log);
      continue;
    }
    for (int i = 0; i < fields.FieldSize(request, f); ++i) {
      DescribeRequest(fields.GetRepeatedMessage(request, f, i), log);
    }
  }
}

bool RepeatLimiter::Allow(const std::string& key, absl::Time now, int64_t* suppressed) {
  absl::MutexLock lock(&mu_);
  if (entries_.size() >= kMaxKeys && !entries_.contains(key)) entries_.clear();
  Entry& entry = entries_[key];
  if (now - entry.last < period_) {
    ++entry.suppressed;
    return false;
  }
  *suppressed = entry.suppressed;
  entry = Entry{now, 0};
  return true;
}

size_t RepeatLimiter::keys() const {
  absl::MutexLock lock(&mu_);
  return entries_.size();
}

class CallLog::Interceptor final : public grpc::experimental::Interceptor {
 public:
  Interceptor(CallLog& log, grpc::experimental::ServerRpcInfo& info)
      : log_(log),
        context_(info.server_context()),
        method_(MethodForLog(info.method() != nullptr ? info.method() : "")),
        // Only this service's own methods take protobuf messages: Health's handler, for one,
        // takes raw bytes.
        describe_request_(method_.known && absl::StartsWith(method_.name, "/giftwall.")) {}

  ~Interceptor() override {
    if (published_) Calls().Remove(context_, call_.get());
  }

  // The context is complete, and published to the handler's threads (through the registry's
  // mutex), once the request has been read; no one changes it afterwards.
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_INITIAL_METADATA)) {
      Start(methods->GetRecvInitialMetadata());
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE) &&
        call_ != nullptr && !published_) {
      // Null when the request could not be decoded (UndecodableRequestInterceptor answers it).
      const void* request = methods->GetRecvMessage();
      if (describe_request_ && request != nullptr) {
        DescribeRequest(*static_cast<const google::protobuf::Message*>(request), &call_->log);
      }
      Publish();
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      if (call_ == nullptr) Start(nullptr);
      Publish();
      // From the registry: its mutex orders this thread after the one that wrote the context.
      std::shared_ptr<const CallContext> call = CallLog::Find(context_);
      if (call == nullptr) call = call_;
      methods->GetSendTrailingMetadata()->emplace(kTraceIdKey, call->log.trace_id);
      if (const grpc::Status status = methods->GetSendStatus(); !status.ok()) {
        log_.LogAnswer(*call, status);
      }
    }
    methods->Proceed();
  }

 private:
  void Start(const std::multimap<grpc::string_ref, grpc::string_ref>* metadata) {
    call_ = std::make_shared<CallContext>();
    call_->log = TraceOf(metadata != nullptr ? *metadata
                                             : std::multimap<grpc::string_ref, grpc::string_ref>());
    call_->log.method = method_.name;
    if (log_.access_ != nullptr && context_ != nullptr) {
      call_->log.caller = log_.access_->CallerOf(*context_);
    }
    call_->start = absl::Now();
  }

  void Publish() {
    if (published_ || context_ == nullptr) return;
    Calls().Add(context_, call_);
    published_ = true;
  }

  CallLog& log_;
  const grpc::ServerContextBase* const context_;
  const LoggedMethod method_;
  const bool describe_request_;
  std::shared_ptr<CallContext> call_;
  bool published_ = false;
};

namespace {

class CallLogInterceptorFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit CallLogInterceptorFactory(CallLog& log) : log_(log) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new CallLog::Interceptor(log_, *info);
  }

 private:
  CallLog& log_;
};

}  // namespace

CallLog::CallLog(const AccessControl* access) : access_(access) {}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
CallLog::InterceptorFactory() {
  return std::make_unique<CallLogInterceptorFactory>(*this);
}

std::shared_ptr<const CallContext> CallLog::Find(const grpc::ServerContextBase* context) {
  return context != nullptr ? Calls().Find(context) : nullptr;
}

void CallLog::LogAnswer(const CallContext& call, const grpc::Status& status) {
  const logging::ScopedLogContext scope(&call.log);
  const std::string code =
      absl::StatusCodeToString(static_cast<absl::StatusCode>(status.error_code()));
  const int64_t ms = absl::ToInt64Milliseconds(absl::Now() - call.start);
  const bool refused = IsRefusal(status.error_code());
  // Every failed projection, and every INTERNAL, keeps its line: someone pages on those.
  const bool always = !refused && (status.error_code() == grpc::StatusCode::INTERNAL ||
                                   status.error_code() == grpc::StatusCode::DATA_LOSS ||
                                   status.error_code() == grpc::StatusCode::UNKNOWN ||
                                   absl::StartsWith(call.log.method, kProjectMethods));
  int64_t suppressed = 0;
  if (!always) {
    // Every path no service declares counts as one method here: a caller chooses those. (Not a
    // ?: of "unknown" and the std::string: that would be a temporary string the view outlives.)
    absl::string_view method = call.log.method;
    if (absl::StartsWith(method, "unknown: ")) method = "unknown";
    if (!repeats_.Allow(absl::StrCat(call.log.caller, " ", method, " ", code), absl::Now(),
                        &suppressed)) {
      return;
    }
  }
  const std::string held_back =
      suppressed > 0 ? absl::StrCat(" (and ", suppressed, " like it not logged)") : "";
  if (refused) {
    LOG(INFO) << "call refused: " << code << " after " << ms << " ms: " << status.error_message()
              << held_back;
  } else {
    LOG(WARNING) << "call failed: " << code << " after " << ms << " ms: " << status.error_message()
                 << held_back;
  }
}

}  // namespace giftwall::transport
