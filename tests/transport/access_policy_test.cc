#include "server/transport/access_policy.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace giftwall::transport {
namespace {

using ::testing::HasSubstr;

std::string Policy(const std::string& callers) { return "{\"callers\": [" + callers + "]}"; }

AccessPolicy Parse(const std::string& json) {
  absl::StatusOr<AccessPolicy> policy = AccessPolicy::Parse(json);
  EXPECT_TRUE(policy.ok()) << policy.status();
  return policy.ok() ? *std::move(policy) : AccessPolicy();
}

CallerCredentials Certificate(const std::string& name) { return {{name}, std::nullopt}; }
CallerCredentials Token(const std::string& token) { return {{}, token}; }

const std::string kPolicy = Policy(
    R"({"name": "relay", "certificate_names": ["relay.wallet"], "roles": ["relay"],)"
    R"( "app_codes": ["*"]},)"
    R"({"name": "feed", "token_sha256": [)"
    R"("2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b"],)"  // "secret"
    R"( "roles": ["reader"], "app_codes": ["yoyo"]},)"
    R"({"name": "oncall", "certificate_names": ["oncall.ops"], "roles": ["admin", "reader"],)"
    R"( "app_codes": ["yoyo", "chat"]},)"
    R"({"name": "gift-config", "certificate_names": ["gift-config.ops"], "roles": ["catalog"],)"
    R"( "app_codes": ["*"]},)"
    R"({"name": "profile", "certificate_names": ["profile.svc"], "roles": ["privacy"],)"
    R"( "app_codes": ["yoyo"]},)"
    R"({"name": "moderation", "certificate_names": ["moderation.svc"],)"
    R"( "roles": ["reader", "moderator"], "app_codes": ["yoyo"]})");

TEST(AccessPolicy, ARoleOnAnAppItIsGrantedIsAllowedAndNamesTheCaller) {
  const AccessPolicy policy = Parse(kPolicy);
  const AccessPolicy::Caller* caller = nullptr;
  EXPECT_TRUE(policy.Authorize(Certificate("relay.wallet"), Role::kRelay, {"any"}, &caller).ok());
  EXPECT_EQ(caller->name, "relay");
  EXPECT_TRUE(policy.Authorize(Token("secret"), Role::kReader, {"yoyo"}, &caller).ok());
  EXPECT_EQ(caller->name, "feed");
  EXPECT_TRUE(
      policy.Authorize(Certificate("oncall.ops"), Role::kAdmin, {"yoyo", "chat"}, &caller).ok());
}

TEST(AccessPolicy, NoIdentityOrAnUnknownOneIsUnauthenticated) {
  const AccessPolicy policy = Parse(kPolicy);
  const AccessPolicy::Caller* caller = nullptr;
  for (const CallerCredentials& who :
       {CallerCredentials{}, Certificate("stranger"), Token("secreT"), Token("")}) {
    const absl::Status s = policy.Authorize(who, Role::kReader, {"yoyo"}, &caller);
    EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated) << s;
  }
}

TEST(AccessPolicy, AnotherRoleOrAnotherAppIsPermissionDenied) {
  const AccessPolicy policy = Parse(kPolicy);
  const AccessPolicy::Caller* caller = nullptr;
  absl::Status s = policy.Authorize(Token("secret"), Role::kRelay, {"yoyo"}, &caller);
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(s.message(), "caller \"feed\" has no role relay");
  s = policy.Authorize(Token("secret"), Role::kReader, {"chat"}, &caller);
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(s.message(), "caller \"feed\" may not touch app_code chat");
  // The catalogue's writer writes the catalogue and nothing else; nobody else writes it.
  EXPECT_TRUE(
      policy.Authorize(Certificate("gift-config.ops"), Role::kCatalog, {"yoyo"}, &caller).ok());
  s = policy.Authorize(Certificate("gift-config.ops"), Role::kReader, {"yoyo"}, &caller);
  EXPECT_EQ(s.message(), "caller \"gift-config\" has no role reader");
  s = policy.Authorize(Certificate("oncall.ops"), Role::kCatalog, {"yoyo"}, &caller);
  EXPECT_EQ(s.message(), "caller \"oncall\" has no role catalog");
  // The profile service sets privacy and reads nothing; a moderator is a reader with more sight,
  // and the role calls no method of its own.
  EXPECT_TRUE(policy.Authorize(Certificate("profile.svc"), Role::kPrivacy, {"yoyo"}, &caller).ok());
  s = policy.Authorize(Certificate("profile.svc"), Role::kReader, {"yoyo"}, &caller);
  EXPECT_EQ(s.message(), "caller \"profile\" has no role reader");
  s = policy.Authorize(Token("secret"), Role::kPrivacy, {"yoyo"}, &caller);
  EXPECT_EQ(s.message(), "caller \"feed\" has no role privacy");
  EXPECT_TRUE(
      policy.Authorize(Certificate("moderation.svc"), Role::kModerator, {"yoyo"}, &caller).ok());
  s = policy.Authorize(Token("secret"), Role::kModerator, {"yoyo"}, &caller);
  EXPECT_EQ(s.message(), "caller \"feed\" has no role moderator");
  // A batch is allowed only if every one of its apps is.
  s = policy.Authorize(Certificate("oncall.ops"), Role::kReader, {"yoyo", "other"}, &caller);
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
}

TEST(AccessPolicy, ACertificateIdentifiesBeforeAToken) {
  const AccessPolicy policy = Parse(kPolicy);
  const AccessPolicy::Caller* caller = nullptr;
  const CallerCredentials both{{"oncall.ops"}, std::string("secret")};
  EXPECT_TRUE(policy.Authorize(both, Role::kAdmin, {"chat"}, &caller).ok());
  EXPECT_EQ(caller->name, "oncall");
  // An unknown certificate falls back to the token.
  const CallerCredentials unknown_cert{{"stranger"}, std::string("secret")};
  EXPECT_TRUE(policy.Authorize(unknown_cert, Role::kReader, {"yoyo"}, &caller).ok());
  EXPECT_EQ(caller->name, "feed");
}

TEST(AccessPolicy, LimitsAreReadPerCaller) {
  const AccessPolicy policy =
      Parse(Policy(R"({"name": "relay", "certificate_names": ["r"], "roles": ["relay"],)"
                   R"( "app_codes": ["*"], "max_concurrent_calls": 64,)"
                   R"( "max_calls_per_second": 500}, )"
                   R"({"name": "feed", "certificate_names": ["f"], "roles": ["reader"],)"
                   R"( "app_codes": ["*"]})"));
  ASSERT_EQ(policy.callers().size(), 2u);
  EXPECT_EQ(policy.callers()[0].max_concurrent_calls, 64);
  EXPECT_EQ(policy.callers()[0].max_calls_per_second, 500);
  EXPECT_EQ(policy.callers()[1].max_concurrent_calls, 0);
}

TEST(AccessPolicy, AnEmptyPolicyLetsNobodyIn) {
  const AccessPolicy policy = Parse("{}");
  const AccessPolicy::Caller* caller = nullptr;
  EXPECT_EQ(policy.Authorize(Certificate("relay.wallet"), Role::kRelay, {"a"}, &caller).code(),
            absl::StatusCode::kUnauthenticated);
}

TEST(AccessPolicy, ABadPolicyIsRefusedWithWhereAndWhy) {
  const std::string relay = R"("certificate_names": ["r"], "roles": ["relay"])";
  struct Case {
    std::string json;
    std::string error;
  };
  for (const Case& c : std::vector<Case>{
           {"{not json", "not an access policy"},
           {Policy(R"({"name": "x", "rolez": []})"), "not an access policy"},
           {Policy(R"({"certificate_names": ["r"], "roles": ["relay"], "app_codes": ["*"]})"),
            "callers[0]: name is required"},
           {Policy(R"({"name": "x", "roles": ["relay"], "app_codes": ["*"]})"),
            "callers[0]: names no certificate_names and no token_sha256"},
           {Policy(R"({"name": "x", "token_sha256": ["abc"], "roles": ["relay"],)"
                   R"( "app_codes": ["*"]})"),
            "callers[0].token_sha256[0]: must be a SHA-256 in hex"},
           {Policy(R"({"name": "unset", "token_sha256": [)"
                   R"("E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855"],)"
                   R"( "roles": ["relay"], "app_codes": ["*"]})"),
            "callers[0].token_sha256[0]: is the SHA-256 of the empty string (what `printf %s "
            "\"$TOKEN\" | sha256sum` gives when TOKEN is unset): caller \"unset\" would have no "
            "secret"},
           {Policy(R"({"name": "x", "certificate_names": ["r"], "roles": ["readr"],)"
                   R"( "app_codes": ["*"]})"),
            "callers[0].roles[0]: \"readr\" is not a role (relay, reader, admin, catalog, privacy, "
            "moderator)"},
           {Policy(R"({"name": "x", )" + relay + "}"), "callers[0]: app_codes: at least one"},
           {Policy(R"({"name": "x", )" + relay + R"(, "app_codes": ["YoYo"]})"),
            "callers[0].app_codes[0]: \"YoYo\" is not an app code as the API takes it (write "
            "\"yoyo\")"},
           {Policy(R"({"name": "x", )" + relay + R"(, "app_codes": ["*"]},)" + R"({"name": "y", )" +
                   relay + R"(, "app_codes": ["*"]})"),
            "the certificate name r belongs to both \"x\" and \"y\""},
           {Policy(R"({"name": "x", )" + relay + R"(, "app_codes": ["*"]},)" +
                   R"({"name": "x", "certificate_names": ["s"], "roles": ["relay"],)" +
                   R"( "app_codes": ["*"]})"),
            "the name x belongs to both"},
       }) {
    absl::StatusOr<AccessPolicy> policy = AccessPolicy::Parse(c.json);
    ASSERT_FALSE(policy.ok()) << c.json;
    EXPECT_EQ(policy.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(policy.status().message(), HasSubstr(c.error)) << c.json;
  }
}

}  // namespace
}  // namespace giftwall::transport
