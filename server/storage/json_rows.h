// The rows of a set-based statement, as one JSON parameter that the statement reads with
// JSON_TABLE: any number of rows binds to one `?`, so the statement's text, and the statement the
// session prepared for it, is the same for a group of one event or of five hundred.
#ifndef GIFTWALL_SERVER_STORAGE_JSON_ROWS_H_
#define GIFTWALL_SERVER_STORAGE_JSON_ROWS_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace giftwall::storage {

// A JSON array of arrays: [[v, v, ...], [v, v, ...], ...].
class JsonRows {
 public:
  JsonRows() : json_("[") {}

  // Starts the next row.
  JsonRows& Row();
  JsonRows& Int(int64_t value);
  // Text for a character column; bytes that are not UTF-8 become U+FFFD.
  JsonRows& Text(absl::string_view text);
  // Bytes for a binary column, hex-encoded (the statement reads them with UNHEX): identifiers are
  // compared byte for byte and need not be text.
  JsonRows& Bytes(absl::string_view bytes);

  size_t rows() const { return rows_; }
  bool empty() const { return rows_ == 0; }
  // The array, closed. The builder must not be used afterwards.
  const std::string& Finish();

 private:
  void Separate();

  std::string json_;
  size_t rows_ = 0;
  bool row_open_ = false;
  bool first_value_ = true;
};

}  // namespace giftwall::storage

#endif  // GIFTWALL_SERVER_STORAGE_JSON_ROWS_H_
