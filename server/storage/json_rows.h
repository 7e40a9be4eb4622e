// The rows of a set-based statement, as one JSON parameter that the statement reads with
// JSON_TABLE: any number of rows binds to one `?`, so the statement's text, and the statement the
// session prepared for it, is the same for a group of one event or of five hundred.
#ifndef GIFTWALL_SERVER_STORAGE_JSON_ROWS_H_
#define GIFTWALL_SERVER_STORAGE_JSON_ROWS_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "server/storage/columns.h"

namespace giftwall::storage {

// A JSON array of arrays, [[v, v, ...], [v, v, ...], ...], of the columns of a JsonColumn table
// (the statement's JsonTableSql). Each value names its column, and must come in the table's order:
// a value out of place, or a row left short, is a bug, and CHECK-fails.
class JsonRows {
 public:
  // `columns` must outlive the builder.
  explicit JsonRows(absl::Span<const JsonColumn> columns) : columns_(columns), json_("[") {}

  // Starts the next row.
  JsonRows& Row();
  JsonRows& Int(int column, int64_t value);
  // Text for a character column; bytes that are not UTF-8 become U+FFFD.
  JsonRows& Text(int column, absl::string_view text);
  // Bytes for a binary column, hex-encoded (the statement reads them with UNHEX): identifiers are
  // compared byte for byte and need not be text.
  JsonRows& Bytes(int column, absl::string_view bytes);

  size_t rows() const { return rows_; }
  bool empty() const { return rows_ == 0; }
  // The array, closed. The builder must not be used afterwards.
  const std::string& Finish();

 private:
  // Opens the value of `column`, which must be the row's next one.
  void Separate(int column);
  // Closes the open row, which must be complete.
  void CloseRow();

  absl::Span<const JsonColumn> columns_;
  std::string json_;
  size_t rows_ = 0;
  bool row_open_ = false;
  size_t next_column_ = 0;
};

}  // namespace giftwall::storage

#endif  // GIFTWALL_SERVER_STORAGE_JSON_ROWS_H_
