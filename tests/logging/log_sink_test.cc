#include "server/logging/log_sink.h"

#include <string>

#include "absl/time/civil_time.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace giftwall::logging {
namespace {

using ::testing::HasSubstr;

const absl::Time kTime =
    absl::FromCivil(absl::CivilSecond(2026, 12, 7, 12, 0, 5), absl::UTCTimeZone()) +
    absl::Microseconds(123456);

google::protobuf::Struct Parse(const std::string& line) {
  google::protobuf::Struct out;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(line, &out).ok()) << line;
  return out;
}

TEST(FormatLogLine, JsonHasTheLinesFieldsAndNothingUnknown) {
  const std::string line = FormatLogLine(LogFormat::kJson, kTime, google::GLOG_WARNING, "a.cc", 7,
                                         42, "tab\there \"quoted\"\n\x01", nullptr);
  EXPECT_EQ(line, R"({"time":"2026-12-07T12:00:05.123Z","severity":"WARNING",)"
                  R"("message":"tab\there \"quoted\"\n\u0001"})");
  EXPECT_EQ(Parse(line).fields().at("message").string_value(), "tab\there \"quoted\"\n\x01");
}

// A line is valid UTF-8 whatever bytes its message holds (gRPC core's, a caller's): a byte
// that is not part of a character is U+FFFD.
TEST(FormatLogLine, JsonIsValidUtf8WhateverTheBytes) {
  const std::string line =
      FormatLogLine(LogFormat::kJson, kTime, google::GLOG_INFO, "a.cc", 7, 42,
                    "冠名 \xe5\x86 \xff \xc0\xaf \xed\xa0\x80 \xf4\x90\x80\x80 \x7f ok", nullptr);
  EXPECT_THAT(line, HasSubstr(R"("message":"冠名 \ufffd\ufffd \ufffd \ufffd\ufffd)"));
  EXPECT_EQ(Parse(line).fields().at("message").string_value(),
            "冠名 \ufffd\ufffd \ufffd \ufffd\ufffd \ufffd\ufffd\ufffd "
            "\ufffd\ufffd\ufffd\ufffd \x7f ok");
}

TEST(FormatLogLine, JsonNamesTheCallThatCausedTheLine) {
  LogContext call;
  call.trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
  call.span_id = "00f067aa0ba902b7";
  call.caller = "relay";
  call.method = "/giftwall.v1.GiftWallService/ProjectMessage";
  call.app_code = "yoyo";
  call.AddEventId("E1");
  const google::protobuf::Struct json =
      Parse(FormatLogLine(LogFormat::kJson, kTime, google::GLOG_ERROR, "a.cc", 7, 42, "m", &call));
  EXPECT_EQ(json.fields().at("trace_id").string_value(), call.trace_id);
  EXPECT_EQ(json.fields().at("span_id").string_value(), call.span_id);
  EXPECT_EQ(json.fields().at("caller").string_value(), "relay");
  EXPECT_EQ(json.fields().at("method").string_value(), call.method);
  EXPECT_EQ(json.fields().at("app_code").string_value(), "yoyo");
  EXPECT_EQ(json.fields().at("event_ids").list_value().values(0).string_value(), "E1");
  EXPECT_EQ(json.fields().at("severity").string_value(), "ERROR");
  EXPECT_FALSE(json.fields().contains("trace_ids"));
  EXPECT_FALSE(json.fields().contains("events")) << "every id is listed";
}

// A group commit's line names up to 8 of its calls and events, and how many there were.
TEST(FormatLogLine, AGroupsLineNamesItsFirstCallsAndCountsThemAll) {
  LogContext group;
  for (int i = 0; i < 20; ++i) {
    group.AddTraceId("trace" + std::to_string(i));
    group.AddEventId("E" + std::to_string(i));
  }
  const google::protobuf::Struct json = Parse(
      FormatLogLine(LogFormat::kJson, kTime, google::GLOG_WARNING, "a.cc", 7, 42, "m", &group));
  EXPECT_EQ(json.fields().at("trace_ids").list_value().values_size(), 8);
  EXPECT_EQ(json.fields().at("trace_ids").list_value().values(7).string_value(), "trace7");
  EXPECT_EQ(json.fields().at("traces").number_value(), 20);
  EXPECT_EQ(json.fields().at("event_ids").list_value().values_size(), 8);
  EXPECT_EQ(json.fields().at("events").number_value(), 20);
}

TEST(FormatLogLine, TextIsGlogsLineWithTheContextAfter) {
  LogContext call;
  call.trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
  call.caller = "relay";
  const std::string line =
      FormatLogLine(LogFormat::kText, kTime, google::GLOG_INFO, "a.cc", 7, 42, "hello", &call);
  EXPECT_THAT(line, ::testing::MatchesRegex(
                        R"(I202612[0-9][0-9] [0-9][0-9]:[0-9][0-9]:05\.123456 +42 a\.cc:7\] hello )"
                        R"(\{trace_id="4bf92f3577b34da6a3ce929d0e0e4736" )"
                        R"(caller="relay"\})"));
  EXPECT_THAT(
      FormatLogLine(LogFormat::kText, kTime, google::GLOG_INFO, "a.cc", 7, 42, "hello", nullptr),
      ::testing::EndsWith("] hello"));
}

TEST(ParseLogFormat, KnowsTextAndJson) {
  EXPECT_EQ(*ParseLogFormat("text"), LogFormat::kText);
  EXPECT_EQ(*ParseLogFormat("json"), LogFormat::kJson);
  EXPECT_THAT(std::string(ParseLogFormat("xml").status().message()),
              HasSubstr(R"(--log_format: "xml" is neither text nor json)"));
}

}  // namespace
}  // namespace giftwall::logging
