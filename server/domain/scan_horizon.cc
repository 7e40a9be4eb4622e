#include "server/domain/scan_horizon.h"

#include <algorithm>

namespace giftwall::domain {

int64_t ScanHorizon::Start(absl::Time now) {
  if (now - last_full_sweep_ >= full_sweep_every_) {
    horizon_ms_ = kBeginningOfHistory;
    last_full_sweep_ = now;
  }
  return horizon_ms_;
}

void ScanHorizon::Advance(int64_t resume_from_ms, bool reached_newest) {
  int64_t start = resume_from_ms;
  if (reached_newest) {
    start = resume_from_ms < kBeginningOfHistory + margin_ms_ ? kBeginningOfHistory
                                                              : resume_from_ms - margin_ms_;
  }
  horizon_ms_ = std::max(horizon_ms_, start);
}

}  // namespace giftwall::domain
