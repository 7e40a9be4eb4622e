#include "client/progress_bar.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"

namespace giftwall::client {
namespace {

// A terminal can take redraws far faster than anyone reads them; this keeps a fast stream of
// updates from flooding a slow terminal (e.g. over ssh).
constexpr absl::Duration kTtyInterval = absl::Milliseconds(100);
constexpr absl::Duration kLogInterval = absl::Seconds(1);

std::string FormatRate(double per_second) {
  if (per_second >= 10) return absl::StrFormat("%.0f/s", per_second);
  return absl::StrFormat("%.1f/s", per_second);
}

}  // namespace

std::string FormatShortDuration(absl::Duration d) {
  if (d < absl::ZeroDuration()) d = absl::ZeroDuration();
  if (d < absl::Seconds(1)) return absl::StrCat(absl::ToInt64Milliseconds(d), "ms");
  const int64_t s = absl::ToInt64Seconds(d);
  if (s < 60) return absl::StrCat(s, "s");
  if (s < 3600) return absl::StrCat(s / 60, "m", s % 60, "s");
  if (s < 86400) return absl::StrCat(s / 3600, "h", s % 3600 / 60, "m");
  return absl::StrCat(s / 86400, "d", s % 86400 / 3600, "h");
}

std::string FormatProgress(absl::string_view label, int64_t done, int64_t total,
                           absl::Duration elapsed, int width) {
  done = std::max<int64_t>(done, 0);
  width = std::max(width, 1);
  const double seconds = absl::ToDoubleSeconds(elapsed);
  const bool rate_known = seconds > 0;
  const double rate = rate_known ? static_cast<double>(done) / seconds : 0;
  const std::string rate_text = rate_known ? FormatRate(rate) : "-/s";
  if (total <= 0) return absl::StrCat(label, " ", done, "  ", rate_text);

  // In double: exact for any realistic count, and no int64 overflow multiplying by 100.
  const double fraction = std::min(static_cast<double>(done) / static_cast<double>(total), 1.0);
  const int filled = static_cast<int>(std::floor(fraction * width));
  const int percent = static_cast<int>(std::floor(fraction * 100));
  std::string eta = "-";
  if (done >= total) {
    eta = "0s";
  } else if (rate_known && rate > 0) {
    // Rounded up, so "ETA 0s" means finished rather than "under a second to go".
    const double left = static_cast<double>(total - done) / rate;
    eta = FormatShortDuration(absl::Ceil(absl::Seconds(left), absl::Seconds(1)));
  }
  return absl::StrFormat("%s [%s%s] %3d%% %d/%d  %s  ETA %s", label, std::string(filled, '#'),
                         std::string(width - filled, '.'), percent, done, total, rate_text, eta);
}

ProgressBar::ProgressBar(std::string label)
    : label_(std::move(label)), start_(absl::Now()), tty_(isatty(fileno(stderr)) != 0) {}

ProgressBar::~ProgressBar() { Finish(); }

void ProgressBar::SetLabel(std::string label) { label_ = std::move(label); }

void ProgressBar::Update(int64_t done, int64_t total) {
  if (finished_) return;
  done_ = done;
  total_ = total;
  updated_ = true;
  drawn_ = false;
  const absl::Time now = absl::Now();
  if (now - last_draw_ >= (tty_ ? kTtyInterval : kLogInterval)) Draw(now);
}

void ProgressBar::Finish() {
  if (finished_) return;
  finished_ = true;
  if (!updated_) return;
  if (!drawn_) Draw(absl::Now());
  if (tty_) std::fputc('\n', stderr);
  std::fflush(stderr);
}

void ProgressBar::Draw(absl::Time now) {
  const std::string line = FormatProgress(label_, done_, total_, now - start_);
  if (tty_) {
    // Spaces rather than an erase-line escape: works on any terminal.
    const size_t pad = last_width_ > line.size() ? last_width_ - line.size() : 0;
    std::fprintf(stderr, "\r%s%s", line.c_str(), std::string(pad, ' ').c_str());
    last_width_ = line.size();
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  std::fflush(stderr);
  last_draw_ = now;
  drawn_ = true;
}

}  // namespace giftwall::client
