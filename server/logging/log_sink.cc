#include "server/logging/log_sink.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
// protobuf 3.21 (Debian 12) declares SetLogHandler, its public hook for its own lines, here.
#include "google/protobuf/stubs/logging.h"
#include "grpc/support/log.h"

namespace giftwall::logging {
namespace {

// The length of the UTF-8 character `text` starts with (a lead byte of 0x80 or above), or 0 if
// it does not start with one: a bad lead byte, a missing or bad continuation byte, an overlong
// form, a surrogate or a code point past U+10FFFF.
size_t Utf8Length(absl::string_view text) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(0);
  size_t length = 0;
  uint32_t cp = 0;
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
    cp = lead & 0x1f;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    cp = lead & 0x0f;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    cp = lead & 0x07;
  } else {
    return 0;
  }
  if (text.size() < length) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(k) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (byte(k) & 0x3f);
  }
  const uint32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < smallest[length] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return length;
}

// `text` as a JSON string, quotes included, always valid UTF-8: a byte that is not part of a
// UTF-8 character (gRPC core's lines, a caller's bytes in a message) becomes U+FFFD.
std::string JsonString(absl::string_view text) {
  std::string out = "\"";
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (static_cast<unsigned char>(c) >= 0x80) {
      const size_t length = Utf8Length(text.substr(i));
      if (length == 0) {
        out += "\\ufffd";
      } else {
        out.append(text.data() + i, length);
        i += length - 1;
      }
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          absl::StrAppendFormat(&out, "\\u%04x", c);
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

std::string JsonList(const std::vector<std::string>& items) {
  std::vector<std::string> quoted;
  quoted.reserve(items.size());
  for (const std::string& item : items) quoted.push_back(JsonString(item));
  return absl::StrCat("[", absl::StrJoin(quoted, ","), "]");
}

// The context's known fields as (name, JSON value) pairs, in a fixed order.
std::vector<std::pair<const char*, std::string>> ContextFields(const LogContext& c) {
  std::vector<std::pair<const char*, std::string>> fields;
  const auto add = [&](const char* name, const std::string& value) {
    if (!value.empty()) fields.emplace_back(name, JsonString(value));
  };
  add("trace_id", c.trace_id);
  add("span_id", c.span_id);
  add("caller", c.caller);
  add("method", c.method);
  add("app_code", c.app_code);
  if (!c.event_ids.empty()) {
    fields.emplace_back("event_ids", JsonList(c.event_ids));
    if (c.events > c.event_ids.size()) fields.emplace_back("events", absl::StrCat(c.events));
  }
  if (!c.trace_ids.empty()) {
    fields.emplace_back("trace_ids", JsonList(c.trace_ids));
    fields.emplace_back("traces", absl::StrCat(c.traces));
  }
  return fields;
}

const char* SeverityName(google::LogSeverity severity) {
  return severity >= 0 && severity < google::NUM_SEVERITIES ? google::GetLogSeverityName(severity)
                                                            : "UNKNOWN";
}

class StderrSink final : public google::LogSink {
 public:
  explicit StderrSink(LogFormat format) : format_(format) {}

  void send(google::LogSeverity severity, const char* /*full_filename*/, const char* base_filename,
            int line, const google::LogMessageTime& time, const char* message,
            size_t message_len) override {
    std::string out =
        FormatLogLine(format_, absl::FromTimeT(time.timestamp()) + absl::Microseconds(time.usec()),
                      severity, base_filename, line, static_cast<long>(syscall(SYS_gettid)),
                      absl::string_view(message, message_len), CurrentLogContext());
    out += '\n';
    absl::MutexLock lock(&mu_);  // whole lines, never interleaved
    std::fwrite(out.data(), 1, out.size(), stderr);
    std::fflush(stderr);
  }

 private:
  const LogFormat format_;
  absl::Mutex mu_;
};

// gRPC core's lines, into glog (and so into the same format), as nobody's call: a core thread
// may be between calls.
void LogFromGrpc(gpr_log_func_args* args) {
  const ScopedLogContext none(nullptr);
  const google::LogSeverity severity =
      args->severity == GPR_LOG_SEVERITY_ERROR ? google::GLOG_ERROR : google::GLOG_INFO;
  google::LogMessage(args->file, args->line, severity).stream() << "grpc: " << args->message;
}

// protobuf's own lines (a string field that is not UTF-8, say), likewise.
void LogFromProtobuf(google::protobuf::LogLevel level, const char* file, int line,
                     const std::string& message) {
  const google::LogSeverity severity =
      level >= google::protobuf::LOGLEVEL_ERROR     ? google::GLOG_ERROR
      : level == google::protobuf::LOGLEVEL_WARNING ? google::GLOG_WARNING
                                                    : google::GLOG_INFO;
  google::LogMessage(file, line, severity).stream() << "protobuf: " << message;
}

}  // namespace

absl::StatusOr<LogFormat> ParseLogFormat(absl::string_view name) {
  if (name == "text") return LogFormat::kText;
  if (name == "json") return LogFormat::kJson;
  return absl::InvalidArgumentError(
      absl::StrCat("--log_format: \"", name, "\" is neither text nor json"));
}

std::string FormatLogLine(LogFormat format, absl::Time time, google::LogSeverity severity,
                          absl::string_view file, int line, long thread_id,
                          absl::string_view message, const LogContext* context) {
  const std::vector<std::pair<const char*, std::string>> fields =
      context != nullptr ? ContextFields(*context)
                         : std::vector<std::pair<const char*, std::string>>();
  if (format == LogFormat::kJson) {
    std::string out = absl::StrCat(
        "{\"time\":\"", absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", time, absl::UTCTimeZone()),
        "\",\"severity\":\"", SeverityName(severity), "\",\"message\":", JsonString(message));
    for (const auto& [name, value] : fields) absl::StrAppend(&out, ",\"", name, "\":", value);
    absl::StrAppend(&out, "}");
    return out;
  }
  // glog's own line ("I20261207 12:00:00.123456  1234 file.cc:12] message"), then the context.
  std::string out =
      absl::StrCat(std::string(1, SeverityName(severity)[0]),
                   absl::FormatTime("%Y%m%d %H:%M:%E6S", time, absl::LocalTimeZone()),
                   absl::StrFormat(" %5d ", thread_id), file, ":", line, "] ", message);
  if (!fields.empty()) {
    std::vector<std::string> pairs;
    for (const auto& [name, value] : fields) pairs.push_back(absl::StrCat(name, "=", value));
    absl::StrAppend(&out, " {", absl::StrJoin(pairs, " "), "}");
  }
  return out;
}

void InitLogging(const char* argv0, LogFormat format) {
  // Only the sink writes: no glog line to stderr of its own, and no log files.
  FLAGS_logtostderr = false;
  FLAGS_alsologtostderr = false;
  FLAGS_stderrthreshold = google::NUM_SEVERITIES;
  google::InitGoogleLogging(argv0);
  for (int severity = 0; severity < google::NUM_SEVERITIES; ++severity) {
    google::SetLogDestination(severity, "");
  }
  static StderrSink* const sink = new StderrSink(format);  // for the process's life
  google::AddLogSink(sink);
  gpr_set_log_function(LogFromGrpc);
  google::protobuf::SetLogHandler(LogFromProtobuf);
}

}  // namespace giftwall::logging
