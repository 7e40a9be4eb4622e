#include "server/env_flags.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace giftwall {

std::vector<char*> ParseFlagsWithEnvironment(int argc, char** argv, absl::string_view prefix) {
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    const std::string variable = absl::StrCat(prefix, absl::AsciiStrToUpper(name));
    const char* value = std::getenv(variable.c_str());
    if (value == nullptr) continue;
    std::string error;
    if (!flag->ParseFrom(value, &error)) {
      std::fprintf(stderr, "%s: invalid value for --%s: %s\n", variable.c_str(),
                   std::string(name).c_str(), error.c_str());
      std::exit(2);
    }
  }
  return absl::ParseCommandLine(argc, argv);
}

}  // namespace giftwall
