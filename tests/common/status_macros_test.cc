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

absl::Status Twice(bool ok, int* out) {
  RETURN_IF_ERROR(ok ? absl::OkStatus() : Fails(absl::StatusCode::kAborted));
  ASSIGN_OR_RETURN(const int v, Value(ok));
  ASSIGN_OR_RETURN(*out, Value(ok));
  *out += v;
  return absl::OkStatus();
}

TEST(StatusMacros, PassTheStatusUpUnchangedOrGoOn) {
  int out = 0;
  EXPECT_TRUE(Twice(true, &out).ok());
  EXPECT_EQ(out, 14);
  const absl::Status failed = Twice(false, &out);
  EXPECT_EQ(failed.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(failed.message(), "mysql error 1213: deadlock");
  EXPECT_TRUE(failed.GetPayload("giftwall.storage/mysql-errno").has_value());
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
