// Named columns: the columns of a statement's rows are listed once, in a table that pairs each
// position (an enumerator) with its name. The statement's text is written from the table and the
// code that writes or reads the rows names each column by its enumerator, so a column cannot be
// swapped silently: the table is checked at compile time to list the enumerators in order, and
// RowSet checks at run time that each value goes to the column it names.
#ifndef GIFTWALL_SERVER_STORAGE_COLUMNS_H_
#define GIFTWALL_SERVER_STORAGE_COLUMNS_H_

#include <cstddef>
#include <string>

#include "absl/types/span.h"

namespace giftwall::storage {

// A column of a query's result: `name` as the select list spells it (with its table's alias).
struct ResultColumn {
  int position;
  const char* name;
};

// A column of the rows a statement reads as the table jt (row_set.h): jt.`name`, of SQL type
// `type`: BIGINT, INT, TINYINT or VARCHAR(n) CHARACTER SET cs.
struct RowColumn {
  int position;
  const char* name;
  const char* type;
};

// The SQL types of identifiers in rows, hex-encoded (RowSet::Bytes; the statement UNHEXes
// them): an event id (128 bytes) and a gift id (at least 64 bytes, with room).
inline constexpr char kHexId[] = "VARCHAR(512) CHARACTER SET ascii";
inline constexpr char kHexGift[] = "VARCHAR(256) CHARACTER SET ascii";

// True if every column of `columns` sits at its own position: a static_assert on every table.
template <typename Column, size_t N>
constexpr bool InPositionOrder(const Column (&columns)[N]) {
  for (size_t i = 0; i < N; ++i) {
    if (columns[i].position != static_cast<int>(i)) return false;
  }
  return true;
}

// "a.x, a.y, ...": the select list of `columns`.
std::string SelectList(absl::Span<const ResultColumn> columns);

}  // namespace giftwall::storage

#endif  // GIFTWALL_SERVER_STORAGE_COLUMNS_H_
