// Splits a SQL script into statements: the connector runs one statement per call.
#ifndef GIFTWALL_SERVER_STORAGE_SQL_SCRIPT_H_
#define GIFTWALL_SERVER_STORAGE_SQL_SCRIPT_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace giftwall::storage {

// Statements of `script`, split at semicolons that are not inside quotes ('...', "...", `...`)
// or comments (-- ..., # ..., /* ... */). Comments are kept inside a statement; statements that
// are empty or only comments are dropped; each statement is trimmed.
std::vector<std::string> SplitSqlStatements(absl::string_view script);

}  // namespace giftwall::storage

#endif  // GIFTWALL_SERVER_STORAGE_SQL_SCRIPT_H_
