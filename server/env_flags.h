// Flags that fall back to environment variables, for containers: --mysql_url reads
// GIFTWALL_MYSQL_URL when it is not on the command line.
#ifndef GIFTWALL_SERVER_ENV_FLAGS_H_
#define GIFTWALL_SERVER_ENV_FLAGS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace giftwall {

// Sets every registered flag whose variable PREFIX + NAME_IN_UPPER_CASE is set, then parses the
// command line (which wins). Returns the positional arguments, argv[0] first. Exits with one
// clear line if a value does not parse.
std::vector<char*> ParseFlagsWithEnvironment(int argc, char** argv, absl::string_view prefix);

// Warns on stderr of each PREFIX variable that names no flag of PROGRAM, but those under
// `others_prefix` (another program's, e.g. the client's GIFTWALL_CLI_ in a server pod). In a
// ConfigMap such a variable is most likely a typo, which would silently leave its flag at the
// default.
void WarnOfUnknownVariables(absl::string_view prefix, absl::string_view program,
                            absl::string_view others_prefix = "");

// The contents of the file a flag names ("" for no file); INVALID_ARGUMENT "--FLAG: cannot read
// PATH" if it cannot be read.
absl::StatusOr<std::string> ReadFlagFile(absl::string_view flag, const std::string& path);

}  // namespace giftwall

#endif  // GIFTWALL_SERVER_ENV_FLAGS_H_
