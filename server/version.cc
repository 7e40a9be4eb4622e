#include "server/version.h"

#include <string>

#include "absl/flags/usage_config.h"
#include "absl/strings/str_cat.h"

namespace giftwall {

const char* Version() { return GIFTWALL_VERSION; }

void SetVersionFlag(absl::string_view program) {
  absl::FlagsUsageConfig config;
  config.version_string = [name = std::string(program)] {
    return absl::StrCat(name, " ", Version(), "\n");
  };
  absl::SetFlagsUsageConfig(config);
}

}  // namespace giftwall
