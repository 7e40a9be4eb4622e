// Leases: who may act alone on something (scan an app, rebuild an app, migrate the schema) on
// any number of replicas and database nodes (DESIGN §2.20). A lease is a row of the service's
// own, with its holder, a fencing token and an expiry in database time; what to do with it is
// decided here, on the row as read under its lock.
#ifndef GIFTWALL_SERVER_DOMAIN_LEASE_H_
#define GIFTWALL_SERVER_DOMAIN_LEASE_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace giftwall::domain {

// A lease row as stored. A lease never taken is a row with no holder, token 0 and expiry 0; a
// released lease keeps its row (expired), so that tokens only grow.
struct LeaseRow {
  std::string holder;
  int64_t token = 0;
  int64_t expires_at_ms = 0;
};

struct LeaseDecision {
  enum class Kind {
    kTake,     // the lease is free (never taken, released or expired): it becomes the caller's
    kRenew,    // the caller holds it already: it is extended, with the same token
    kRefused,  // another holder's lease runs: nothing changes
  };
  Kind kind = Kind::kRefused;
  LeaseRow row;  // what the row holds afterwards (for kRefused, as it is)
};

// What `holder` asking for the lease `current` at `now_ms` for `duration_ms` gets. A holder's own
// lease is renewed even past its expiry while no one took it meanwhile: nothing was done under
// another token. Taking a lease gives a token above every earlier one.
LeaseDecision DecideLease(const LeaseRow& current, absl::string_view holder, int64_t now_ms,
                          int64_t duration_ms);

// For a refusal: "held by H for another N ms".
std::string DescribeHolder(const LeaseRow& row, int64_t now_ms);

}  // namespace giftwall::domain

#endif  // GIFTWALL_SERVER_DOMAIN_LEASE_H_
