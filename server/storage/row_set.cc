#include "server/storage/row_set.h"

#include <algorithm>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "glog/logging.h"
#include "server/domain/text.h"

namespace giftwall::storage {
namespace {

// The CAST target that gives a placeholder the SQL type of the column: integers as SIGNED,
// VARCHAR(n) CHARACTER SET cs as CHAR CHARACTER SET cs. Without its length: the rows are
// materialized, each string as wide as its value rather than as its column may be.
std::string CastTarget(absl::string_view type) {
  if (absl::ConsumePrefix(&type, "VARCHAR")) {
    const size_t charset = type.find(" CHARACTER SET ");
    CHECK(charset != absl::string_view::npos) << "VARCHAR without a charset: " << type;
    return absl::StrCat("CHAR", type.substr(charset));
  }
  CHECK(type == "BIGINT" || type == "INT" || type == "TINYINT") << "no CAST for type " << type;
  return "SIGNED";
}

void AppendJsonText(absl::string_view text, std::string& json) {
  json.push_back('"');
  for (char c : text) {
    switch (c) {
      case '"':
        json.append("\\\"");
        break;
      case '\\':
        json.append("\\\\");
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          absl::StrAppendFormat(&json, "\\u%04x", static_cast<int>(c));
        } else {
          json.push_back(c);
        }
    }
  }
  json.push_back('"');
}

}  // namespace

absl::string_view RowsPathName(RowsPath path) {
  switch (path) {
    case RowsPath::kAuto:
      return "auto";
    case RowsPath::kJsonTable:
      return "json_table";
    case RowsPath::kValues:
      return "values";
  }
  return "?";
}

bool ParseRowsPath(absl::string_view text, RowsPath* path) {
  for (RowsPath p : {RowsPath::kAuto, RowsPath::kJsonTable, RowsPath::kValues}) {
    if (text == RowsPathName(p)) {
      *path = p;
      return true;
    }
  }
  return false;
}

size_t PaddedRows(size_t rows) {
  for (size_t size : kRowsSizes) {
    if (rows <= size) return size;
  }
  return (rows + kRowsSizeStep - 1) / kRowsSizeStep * kRowsSizeStep;
}

std::vector<RowsChunk> RowsChunks(size_t rows, bool whole, size_t max_part) {
  CHECK_EQ(PaddedRows(max_part), max_part) << "a part's size must be one of the padded sizes";
  std::vector<RowsChunk> chunks;
  size_t begin = 0;
  do {
    const size_t left = rows - begin;
    const size_t padded = PaddedRows(left);
    if (whole || (padded <= 2 * std::max<size_t>(left, 1) && padded <= max_part)) {
      chunks.push_back({begin, left, padded});
      break;
    }
    // The largest size within what is left (PaddedRows(left) is the next one up, unless `left`
    // is a size itself) and within max_part.
    size_t size = max_part;
    if (padded > left) {
      size = std::min(size, padded <= kRowsSizes.back() ? padded / 4 : padded - kRowsSizeStep);
    }
    chunks.push_back({begin, size, size});
    begin += size;
  } while (begin < rows);
  return chunks;
}

RowSet& RowSet::Row() {
  CHECK_EQ(values_.size(), rows_ * columns_.size())
      << "RowSet: row " << rows_ << " ends before column "
      << columns_[values_.size() % columns_.size()].name;
  ++rows_;
  return *this;
}

void RowSet::Next(int column) {
  CHECK_GT(rows_, 0u) << "RowSet: a value before Row()";
  const size_t next = values_.size() - (rows_ - 1) * columns_.size();
  CHECK(next < columns_.size() && column == columns_[next].position)
      << "RowSet: column " << column << " where "
      << (next < columns_.size() ? columns_[next].name : "the row's end") << " belongs";
}

RowSet& RowSet::Int(int column, int64_t value) {
  Next(column);
  values_.emplace_back(value);
  return *this;
}

RowSet& RowSet::Text(int column, absl::string_view text) {
  Next(column);
  values_.emplace_back(domain::ToValidUtf8(text));
  return *this;
}

RowSet& RowSet::Bytes(int column, absl::string_view bytes) {
  Next(column);
  values_.emplace_back(absl::BytesToHexString(bytes));
  return *this;
}

absl::Span<const RowSet::Value> RowSet::values() const {
  CHECK_EQ(values_.size(), rows_ * columns_.size())
      << "RowSet: row " << rows_ << " ends before column "
      << columns_[values_.size() % columns_.size()].name;
  return values_;
}

std::string RowSet::Json() const {
  absl::Span<const Value> values = this->values();
  std::string json = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    const size_t column = i % columns_.size();
    if (column == 0) absl::StrAppend(&json, i == 0 ? "[" : "],[");
    if (column > 0) json.push_back(',');
    if (const int64_t* n = std::get_if<int64_t>(&values[i])) {
      absl::StrAppend(&json, *n);
    } else {
      AppendJsonText(std::get<std::string>(values[i]), json);
    }
  }
  json.append(values.empty() ? "]" : "]]");
  return json;
}

std::string JsonTableSql(absl::Span<const RowColumn> columns) {
  std::string sql = "JSON_TABLE(?, '$[*]' COLUMNS (";
  for (size_t i = 0; i < columns.size(); ++i) {
    absl::StrAppend(&sql, i == 0 ? "" : ", ", columns[i].name, " ", columns[i].type, " PATH '$[", i,
                    "]'");
  }
  sql.append(")) AS jt");
  return sql;
}

std::string ValuesTableSql(absl::Span<const RowColumn> columns, size_t rows) {
  CHECK(!columns.empty() && rows > 0);
  // The first SELECT names the columns and casts each to its column's type: the union's types
  // follow (integers stay integers, strings take the column's character set). The others are
  // bare placeholders: a CAST in every row costs the server more than the rows themselves.
  std::string sql = "(SELECT * FROM (SELECT ";
  for (size_t i = 0; i < columns.size(); ++i) {
    absl::StrAppend(&sql, i == 0 ? "" : ", ", "CAST(? AS ", CastTarget(columns[i].type), ") AS ",
                    columns[i].name);
  }
  std::string row = "\nUNION ALL SELECT ?";
  for (size_t i = 1; i < columns.size(); ++i) row.append(", ?");
  sql.reserve(sql.size() + (rows - 1) * row.size() + 64);
  for (size_t r = 1; r < rows; ++r) sql.append(row);
  absl::StrAppend(&sql, ") AS v WHERE v.", columns[0].name, " IS NOT NULL) AS jt");
  return sql;
}

RowsSql::RowsSql(absl::Span<const RowColumn> columns, std::string text, Reading reading)
    : columns_(columns.begin(), columns.end()),
      reading_(reading),
      text_(std::move(text)),
      json_table_(absl::StrReplaceAll(text_, {{kRowsTable, JsonTableSql(columns_)}})) {
  CHECK(absl::StrContains(text_, kRowsTable))
      << "a RowsSql without " << kRowsTable << ": " << text_;
}

const std::string& RowsSql::Text(RowsPath path, size_t rows) const {
  CHECK(path != RowsPath::kAuto) << "RowsSql: the session's path is decided";
  if (path == RowsPath::kJsonTable) return json_table_;
  const size_t padded = PaddedRows(rows);
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [size, text] : values_) {
    if (size == padded) return *text;
  }
  values_.emplace_back(padded, std::make_unique<const std::string>(absl::StrReplaceAll(
                                   text_, {{kRowsTable, ValuesTableSql(columns_, padded)}})));
  return *values_.back().second;
}

}  // namespace giftwall::storage
