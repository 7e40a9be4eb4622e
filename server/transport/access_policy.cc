#include "server/transport/access_policy.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <algorithm>
#include <climits>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "giftwall/config/v1/access_policy.pb.h"
#include "google/protobuf/util/json_util.h"
#include "server/common/status_macros.h"
#include "server/domain/app_code.h"

namespace giftwall::transport {
namespace {

constexpr std::pair<absl::string_view, Role> kRoles[] = {
    {"relay", Role::kRelay},     {"reader", Role::kReader},   {"admin", Role::kAdmin},
    {"catalog", Role::kCatalog}, {"privacy", Role::kPrivacy}, {"moderator", Role::kModerator}};

std::array<uint8_t, 32> Sha256(absl::string_view text) {
  std::array<uint8_t, 32> digest;
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest.data());
  return digest;
}

absl::Status Invalid(absl::string_view where, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", why));
}

// The caller's token digests: SHA-256s in hex, never that of the empty string.
absl::Status ReadTokenDigests(const config::v1::Caller& in, const std::string& where,
                              AccessPolicy::Caller& caller) {
  for (int i = 0; i < in.token_sha256_size(); ++i) {
    const std::string& hex = in.token_sha256(i);
    const std::string bytes = absl::HexStringToBytes(hex);
    if (hex.size() != 64 || absl::BytesToHexString(bytes) != absl::AsciiStrToLower(hex)) {
      return Invalid(absl::StrCat(where, ".token_sha256[", i, "]"),
                     "must be a SHA-256 in hex (64 hex digits), e.g. from "
                     "`printf %s \"$TOKEN\" | sha256sum`");
    }
    std::array<uint8_t, 32> digest;
    std::copy(bytes.begin(), bytes.end(), digest.begin());
    if (digest == Sha256("")) {
      return Invalid(absl::StrCat(where, ".token_sha256[", i, "]"),
                     absl::StrCat("is the SHA-256 of the empty string (what `printf %s \"$TOKEN\" "
                                  "| sha256sum` gives when TOKEN is unset): caller \"",
                                  caller.name, "\" would have no secret"));
    }
    caller.token_digests.push_back(digest);
  }
  return absl::OkStatus();
}

absl::StatusOr<AccessPolicy::Caller> ReadCaller(const config::v1::Caller& in,
                                                const std::string& where) {
  AccessPolicy::Caller caller;
  caller.name = in.name();
  if (caller.name.empty()) return Invalid(where, "name is required");
  for (int i = 0; i < in.certificate_names_size(); ++i) {
    if (in.certificate_names(i).empty()) {
      return Invalid(absl::StrCat(where, ".certificate_names[", i, "]"), "is empty");
    }
    caller.certificate_names.insert(in.certificate_names(i));
  }
  RETURN_IF_ERROR(ReadTokenDigests(in, where, caller));
  if (caller.certificate_names.empty() && caller.token_digests.empty()) {
    return Invalid(where, "names no certificate_names and no token_sha256: nobody is this caller");
  }
  for (int i = 0; i < in.roles_size(); ++i) {
    const auto* known = std::find_if(std::begin(kRoles), std::end(kRoles),
                                     [&](const auto& role) { return role.first == in.roles(i); });
    if (known == std::end(kRoles)) {
      return Invalid(absl::StrCat(where, ".roles[", i, "]"),
                     absl::StrCat("\"", in.roles(i), "\" is not a role (",
                                  absl::StrJoin(kRoles, ", ",
                                                [](std::string* out, const auto& role) {
                                                  absl::StrAppend(out, role.first);
                                                }),
                                  ")"));
    }
    caller.roles.insert(known->second);
  }
  if (caller.roles.empty()) return Invalid(where, "roles: at least one is required");
  for (int i = 0; i < in.app_codes_size(); ++i) {
    const std::string& code = in.app_codes(i);
    if (code == "*") {
      caller.every_app = true;
      continue;
    }
    absl::StatusOr<std::string> normalized = domain::NormalizeAppCode(code);
    if (!normalized.ok() || *normalized != code) {
      return Invalid(
          absl::StrCat(where, ".app_codes[", i, "]"),
          absl::StrCat("\"", code, "\" is not an app code as the API takes it",
                       normalized.ok() ? absl::StrCat(" (write \"", *normalized, "\")") : ""));
    }
    caller.app_codes.insert(code);
  }
  if (!caller.every_app && caller.app_codes.empty()) {
    return Invalid(where, "app_codes: at least one is required (\"*\": every app)");
  }
  caller.max_concurrent_calls =
      static_cast<int>(std::min<uint32_t>(in.max_concurrent_calls(), INT32_MAX));
  caller.max_calls_per_second =
      static_cast<int>(std::min<uint32_t>(in.max_calls_per_second(), INT32_MAX));
  return caller;
}

}  // namespace

absl::string_view RoleName(Role role) {
  for (const auto& [name, known] : kRoles) {
    if (known == role) return name;
  }
  return "?";
}

absl::StatusOr<AccessPolicy> AccessPolicy::Parse(absl::string_view json) {
  config::v1::AccessPolicy in;
  google::protobuf::util::JsonParseOptions options;  // unknown fields are errors
  if (auto s = google::protobuf::util::JsonStringToMessage(std::string(json), &in, options);
      !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("not an access policy: ", s.message().as_string()));
  }
  AccessPolicy policy;
  std::map<std::string, std::string> owners;  // name, certificate name or token: whose
  const auto claim = [&owners](const std::string& key, const std::string& what,
                               const std::string& caller) -> absl::Status {
    auto [it, inserted] = owners.emplace(key, caller);
    if (inserted) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat(what, " belongs to both \"", it->second, "\" and \"", caller, "\""));
  };
  for (int i = 0; i < in.callers_size(); ++i) {
    absl::StatusOr<Caller> caller = ReadCaller(in.callers(i), absl::StrCat("callers[", i, "]"));
    if (!caller.ok()) return caller.status();
    if (absl::Status s = claim(absl::StrCat("name:", caller->name),
                               absl::StrCat("the name ", caller->name), caller->name);
        !s.ok()) {
      return s;
    }
    for (const std::string& name : caller->certificate_names) {
      if (absl::Status s = claim(absl::StrCat("cert:", name),
                                 absl::StrCat("the certificate name ", name), caller->name);
          !s.ok()) {
        return s;
      }
    }
    for (const auto& digest : caller->token_digests) {
      const std::string hex = absl::BytesToHexString(
          absl::string_view(reinterpret_cast<const char*>(digest.data()), digest.size()));
      if (absl::Status s = claim(absl::StrCat("token:", hex), "a token", caller->name); !s.ok()) {
        return s;
      }
    }
    policy.callers_.push_back(*std::move(caller));
  }
  return policy;
}

const AccessPolicy::Caller* AccessPolicy::Identify(const CallerCredentials& credentials) const {
  for (const std::string& name : credentials.certificate_names) {
    for (const Caller& caller : callers_) {
      if (caller.certificate_names.count(name) > 0) return &caller;
    }
  }
  if (!credentials.bearer_token.has_value() || credentials.bearer_token->empty()) return nullptr;
  // Digests compared in constant time, every one of them: how long this takes says nothing of
  // how close a guess came.
  const std::array<uint8_t, 32> digest = Sha256(*credentials.bearer_token);
  const Caller* found = nullptr;
  for (const Caller& caller : callers_) {
    for (const auto& known : caller.token_digests) {
      if (CRYPTO_memcmp(known.data(), digest.data(), digest.size()) == 0) found = &caller;
    }
  }
  return found;
}

absl::Status AccessPolicy::Authorize(const CallerCredentials& credentials, Role role,
                                     absl::Span<const std::string> app_codes,
                                     const Caller** identified) const {
  const Caller* caller = Identify(credentials);
  *identified = caller;
  if (caller == nullptr) {
    return absl::UnauthenticatedError(
        credentials.certificate_names.empty() && !credentials.bearer_token.has_value()
            ? "no client certificate and no bearer token: who is calling?"
            : "no caller of the access policy presents this certificate or token");
  }
  if (caller->roles.count(role) == 0) {
    return absl::PermissionDeniedError(
        absl::StrCat("caller \"", caller->name, "\" has no role ", RoleName(role)));
  }
  return MayTouch(*caller, app_codes);
}

absl::Status AccessPolicy::MayTouch(const Caller& caller, absl::Span<const std::string> app_codes) {
  if (caller.every_app) return absl::OkStatus();
  for (const std::string& app_code : app_codes) {
    if (caller.app_codes.count(app_code) == 0) {
      return absl::PermissionDeniedError(
          absl::StrCat("caller \"", caller.name, "\" may not touch app_code ", app_code));
    }
  }
  return absl::OkStatus();
}

}  // namespace giftwall::transport
