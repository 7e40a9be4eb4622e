// A one-line progress display for long admin operations (catch-up, rebuild).
#ifndef GIFTWALL_CLIENT_PROGRESS_BAR_H_
#define GIFTWALL_CLIENT_PROGRESS_BAR_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace giftwall::client {

// "3m12s", "45s", "1h5m", "2d3h", "250ms": the two largest units, for ages and ETAs.
std::string FormatShortDuration(absl::Duration d);

// One line like: "rebuilding [#########.........]  45% 4500/10000  812/s  ETA 6s"
// done/total, rate (done per second since start) and time left; total 0 = unknown (no
// bar/percent/ETA, just count and rate). done beyond total shows as 100%: work can grow while it
// runs (events keep arriving). With no elapsed time the rate and ETA are "-", never a division
// by zero.
std::string FormatProgress(absl::string_view label, int64_t done, int64_t total,
                           absl::Duration elapsed, int width = 30);

// Redraws the line in place on a terminal (\r), or prints one line per update at most every
// second when stderr is not a TTY (isatty), so logs of scripted runs stay short. Writes to
// stderr, leaving stdout to the results.
class ProgressBar {
 public:
  explicit ProgressBar(std::string label);
  ~ProgressBar();  // Finish()es
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // The label shown before the bar from the next update on (e.g. a rebuild's phase).
  void SetLabel(std::string label);
  void Update(int64_t done, int64_t total);
  // Shows the last update if it is not on screen yet and ends the line. Idempotent; does nothing
  // if Update() was never called.
  void Finish();

 private:
  void Draw(absl::Time now);

  std::string label_;
  const absl::Time start_;
  const bool tty_;
  int64_t done_ = 0;
  int64_t total_ = 0;
  bool updated_ = false;  // Update() was called
  bool drawn_ = true;     // the last update is on screen
  bool finished_ = false;
  absl::Time last_draw_ = absl::InfinitePast();
  size_t last_width_ = 0;  // of the line on screen, to blank out what a shorter one leaves
};

}  // namespace giftwall::client

#endif  // GIFTWALL_CLIENT_PROGRESS_BAR_H_
