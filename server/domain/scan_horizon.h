// Where each catch-up pass starts reading the outbox (DESIGN §2.11). Not a watermark: the scan is
// an anti-join, and the horizon only spares it re-reading all history on every pass. It trails
// what the passes got through by a safety margin (created_at is not commit order), and now and
// then it drops to the beginning of history for a full sweep.
#ifndef GIFTWALL_SERVER_DOMAIN_SCAN_HORIZON_H_
#define GIFTWALL_SERVER_DOMAIN_SCAN_HORIZON_H_

#include <cstdint>
#include <limits>

#include "absl/time/time.h"

namespace giftwall::domain {

// Where a full sweep starts: before every outbox row, even one whose created_at_ms is 0 or
// negative (such a row goes dead with its reason, so it must be found like any other).
inline constexpr int64_t kBeginningOfHistory = std::numeric_limits<int64_t>::min();

class ScanHorizon {
 public:
  ScanHorizon(absl::Duration safety_margin, absl::Duration full_sweep_every)
      : margin_ms_(absl::ToInt64Milliseconds(safety_margin)), full_sweep_every_(full_sweep_every) {}

  // created_at_ms the next pass starts at: kBeginningOfHistory when a full sweep is due (the
  // first pass is one), else the current horizon.
  int64_t Start(absl::Time now);

  // A pass got through everything before `resume_from_ms`, looking at events created up to
  // `newest_ms` (the database's now less the minimum age). The horizon moves there, but never
  // past newest_ms less the safety margin, whatever the pass read or where it stopped (its
  // candidate limit, a held event): an event created in the last margin may not be committed
  // yet. Deep in history, a pass moves it by whole windows.
  void Advance(int64_t resume_from_ms, int64_t newest_ms);

  int64_t horizon_ms() const { return horizon_ms_; }

 private:
  const int64_t margin_ms_;
  const absl::Duration full_sweep_every_;
  int64_t horizon_ms_ = kBeginningOfHistory;
  absl::Time last_full_sweep_ = absl::InfinitePast();
};

}  // namespace giftwall::domain

#endif  // GIFTWALL_SERVER_DOMAIN_SCAN_HORIZON_H_
