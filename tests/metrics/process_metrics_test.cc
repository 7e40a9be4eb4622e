// The process_* series' source: /proc/<pid>/stat and /proc/stat parsed, and this process read.
#include "server/metrics/process_metrics.h"

#include <ctime>

#include "gtest/gtest.h"

namespace giftwall::metrics {
namespace {

// Fields 3.. of a real line, after a name with a space and a parenthesis: utime 150 and stime 50
// ticks, start 1000 ticks after boot, vsize 4 MiB, rss 256 pages.
constexpr char kStat[] =
    "4242 (giftwall) (x) S 1 4242 4242 0 -1 4194560 1000 0 0 0 150 50 0 0 20 0 17 0 1000 4194304 "
    "256 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 17 1 0 0 0 0 0\n";

TEST(ProcessMetrics, AStatLineIsReadAfterTheNamesLastParenthesis) {
  absl::StatusOr<ProcStat> stat = ParseProcStat(kStat, 1'700'000'000, 100, 4096);
  ASSERT_TRUE(stat.ok()) << stat.status();
  EXPECT_DOUBLE_EQ(stat->cpu_seconds, 2.0);
  EXPECT_DOUBLE_EQ(stat->start_time_seconds, 1'700'000'010.0);
  EXPECT_DOUBLE_EQ(stat->virtual_memory_bytes, 4194304.0);
  EXPECT_DOUBLE_EQ(stat->resident_memory_bytes, 256.0 * 4096);
}

TEST(ProcessMetrics, ALineThatIsNotAStatLineIsRefused) {
  EXPECT_FALSE(ParseProcStat("", 0, 100, 4096).ok());
  EXPECT_FALSE(ParseProcStat("1 (short) S 1 2 3", 0, 100, 4096).ok());
  EXPECT_FALSE(ParseProcStat(kStat, 0, 0, 4096).ok());
}

TEST(ProcessMetrics, TheBootTimeIsProcStatsBtime) {
  absl::StatusOr<int64_t> boot = ParseBootTime("cpu  1 2 3\nintr 5\nbtime 1765000000\nctxt 9\n");
  ASSERT_TRUE(boot.ok()) << boot.status();
  EXPECT_EQ(*boot, 1765000000);
  EXPECT_FALSE(ParseBootTime("cpu 1 2 3\n").ok());
}

TEST(ProcessMetrics, ThisProcessIsReadFromProc) {
  absl::StatusOr<ProcessSample> sample = SampleThisProcess();
  ASSERT_TRUE(sample.ok()) << sample.status();
  EXPECT_GE(sample->stat.cpu_seconds, 0);
  EXPECT_GT(sample->stat.resident_memory_bytes, 0);
  EXPECT_GE(sample->stat.virtual_memory_bytes, sample->stat.resident_memory_bytes);
  // stdin, stdout and stderr at least; fewer than the limit.
  EXPECT_GE(sample->open_fds, 3);
  EXPECT_LT(sample->open_fds, sample->max_fds);
  const double now = static_cast<double>(std::time(nullptr));
  EXPECT_LE(sample->stat.start_time_seconds, now + 1);
  EXPECT_GT(sample->stat.start_time_seconds, now - 3600);
}

}  // namespace
}  // namespace giftwall::metrics
