#include "server/storage/sql_script.h"

#include "absl/strings/ascii.h"

namespace giftwall::storage {
namespace {

// True if `stmt` has something besides white space and comments.
bool HasCode(absl::string_view stmt) {
  size_t i = 0;
  while (i < stmt.size()) {
    if (absl::ascii_isspace(static_cast<unsigned char>(stmt[i]))) {
      ++i;
    } else if (stmt.substr(i, 2) == "--" || stmt[i] == '#') {
      const size_t eol = stmt.find('\n', i);
      i = eol == absl::string_view::npos ? stmt.size() : eol + 1;
    } else if (stmt.substr(i, 2) == "/*") {
      const size_t end = stmt.find("*/", i + 2);
      i = end == absl::string_view::npos ? stmt.size() : end + 2;
    } else {
      return true;
    }
  }
  return false;
}

}  // namespace

std::vector<std::string> SplitSqlStatements(absl::string_view script) {
  std::vector<std::string> statements;
  size_t start = 0;
  auto flush = [&](size_t end) {
    absl::string_view stmt = absl::StripAsciiWhitespace(script.substr(start, end - start));
    if (HasCode(stmt)) statements.emplace_back(stmt);
    start = end + 1;
  };
  size_t i = 0;
  while (i < script.size()) {
    const char c = script[i];
    if (c == '\'' || c == '"' || c == '`') {
      // Quoted: a backslash escapes (not in identifiers), a doubled quote is a literal quote.
      ++i;
      while (i < script.size()) {
        if (script[i] == '\\' && c != '`') {
          i += 2;
        } else if (script[i] == c) {
          if (i + 1 < script.size() && script[i + 1] == c) {
            i += 2;
          } else {
            break;
          }
        } else {
          ++i;
        }
      }
      ++i;
    } else if (script.substr(i, 2) == "--" || c == '#') {
      const size_t eol = script.find('\n', i);
      i = eol == absl::string_view::npos ? script.size() : eol + 1;
    } else if (script.substr(i, 2) == "/*") {
      const size_t end = script.find("*/", i + 2);
      i = end == absl::string_view::npos ? script.size() : end + 2;
    } else if (c == ';') {
      flush(i);
      ++i;
    } else {
      ++i;
    }
  }
  if (start < script.size()) flush(script.size());
  return statements;
}

}  // namespace giftwall::storage
