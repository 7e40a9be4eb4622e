#include "server/storage/columns.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace giftwall::storage {

std::string SelectList(absl::Span<const ResultColumn> columns) {
  return absl::StrJoin(columns, ", ", [](std::string* out, const ResultColumn& column) {
    out->append(column.name);
  });
}

}  // namespace giftwall::storage
