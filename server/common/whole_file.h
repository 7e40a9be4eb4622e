// A whole file's contents, for the few files the server reads at once (its flags' files, the
// access policy, /proc).
#ifndef GIFTWALL_SERVER_COMMON_WHOLE_FILE_H_
#define GIFTWALL_SERVER_COMMON_WHOLE_FILE_H_

#include <fstream>
#include <optional>
#include <sstream>
#include <string>

namespace giftwall {

// The contents of the file at `path`; nullopt if it cannot be opened.
inline std::optional<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

}  // namespace giftwall

#endif  // GIFTWALL_SERVER_COMMON_WHOLE_FILE_H_
