// The rows of a set-based statement: a group of events, the users of a batch of walls, a
// catalogue. The statement reads them as a table `jt`, written one of two ways:
//  - JSON_TABLE over one JSON parameter (MariaDB 10.6+, MySQL 8.0.4+): any number of rows binds
//    to one `?`, so one text serves a group of one event or of five hundred;
//  - a UNION ALL of one SELECT of placeholders per row (the first cast to the columns' types),
//    for servers and proxies without JSON_TABLE (Vitess, TiDB, MySQL 5.7). The rows are padded
//    with NULL rows up to one of a few fixed sizes, so that each statement has a handful of texts
//    and the prepared statements stay few; a set that would need more than twice its rows, or
//    more placeholders than a statement takes, runs in parts (RowsChunks).
#ifndef GIFTWALL_SERVER_STORAGE_ROW_SET_H_
#define GIFTWALL_SERVER_STORAGE_ROW_SET_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "server/storage/columns.h"

namespace giftwall::storage {

// How a session's statements read their rows.
enum class RowsPath {
  kAuto,       // JSON_TABLE where the server has it, else VALUES
  kJsonTable,  // one JSON parameter
  kValues,     // one placeholder per value
};
absl::string_view RowsPathName(RowsPath path);
// "auto", "json_table" or "values"; false for anything else.
bool ParseRowsPath(absl::string_view text, RowsPath* path);

// The fixed sizes the VALUES path pads a set of rows to. A set past the last one is padded to a
// multiple of kRowsSizeStep; a statement takes at most kMaxPlaceholders placeholders in all.
inline constexpr std::array<size_t, 7> kRowsSizes = {1, 4, 16, 64, 256, 1024, 4096};
inline constexpr size_t kRowsSizeStep = 1024;
inline constexpr size_t kMaxPlaceholders = 65535;
// The size the VALUES path pads `rows` rows to.
size_t PaddedRows(size_t rows);

// A part of a set of rows that one statement reads on the VALUES path: rows [begin, begin + rows)
// padded to `padded`.
struct RowsChunk {
  size_t begin = 0;
  size_t rows = 0;
  size_t padded = 0;
};
// The parts a set of `rows` rows runs in, in order: one part padded to PaddedRows(rows) if that
// is at most twice the rows and at most `max_part` (one of kRowsSizes), or if `whole`; else a
// part of the largest size within the rows and `max_part` (unpadded), then the rest the same
// way. An empty set is one empty part.
std::vector<RowsChunk> RowsChunks(size_t rows, bool whole, size_t max_part);

// Rows of the columns of a RowColumn table. Each value names its column, and must come in the
// table's order: a value out of place, or a row left short, is a bug, and CHECK-fails.
class RowSet {
 public:
  using Value = std::variant<int64_t, std::string>;

  // `columns` must outlive the set.
  explicit RowSet(absl::Span<const RowColumn> columns) : columns_(columns) {}

  // Starts the next row.
  RowSet& Row();
  RowSet& Int(int column, int64_t value);
  // Text for a character column; bytes that are not UTF-8 become U+FFFD.
  RowSet& Text(int column, absl::string_view text);
  // Bytes for a binary column, hex-encoded (the statement reads them with UNHEX): identifiers are
  // compared byte for byte and need not be text.
  RowSet& Bytes(int column, absl::string_view bytes);

  size_t rows() const { return rows_; }
  bool empty() const { return rows_ == 0; }
  size_t columns() const { return columns_.size(); }
  // Every value of every row, row after row. The last row must be complete.
  absl::Span<const Value> values() const;
  // The rows as JSON_TABLE reads them: [[v, v, ...], [v, v, ...], ...].
  std::string Json() const;

 private:
  // Checks that `column` is the open row's next one.
  void Next(int column);

  absl::Span<const RowColumn> columns_;
  std::vector<Value> values_;
  size_t rows_ = 0;
};

// A statement that reads one RowSet as the table `jt`: its text names the table kRowsTable,
// once or more (each time bound to the same set, given as a parameter where the table stands).
// On the VALUES path a large set may run as several statements, each with a part of the rows, in
// their order, on the caller's session (and inside its transaction): right where each row acts
// alone (a lookup, an upsert, an update of its own row) and the caller adds the affected counts
// up. A statement that reads the set as a whole (NOT IN) is kWhole: one statement, padded.
class RowsSql {
 public:
  enum Reading { kRowByRow, kWhole };
  RowsSql(absl::Span<const RowColumn> columns, std::string text, Reading reading = kRowByRow);
  RowsSql(const RowsSql&) = delete;
  RowsSql& operator=(const RowsSql&) = delete;

  // The text that reads `rows` rows by `path` (kJsonTable or kValues).
  const std::string& Text(RowsPath path, size_t rows) const;
  absl::Span<const RowColumn> columns() const { return columns_; }
  bool whole() const { return reading_ == kWhole; }
  // The text as given, naming kRowsTable.
  const std::string& text() const { return text_; }

 private:
  std::vector<RowColumn> columns_;
  Reading reading_;
  std::string text_;
  std::string json_table_;
  // The VALUES texts, written on first use: one per padded size.
  mutable std::mutex mu_;
  mutable std::vector<std::pair<size_t, std::unique_ptr<const std::string>>> values_;
};

// Where a RowsSql text puts its table of rows.
inline constexpr char kRowsTable[] = "{rows}";

// "JSON_TABLE(?, '$[*]' COLUMNS (j_x BIGINT PATH '$[0]', ...)) AS jt".
std::string JsonTableSql(absl::Span<const RowColumn> columns);
// "(SELECT * FROM (SELECT CAST(? AS SIGNED) AS j_x, ... UNION ALL SELECT ?, ... ) AS v
// WHERE v.j_x IS NOT NULL) AS jt", `rows` SELECTs: padding rows are all NULL.
std::string ValuesTableSql(absl::Span<const RowColumn> columns, size_t rows);

}  // namespace giftwall::storage

#endif  // GIFTWALL_SERVER_STORAGE_ROW_SET_H_
