#include "server/storage/contention.h"

#include "absl/random/random.h"

namespace giftwall::storage {

double Jitter() {
  thread_local absl::BitGen gen;
  return absl::Uniform(gen, 0.0, 1.0);
}

}  // namespace giftwall::storage
