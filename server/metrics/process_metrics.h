// The process_* series that Prometheus client libraries export (CPU, memory, open files, start
// time), read from /proc at each scrape: prometheus-cpp has no process collector.
#ifndef GIFTWALL_SERVER_METRICS_PROCESS_METRICS_H_
#define GIFTWALL_SERVER_METRICS_PROCESS_METRICS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace giftwall::metrics {

// What /proc/<pid>/stat says of a process.
struct ProcStat {
  double cpu_seconds = 0;         // user + system
  double start_time_seconds = 0;  // since the Unix epoch
  double virtual_memory_bytes = 0;
  double resident_memory_bytes = 0;
};

// Parses the text of /proc/<pid>/stat. `boot_time_seconds` is /proc/stat's btime. The process's
// name may hold spaces and parentheses: the fields are counted after its last ')'.
// INVALID_ARGUMENT if the text is not such a line.
absl::StatusOr<ProcStat> ParseProcStat(absl::string_view stat, int64_t boot_time_seconds,
                                       int64_t ticks_per_second, int64_t page_size);

// /proc/stat's btime; INVALID_ARGUMENT if the text has none.
absl::StatusOr<int64_t> ParseBootTime(absl::string_view proc_stat);

// This process, now.
struct ProcessSample {
  ProcStat stat;
  int64_t open_fds = 0;
  int64_t max_fds = 0;  // the soft limit
};
absl::StatusOr<ProcessSample> SampleThisProcess();

}  // namespace giftwall::metrics

#endif  // GIFTWALL_SERVER_METRICS_PROCESS_METRICS_H_
