#include "server/common/status_macros.h"

#include "gtest/gtest.h"

namespace giftwall {
namespace {

absl::Status Fails(absl::StatusCode code) {
  absl::Status status(code, "mysql error 1213: deadlock");
  status.SetPayload("giftwall.storage/mysql-errno", absl::Cord("1213"));
  return status;
}

absl::StatusOr<int> Value(bool ok) {
  if (!ok) return Fails(absl::StatusCode::kAborted);
  return 7;
}

// Fails at the step named by `fail_at` (0: none).
absl::Status Steps(int fail_at, int* out) {
  RETURN_IF_ERROR(fail_at == 1 ? Fails(absl::StatusCode::kAborted) : absl::OkStatus());
  ASSIGN_OR_RETURN(const int v, Value(fail_at != 2));
  ASSIGN_OR_RETURN(*out, Value(fail_at != 3));
  *out += v;
  return absl::OkStatus();
}

TEST(StatusMacros, PassTheStatusUpUnchangedOrGoOn) {
  int out = 0;
  EXPECT_TRUE(Steps(0, &out).ok());
  EXPECT_EQ(out, 14);
  for (int fail_at : {1, 2, 3}) {
    out = 0;
    const absl::Status failed = Steps(fail_at, &out);
    EXPECT_EQ(failed.code(), absl::StatusCode::kAborted) << fail_at;
    EXPECT_EQ(failed.message(), "mysql error 1213: deadlock") << fail_at;
    EXPECT_TRUE(failed.GetPayload("giftwall.storage/mysql-errno").has_value()) << fail_at;
    EXPECT_EQ(out, 0) << "nothing after the failed step ran";
  }
}

TEST(StatusMacros, AnnotateKeepsTheCodeAndPayloadsAndAddsContextOnce) {
  const absl::Status annotated = Annotate(Fails(absl::StatusCode::kInternal), "user 7");
  EXPECT_EQ(annotated.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(annotated.message(), "user 7: mysql error 1213: deadlock");
  EXPECT_EQ(annotated.GetPayload("giftwall.storage/mysql-errno"), absl::Cord("1213"));
  EXPECT_TRUE(Annotate(absl::OkStatus(), "user 7").ok());
}

}  // namespace
}  // namespace giftwall
