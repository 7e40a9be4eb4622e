// The admin service's request filters. ProjectionAdminService checks them inline, between its
// access check and the gRPC reactor (server/transport/admin_service.cc), so this target runs the
// pure functions those checks consist of, in the same order, on the same kinds of input:
// NormalizeAppCode on app_code; TrimSpace on event_id, event_ids and error_contains; the
// kMaxLastErrorBytes bound on error_contains; DecodeDeadEventPageToken on page_token; and the
// text helpers that shape what the filters are compared with (ToValidUtf8, TruncateUtf8).
// Input (FuzzedDataProvider): from the end, a truncation length; from the front, app_code,
// error_contains and event_id (each ended by a backslash and one more byte), then page_token.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "glog/logging.h"
#include "server/domain/app_code.h"
#include "server/domain/envelope.h"
#include "server/domain/page_token.h"
#include "server/domain/projection.h"
#include "server/domain/text.h"

namespace giftwall::domain {
namespace {

// A normalized app_code matches [a-z0-9_-]{1,32} and normalizes to itself, also when a client
// sends it upper-cased between spaces.
void CheckAppCode(absl::string_view raw) {
  const absl::StatusOr<std::string> code = NormalizeAppCode(raw);
  if (!code.ok()) {
    CHECK(code.status().code() == absl::StatusCode::kInvalidArgument) << code.status();
    CHECK(absl::StrContains(code.status().message(), "app_code")) << code.status();
    return;
  }
  CHECK(!code->empty());
  CHECK_LE(code->size(), kMaxAppCodeBytes);
  for (char c : *code) {
    CHECK(absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '_' || c == '-') << *code;
  }
  const absl::StatusOr<std::string> again = NormalizeAppCode(*code);
  CHECK(again.ok() && *again == *code) << *code;
  const absl::StatusOr<std::string> shouted =
      NormalizeAppCode(absl::StrCat("\t ", absl::AsciiStrToUpper(*code), "\u3000\n"));
  CHECK(shouted.ok() && *shouted == *code) << *code;
}

// TrimSpace returns a piece of its input that it would not trim further; a blank filter is one
// that trims to nothing.
void CheckTrimSpace(absl::string_view s) {
  const absl::string_view trimmed = TrimSpace(s);
  CHECK(trimmed.data() >= s.data() && trimmed.data() + trimmed.size() <= s.data() + s.size());
  CHECK(TrimSpace(trimmed) == trimmed);
  if (!trimmed.empty()) {
    CHECK(!absl::ascii_isspace(static_cast<unsigned char>(trimmed.front())));
    CHECK(!absl::ascii_isspace(static_cast<unsigned char>(trimmed.back())));
  }
}

// ToValidUtf8 keeps valid text as it is and makes any text valid; TruncateUtf8 cuts to at most
// max_bytes, never into a sequence, and never more than a sequence (3 bytes) short.
void CheckUtf8Helpers(absl::string_view s, size_t max_bytes) {
  const std::string valid = ToValidUtf8(s);
  CHECK(IsValidUtf8(valid));
  if (IsValidUtf8(s)) CHECK(valid == s);

  const absl::string_view cut = TruncateUtf8(s, max_bytes);
  CHECK(cut.data() == s.data());
  CHECK_LE(cut.size(), max_bytes);
  if (s.size() <= max_bytes) {
    CHECK_EQ(cut.size(), s.size());
  } else {
    CHECK_GE(cut.size() + 3, max_bytes);
  }
  // Cutting never splits a sequence: the cut text reads as a prefix of the whole.
  CHECK(absl::StartsWith(valid, ToValidUtf8(cut)));
}

// ListDeadEvents' page_token: what decodes is for this app_code and filter; a token for a filter
// the service accepts always decodes again (it never outgrows the token length limit).
void CheckDeadEventPageToken(absl::string_view page_token, absl::string_view app_code,
                             absl::string_view error_contains, absl::string_view event_id) {
  if (!page_token.empty()) {  // an empty page_token asks for the first page
    const absl::StatusOr<DeadEventPageToken> token =
        DecodeDeadEventPageToken(page_token, app_code, error_contains);
    if (token.ok()) {
      CHECK(token->app_code == app_code);
      CHECK(token->error_contains == error_contains);
    } else {
      CHECK(token.status().code() == absl::StatusCode::kInvalidArgument) << token.status();
    }
  }

  if (event_id.size() > kMaxEventIdBytes) return;
  const std::string issued = EncodeDeadEventPageToken(
      {std::string(app_code), std::string(error_contains), std::string(event_id)});
  const absl::StatusOr<DeadEventPageToken> next =
      DecodeDeadEventPageToken(issued, app_code, error_contains);
  CHECK(next.ok()) << next.status() << " for a token of " << issued.size() << " chars";
  CHECK(next->event_id == event_id);
}

void FuzzOne(FuzzedDataProvider& provider) {
  const size_t max_bytes = provider.ConsumeIntegralInRange<size_t>(0, kMaxLastErrorBytes + 8);
  const std::string app_code = provider.ConsumeRandomLengthString(2 * kMaxAppCodeBytes);
  const std::string error_contains = provider.ConsumeRandomLengthString(kMaxLastErrorBytes + 8);
  const std::string event_id = provider.ConsumeRandomLengthString(2 * kMaxEventIdBytes);
  const std::string page_token = provider.ConsumeRemainingBytesAsString();

  CheckAppCode(app_code);
  CheckTrimSpace(app_code);
  CheckTrimSpace(event_id);
  CheckTrimSpace(error_contains);
  CheckUtf8Helpers(error_contains, max_bytes);
  CheckUtf8Helpers(event_id, max_bytes);

  // In the order ListDeadEvents checks them.
  const absl::StatusOr<std::string> normalized = NormalizeAppCode(app_code);
  if (!normalized.ok() || error_contains.size() > kMaxLastErrorBytes) return;
  CheckDeadEventPageToken(page_token, *normalized, error_contains, event_id);
}

}  // namespace
}  // namespace giftwall::domain

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider provider(data, size);
  giftwall::domain::FuzzOne(provider);
  return 0;
}
