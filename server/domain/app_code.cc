#include "server/domain/app_code.h"

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/domain/text.h"

namespace giftwall::domain {

absl::StatusOr<std::string> NormalizeAppCode(absl::string_view raw) {
  std::string code = absl::AsciiStrToLower(std::string(TrimSpace(raw)));
  if (code.empty()) return absl::InvalidArgumentError("app_code is required");
  if (code.size() > kMaxAppCodeBytes) {
    return absl::InvalidArgumentError(
        absl::StrFormat("app_code is %d bytes, at most %d allowed", code.size(), kMaxAppCodeBytes));
  }
  for (char c : code) {
    if (!(absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '_' || c == '-')) {
      return absl::InvalidArgumentError(
          absl::StrCat("app_code \"", absl::CHexEscape(code), "\" must match [a-z0-9_-]{1,32}"));
    }
  }
  return code;
}

std::vector<std::string> OutboxAppCodes::Of(const std::string& app_code) const {
  auto found = by_app.find(app_code);
  return found == by_app.end() ? std::vector<std::string>{app_code} : found->second;
}

OutboxAppCodes GroupOutboxAppCodes(std::vector<std::string> raw_codes) {
  OutboxAppCodes codes;
  for (std::string& raw : raw_codes) {
    absl::StatusOr<std::string> app = NormalizeAppCode(raw);
    if (app.ok()) {
      codes.by_app[*std::move(app)].push_back(std::move(raw));
    } else {
      codes.invalid.push_back(std::move(raw));
    }
  }
  return codes;
}

}  // namespace giftwall::domain
