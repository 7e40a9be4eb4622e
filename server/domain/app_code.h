// app_code: the tenant key that starts every key of every table.
#ifndef GIFTWALL_SERVER_DOMAIN_APP_CODE_H_
#define GIFTWALL_SERVER_DOMAIN_APP_CODE_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace giftwall::domain {

inline constexpr size_t kMaxAppCodeBytes = 32;

// Trims and lower-cases `raw`; the result must match [a-z0-9_-]{1,32}. There is no default
// app: a blank app_code is INVALID_ARGUMENT like any other bad one.
absl::StatusOr<std::string> NormalizeAppCode(absl::string_view raw);

// The codes the wallet's outbox holds gift events under, by the app each belongs to. The relay
// projects a row under the code it normalizes to, so a code the wallet did not normalize
// ("APP3X") holds events of that app (app3x) too: catch-up, status, verify and the outbox
// lookups read an app's rows under each of its codes.
struct OutboxAppCodes {
  std::map<std::string, std::vector<std::string>> by_app;  // normalized -> raw, in listed order
  std::vector<std::string> invalid;                        // codes that normalize to nothing

  // The codes `app_code` (normalized) has events under; just app_code when the outbox has none.
  std::vector<std::string> Of(const std::string& app_code) const;
};

// The one resolver of outbox codes: each raw code under the app it normalizes to.
OutboxAppCodes GroupOutboxAppCodes(std::vector<std::string> raw_codes);

}  // namespace giftwall::domain

#endif  // GIFTWALL_SERVER_DOMAIN_APP_CODE_H_
