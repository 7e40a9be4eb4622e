#include "server/transport/grpc_status.h"

#include "gtest/gtest.h"

namespace giftwall::transport {
namespace {

TEST(ToGrpcStatus, KeepsCodeAndMessage) {
  const std::pair<absl::Status, grpc::StatusCode> cases[] = {
      {absl::InvalidArgumentError("bad"), grpc::StatusCode::INVALID_ARGUMENT},
      {absl::UnavailableError("down"), grpc::StatusCode::UNAVAILABLE},
      {absl::AbortedError("contention"), grpc::StatusCode::ABORTED},
      {absl::ResourceExhaustedError("full"), grpc::StatusCode::RESOURCE_EXHAUSTED},
      {absl::NotFoundError("none"), grpc::StatusCode::NOT_FOUND},
      {absl::DeadlineExceededError("slow"), grpc::StatusCode::DEADLINE_EXCEEDED},
      {absl::InternalError("bug"), grpc::StatusCode::INTERNAL},
      {absl::FailedPreconditionError("state"), grpc::StatusCode::FAILED_PRECONDITION},
  };
  for (const auto& [in, code] : cases) {
    grpc::Status out = ToGrpcStatus(in);
    EXPECT_EQ(out.error_code(), code) << in;
    EXPECT_EQ(out.error_message(), std::string(in.message()));
  }
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
}

TEST(InvalidArgument, NamesTheFieldPath) {
  grpc::Status s = InvalidArgument("message", absl::InvalidArgumentError("event_id is required"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "message.event_id is required");
  s = InvalidArgument("messages[3]", absl::InvalidArgumentError("app_code is required"));
  EXPECT_EQ(s.error_message(), "messages[3].app_code is required");
  s = InvalidArgument("", absl::InvalidArgumentError("user_id must be > 0, got 0"));
  EXPECT_EQ(s.error_message(), "user_id must be > 0, got 0");
}

}  // namespace
}  // namespace giftwall::transport
