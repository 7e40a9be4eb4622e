#include "server/transport/call_log.h"

#include <map>
#include <string>

#include "giftwall/v1/admin.pb.h"
#include "giftwall/v1/giftwall.pb.h"
#include "gtest/gtest.h"

namespace giftwall::transport {
namespace {

TEST(TraceOf, KeepsTheCallersTraceAndStartsItsOwnSpan) {
  const std::string header = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  const std::multimap<grpc::string_ref, grpc::string_ref> metadata = {{"traceparent", header}};
  const logging::LogContext log = TraceOf(metadata);
  EXPECT_EQ(log.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(log.span_id.size(), 16u);
  EXPECT_NE(log.span_id, "00f067aa0ba902b7") << "this server's span, not the caller's";
}

TEST(TraceOf, StartsATraceWhenThereIsNoneOrItIsNotOne) {
  const std::string bad = "00-xyz";
  const logging::LogContext none = TraceOf({});
  const logging::LogContext invalid = TraceOf({{"traceparent", bad}});
  EXPECT_EQ(none.trace_id.size(), 32u);
  EXPECT_EQ(invalid.trace_id.size(), 32u);
  EXPECT_NE(none.trace_id, invalid.trace_id);
}

TEST(DescribeRequest, ReadsTheAppAndTheEventsOfABatch) {
  v1::ProjectMessagesRequest batch;
  for (int i = 0; i < 10; ++i) {
    v1::WalletOutboxMessage* message = batch.add_messages();
    message->set_app_code("yoyo");
    message->set_event_id("E" + std::to_string(i));
  }
  logging::LogContext log;
  DescribeRequest(batch, &log);
  EXPECT_EQ(log.app_code, "yoyo");
  ASSERT_EQ(log.event_ids.size(), logging::LogContext::kMaxIds);
  EXPECT_EQ(log.event_ids.front(), "E0");
  EXPECT_EQ(log.events, 10u);
}

TEST(DescribeRequest, ReadsOneMessageAndPlainRequests) {
  v1::ProjectMessageRequest one;
  one.mutable_message()->set_app_code("chat");
  one.mutable_message()->set_event_id(std::string(1000, 'x'));
  logging::LogContext log;
  DescribeRequest(one, &log);
  EXPECT_EQ(log.app_code, "chat");
  ASSERT_EQ(log.event_ids.size(), 1u);
  EXPECT_EQ(log.event_ids[0], std::string(128, 'x') + "...") << "an id is cut to 128 bytes";

  // Cut between characters: 43 three-byte characters are 129 bytes.
  std::string chinese;
  for (int i = 0; i < 43; ++i) chinese += "礼";
  v1::ProjectMessageRequest cjk;
  cjk.mutable_message()->set_event_id(chinese);
  logging::LogContext cut;
  DescribeRequest(cjk, &cut);
  EXPECT_EQ(cut.event_ids[0], chinese.substr(0, 126) + "...");

  v1::GetGiftWallRequest wall;
  wall.set_app_code("yoyo");
  logging::LogContext read;
  DescribeRequest(wall, &read);
  EXPECT_EQ(read.app_code, "yoyo");
  EXPECT_TRUE(read.event_ids.empty());

  v1::RequeueDeadEventsRequest requeue;
  requeue.set_app_code("yoyo");
  requeue.add_event_ids("D1");
  requeue.add_event_ids("D2");
  logging::LogContext admin;
  DescribeRequest(requeue, &admin);
  EXPECT_EQ(admin.event_ids, (std::vector<std::string>{"D1", "D2"}));
}

// A caller chooses the path it calls: one no service declares is shown escaped and cut.
TEST(MethodForLog, NamesDeclaredMethodsAndBoundsTheRest) {
  const LoggedMethod known = MethodForLog("/giftwall.v1.GiftWallService/ProjectMessage");
  EXPECT_TRUE(known.known);
  EXPECT_EQ(known.name, "/giftwall.v1.GiftWallService/ProjectMessage");
  EXPECT_TRUE(MethodForLog("/giftwall.v1.ProjectionAdminService/RunCatchUp").known);
  // Only as gRPC routes it: another spelling of a method is a path no service declares.
  for (const char* spelling :
       {"/giftwall.v1/GiftWallService.ProjectMessage", "giftwall.v1.GiftWallService/ProjectMessage",
        "/giftwall.v1.GiftWallService.ProjectMessage", "/giftwall.v1.GiftWallService/", "/"}) {
    EXPECT_FALSE(MethodForLog(spelling).known) << spelling;
  }
  const LoggedMethod unknown = MethodForLog("/x.Y/" + std::string(4000, 'a') + "\n");
  EXPECT_FALSE(unknown.known);
  EXPECT_EQ(unknown.name, "unknown: /x.Y/" + std::string(95, 'a') + "...");
  EXPECT_EQ(MethodForLog("/x.Y/\n").name, "unknown: /x.Y/\\n");
}

TEST(RepeatLimiter, LetsOneLineAKeyThroughEachPeriodAndCountsTheRest) {
  RepeatLimiter limiter(absl::Seconds(10));
  const absl::Time t0 = absl::FromUnixSeconds(1'800'000'000);
  int64_t suppressed = -1;
  EXPECT_TRUE(limiter.Allow("a", t0, &suppressed));
  EXPECT_EQ(suppressed, 0);
  EXPECT_FALSE(limiter.Allow("a", t0 + absl::Seconds(1), &suppressed));
  EXPECT_FALSE(limiter.Allow("a", t0 + absl::Seconds(9), &suppressed));
  EXPECT_TRUE(limiter.Allow("b", t0 + absl::Seconds(9), &suppressed)) << "keys are apart";
  EXPECT_TRUE(limiter.Allow("a", t0 + absl::Seconds(10), &suppressed));
  EXPECT_EQ(suppressed, 2);
  EXPECT_FALSE(limiter.Allow("a", t0 + absl::Seconds(11), &suppressed));
}

TEST(RepeatLimiter, BoundsItsKeys) {
  RepeatLimiter limiter(absl::Seconds(10));
  const absl::Time t0 = absl::FromUnixSeconds(1'800'000'000);
  int64_t suppressed = 0;
  for (int i = 0; i < 100'000; ++i) {
    EXPECT_TRUE(limiter.Allow("/x.Y/" + std::to_string(i), t0, &suppressed));
  }
  EXPECT_LE(limiter.keys(), 4096u);
}

}  // namespace
}  // namespace giftwall::transport
