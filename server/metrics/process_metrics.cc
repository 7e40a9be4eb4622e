#include "server/metrics/process_metrics.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "server/common/whole_file.h"

namespace giftwall::metrics {
namespace {

// Fields of /proc/<pid>/stat, counted from 1 as proc(5) does; the text after the name starts at
// field 3.
constexpr int kUtime = 14;
constexpr int kStime = 15;
constexpr int kStartTime = 22;
constexpr int kVsize = 23;
constexpr int kRss = 24;
constexpr int kFirstAfterName = 3;

absl::StatusOr<std::string> ReadWhole(const char* path) {
  std::optional<std::string> text = ReadWholeFile(path);
  if (!text.has_value()) return absl::UnavailableError(absl::StrCat("cannot read ", path));
  return *std::move(text);
}

}  // namespace

absl::StatusOr<ProcStat> ParseProcStat(absl::string_view stat, int64_t boot_time_seconds,
                                       int64_t ticks_per_second, int64_t page_size) {
  const size_t name_end = stat.rfind(')');
  if (name_end == absl::string_view::npos || ticks_per_second <= 0) {
    return absl::InvalidArgumentError("not a /proc/<pid>/stat line: no \")\"");
  }
  const std::vector<absl::string_view> fields =
      absl::StrSplit(absl::StripAsciiWhitespace(stat.substr(name_end + 1)), ' ', absl::SkipEmpty());
  const auto field = [&](int number, int64_t* value) {
    const size_t at = static_cast<size_t>(number - kFirstAfterName);
    return at < fields.size() && absl::SimpleAtoi(fields[at], value);
  };
  int64_t utime = 0, stime = 0, start = 0, vsize = 0, rss = 0;
  if (!field(kUtime, &utime) || !field(kStime, &stime) || !field(kStartTime, &start) ||
      !field(kVsize, &vsize) || !field(kRss, &rss)) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a /proc/<pid>/stat line: ", fields.size(), " fields after the name"));
  }
  const double ticks = static_cast<double>(ticks_per_second);
  ProcStat out;
  out.cpu_seconds = static_cast<double>(utime + stime) / ticks;
  out.start_time_seconds =
      static_cast<double>(boot_time_seconds) + static_cast<double>(start) / ticks;
  out.virtual_memory_bytes = static_cast<double>(vsize);
  out.resident_memory_bytes = static_cast<double>(rss) * static_cast<double>(page_size);
  return out;
}

absl::StatusOr<int64_t> ParseBootTime(absl::string_view proc_stat) {
  for (absl::string_view line : absl::StrSplit(proc_stat, '\n')) {
    int64_t btime = 0;
    if (absl::ConsumePrefix(&line, "btime ") &&
        absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &btime)) {
      return btime;
    }
  }
  return absl::InvalidArgumentError("no btime line in /proc/stat");
}

absl::StatusOr<ProcessSample> SampleThisProcess() {
  absl::StatusOr<std::string> stat = ReadWhole("/proc/self/stat");
  if (!stat.ok()) return stat.status();
  absl::StatusOr<std::string> system = ReadWhole("/proc/stat");
  if (!system.ok()) return system.status();
  absl::StatusOr<int64_t> boot = ParseBootTime(*system);
  if (!boot.ok()) return boot.status();
  ProcessSample sample;
  absl::StatusOr<ProcStat> parsed =
      ParseProcStat(*stat, *boot, sysconf(_SC_CLK_TCK), sysconf(_SC_PAGESIZE));
  if (!parsed.ok()) return parsed.status();
  sample.stat = *parsed;
  if (DIR* fds = opendir("/proc/self/fd"); fds != nullptr) {
    while (const dirent* entry = readdir(fds)) {
      if (entry->d_name[0] != '.') ++sample.open_fds;
    }
    closedir(fds);
    --sample.open_fds;  // the directory's own descriptor
  }
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) sample.max_fds = static_cast<int64_t>(limit.rlim_cur);
  return sample;
}

}  // namespace giftwall::metrics
