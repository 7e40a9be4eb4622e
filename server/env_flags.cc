#include "server/env_flags.h"

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/common/whole_file.h"

extern char** environ;

namespace giftwall {

void WarnOfUnknownVariables(absl::string_view prefix, absl::string_view program,
                            absl::string_view others_prefix) {
  const auto flags = absl::GetAllFlags();
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const absl::string_view assignment = *entry;
    const absl::string_view variable = assignment.substr(0, assignment.find('='));
    if (!absl::StartsWith(variable, prefix)) continue;
    if (!others_prefix.empty() && absl::StartsWith(variable, others_prefix)) continue;
    const absl::string_view suffix = variable.substr(prefix.size());
    const std::string name = absl::AsciiStrToLower(suffix);
    if (flags.contains(name) && suffix == absl::AsciiStrToUpper(name)) continue;
    std::fprintf(stderr, "warning: %.*s names no flag of %.*s: ignored\n",
                 static_cast<int>(variable.size()), variable.data(),
                 static_cast<int>(program.size()), program.data());
  }
}

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

absl::StatusOr<std::string> ReadFlagFile(absl::string_view flag, const std::string& path) {
  if (path.empty()) return std::string();
  std::optional<std::string> contents = ReadWholeFile(path);
  if (!contents.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, ": cannot read ", path));
  }
  return *std::move(contents);
}

}  // namespace giftwall
