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

void ScanHorizon::Advance(int64_t resume_from_ms, int64_t newest_ms) {
  const int64_t limit =
      newest_ms < kBeginningOfHistory + margin_ms_ ? kBeginningOfHistory : newest_ms - margin_ms_;
  horizon_ms_ = std::max(horizon_ms_, std::min(resume_from_ms, limit));
}

}  // namespace giftwall::domain
