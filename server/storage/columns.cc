#include "server/storage/columns.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace giftwall::storage {

std::string SelectList(absl::Span<const ResultColumn> columns) {
  return absl::StrJoin(columns, ", ", [](std::string* out, const ResultColumn& column) {
    out->append(column.name);
  });
}

std::string JsonTableSql(absl::Span<const JsonColumn> columns) {
  std::string sql = "JSON_TABLE(?, '$[*]' COLUMNS (";
  for (size_t i = 0; i < columns.size(); ++i) {
    absl::StrAppend(&sql, i == 0 ? "" : ", ", columns[i].name, " ", columns[i].type, " PATH '$[", i,
                    "]'");
  }
  sql.append(")) AS jt");
  return sql;
}

}  // namespace giftwall::storage
