// The build's version, for --version, the start-up log and giftwall_build_info.
#ifndef GIFTWALL_SERVER_VERSION_H_
#define GIFTWALL_SERVER_VERSION_H_

#include "absl/strings/string_view.h"

namespace giftwall {

// `git describe` of the checkout the build was configured in, or, where there is no .git (an
// image's build context), what the build passed as -DGIFTWALL_VERSION; "unknown" if neither said.
const char* Version();

// Makes --version print "PROGRAM VERSION" and exit 0, when absl parses the flags.
void SetVersionFlag(absl::string_view program);

}  // namespace giftwall

#endif  // GIFTWALL_SERVER_VERSION_H_
