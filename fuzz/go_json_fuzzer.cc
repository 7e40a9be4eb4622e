// DecodeGoJsonObject on any bytes and any field list: it never crashes, each value it returns has
// its field's type and every decoded string is valid UTF-8, JSON white space around the input
// changes nothing, and what decodes is also valid JSON as the value of an unknown key.
// Input: one byte giving the number of fields (mod 5), one byte per field choosing its name
// (from kNames) and kind (low bit), then the JSON.
#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "glog/logging.h"
#include "server/domain/go_json.h"
#include "server/domain/text.h"

namespace giftwall::domain {
namespace {

// The payload's names, and names that fold alike ("ID", "id") or have a non-ASCII fold partner
// ('s' has U+017F, 'k' has U+212A).
constexpr absl::string_view kNames[] = {
    "target_user_id", "gift_id", "gift_count", "sku", "ID", "id", "k", ""};
constexpr size_t kNameCount = sizeof(kNames) / sizeof(kNames[0]);

// Nests the input one level deeper; Go refuses to nest 10000 levels, so only an input shorter
// than that is sure to nest as deep again without being refused.
constexpr size_t kMaxWrappedBytes = 9000;

void CheckValues(absl::Span<const GoJsonField> fields, const std::vector<GoJsonValue>& values) {
  CHECK_EQ(values.size(), fields.size());
  for (size_t i = 0; i < fields.size(); ++i) {
    if (!values[i].has_value()) continue;
    if (fields[i].kind == GoJsonKind::kInt64) {
      CHECK(std::holds_alternative<int64_t>(*values[i])) << "field " << i;
    } else if (fields[i].kind == GoJsonKind::kBool) {
      CHECK(std::holds_alternative<bool>(*values[i])) << "field " << i;
    } else {
      CHECK(std::holds_alternative<std::string>(*values[i])) << "field " << i;
      CHECK(IsValidUtf8(std::get<std::string>(*values[i]))) << "field " << i;
    }
  }
}

void FuzzOne(absl::string_view input) {
  if (input.empty()) return;
  const size_t field_count = static_cast<unsigned char>(input[0]) % 5;
  input.remove_prefix(1);
  if (input.size() < field_count) return;
  std::vector<GoJsonField> fields;
  for (size_t i = 0; i < field_count; ++i) {
    const auto choice = static_cast<unsigned char>(input[i]);
    constexpr GoJsonKind kKinds[] = {GoJsonKind::kInt64, GoJsonKind::kString, GoJsonKind::kBool};
    fields.push_back({kNames[(choice / 3) % kNameCount], kKinds[choice % 3]});
  }
  const absl::string_view json = input.substr(field_count);

  std::vector<GoJsonValue> values;
  const absl::Status status = DecodeGoJsonObject(json, fields, &values);
  if (!status.ok()) {
    CHECK(status.code() == absl::StatusCode::kInvalidArgument) << status;
    return;
  }
  CheckValues(fields, values);

  std::vector<GoJsonValue> spaced;
  const absl::Status spaced_status =
      DecodeGoJsonObject(absl::StrCat(" \t\r\n", json, "\n "), fields, &spaced);
  CHECK(spaced_status.ok()) << spaced_status;
  CHECK(spaced == values);

  if (json.size() < kMaxWrappedBytes) {
    std::vector<GoJsonValue> wrapped;
    const absl::Status wrapped_status =
        DecodeGoJsonObject(absl::StrCat("{\"not a field\":", json, "}"), fields, &wrapped);
    CHECK(wrapped_status.ok()) << wrapped_status;
    for (const GoJsonValue& value : wrapped) CHECK(!value.has_value());
  }
}

}  // namespace
}  // namespace giftwall::domain

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  giftwall::domain::FuzzOne(absl::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
