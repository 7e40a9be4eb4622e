#include "server/transport/caller_limits.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace giftwall::transport {

struct CallerLimits::Shared {
  struct State {
    int in_flight = 0;
    double tokens = 0;
    absl::Time refilled = absl::InfinitePast();
  };
  mutable absl::Mutex mu;
  std::map<std::string, State> callers ABSL_GUARDED_BY(mu);
};

class CallerLimits::Permit {
 public:
  Permit(std::shared_ptr<Shared> shared, std::string caller)
      : shared_(std::move(shared)), caller_(std::move(caller)) {}
  ~Permit() {
    absl::MutexLock lock(&shared_->mu);
    --shared_->callers[caller_].in_flight;
  }
  Permit(const Permit&) = delete;
  Permit& operator=(const Permit&) = delete;

 private:
  const std::shared_ptr<Shared> shared_;
  const std::string caller_;
};

CallerLimits::CallerLimits() : shared_(std::make_shared<Shared>()) {}

absl::Status CallerLimits::Admit(const std::string& caller, int max_concurrent, int per_second,
                                 absl::Time now, std::shared_ptr<const Permit>* permit) {
  {
    absl::MutexLock lock(&shared_->mu);
    Shared::State& state = shared_->callers[caller];
    if (max_concurrent > 0 && state.in_flight >= max_concurrent) {
      return absl::ResourceExhaustedError(
          absl::StrCat("caller \"", caller, "\" has ", state.in_flight,
                       " calls in flight, its limit (max_concurrent_calls): retry later"));
    }
    if (per_second > 0) {
      // Refilled at `per_second` a second, up to one second's worth.
      // A clock stepped back counts as no time at all, never as a debt.
      const double elapsed =
          state.refilled == absl::InfinitePast()
              ? 1.0
              : std::clamp(absl::ToDoubleSeconds(now - state.refilled), 0.0, 1.0);
      state.tokens = std::min<double>(per_second, state.tokens + elapsed * per_second);
      state.refilled = now;
      if (state.tokens < 1) {
        return absl::ResourceExhaustedError(
            absl::StrCat("caller \"", caller, "\" is past its ", per_second,
                         " calls a second (max_calls_per_second): retry later"));
      }
      state.tokens -= 1;
    }
    ++state.in_flight;
  }
  *permit = std::make_shared<const Permit>(shared_, caller);
  return absl::OkStatus();
}

int CallerLimits::InFlight(const std::string& caller) const {
  absl::MutexLock lock(&shared_->mu);
  auto it = shared_->callers.find(caller);
  return it == shared_->callers.end() ? 0 : it->second.in_flight;
}

}  // namespace giftwall::transport
