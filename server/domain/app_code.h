// app_code: the tenant key that starts every key of every table.
#ifndef GIFTWALL_SERVER_DOMAIN_APP_CODE_H_
#define GIFTWALL_SERVER_DOMAIN_APP_CODE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace giftwall::domain {

inline constexpr size_t kMaxAppCodeBytes = 32;

// Trims and lower-cases `raw`; the result must match [a-z0-9_-]{1,32}. There is no default
// app: a blank app_code is INVALID_ARGUMENT like any other bad one.
absl::StatusOr<std::string> NormalizeAppCode(absl::string_view raw);

}  // namespace giftwall::domain

#endif  // GIFTWALL_SERVER_DOMAIN_APP_CODE_H_
