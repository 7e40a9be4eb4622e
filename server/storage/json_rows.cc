#include "server/storage/json_rows.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "glog/logging.h"
#include "server/domain/text.h"

namespace giftwall::storage {

JsonRows& JsonRows::Row() {
  if (row_open_) {
    CloseRow();
    json_.push_back(',');
  }
  json_.push_back('[');
  row_open_ = true;
  next_column_ = 0;
  ++rows_;
  return *this;
}

void JsonRows::CloseRow() {
  CHECK_EQ(next_column_, columns_.size())
      << "JsonRows: row " << rows_ << " ends before column "
      << (next_column_ < columns_.size() ? columns_[next_column_].name : "?");
  json_.push_back(']');
  row_open_ = false;
}

void JsonRows::Separate(int column) {
  CHECK(row_open_) << "JsonRows: a value before Row()";
  CHECK(next_column_ < columns_.size() && column == columns_[next_column_].position)
      << "JsonRows: column " << column << " where "
      << (next_column_ < columns_.size() ? columns_[next_column_].name : "the row's end")
      << " belongs";
  if (next_column_ > 0) json_.push_back(',');
  ++next_column_;
}

JsonRows& JsonRows::Int(int column, int64_t value) {
  Separate(column);
  absl::StrAppend(&json_, value);
  return *this;
}

JsonRows& JsonRows::Text(int column, absl::string_view text) {
  Separate(column);
  json_.push_back('"');
  for (char c : domain::ToValidUtf8(text)) {
    switch (c) {
      case '"':
        json_.append("\\\"");
        break;
      case '\\':
        json_.append("\\\\");
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          absl::StrAppendFormat(&json_, "\\u%04x", static_cast<int>(c));
        } else {
          json_.push_back(c);
        }
    }
  }
  json_.push_back('"');
  return *this;
}

JsonRows& JsonRows::Bytes(int column, absl::string_view bytes) {
  Separate(column);
  absl::StrAppend(&json_, "\"", absl::BytesToHexString(bytes), "\"");
  return *this;
}

const std::string& JsonRows::Finish() {
  if (row_open_) CloseRow();
  json_.push_back(']');
  return json_;
}

}  // namespace giftwall::storage
