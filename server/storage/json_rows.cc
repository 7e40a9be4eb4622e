#include "server/storage/json_rows.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "glog/logging.h"
#include "server/domain/text.h"

namespace giftwall::storage {

JsonRows& JsonRows::Row() {
  if (row_open_) json_.append("],");
  json_.push_back('[');
  row_open_ = true;
  first_value_ = true;
  ++rows_;
  return *this;
}

void JsonRows::Separate() {
  CHECK(row_open_) << "JsonRows: a value before Row()";
  if (!first_value_) json_.push_back(',');
  first_value_ = false;
}

JsonRows& JsonRows::Int(int64_t value) {
  Separate();
  absl::StrAppend(&json_, value);
  return *this;
}

JsonRows& JsonRows::Text(absl::string_view text) {
  Separate();
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

JsonRows& JsonRows::Bytes(absl::string_view bytes) {
  Separate();
  absl::StrAppend(&json_, "\"", absl::BytesToHexString(bytes), "\"");
  return *this;
}

const std::string& JsonRows::Finish() {
  if (row_open_) json_.push_back(']');
  row_open_ = false;
  json_.push_back(']');
  return json_;
}

}  // namespace giftwall::storage
