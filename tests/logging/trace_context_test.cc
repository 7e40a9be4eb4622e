#include "server/logging/trace_context.h"

#include <set>
#include <string>

#include "gtest/gtest.h"

namespace giftwall::logging {
namespace {

constexpr char kTraceId[] = "4bf92f3577b34da6a3ce929d0e0e4736";
constexpr char kParentId[] = "00f067aa0ba902b7";

TEST(ParseTraceParent, ReadsTheSpecsExample) {
  std::optional<TraceParent> parent =
      ParseTraceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  ASSERT_TRUE(parent.has_value());
  EXPECT_EQ(parent->trace_id, kTraceId);
  EXPECT_EQ(parent->parent_id, kParentId);
  EXPECT_TRUE(parent->sampled);
  parent = ParseTraceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
  ASSERT_TRUE(parent.has_value());
  EXPECT_FALSE(parent->sampled);
}

TEST(ParseTraceParent, ALaterVersionMayAppendFields) {
  EXPECT_TRUE(
      ParseTraceParent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-comes-next")
          .has_value());
  EXPECT_FALSE(
      ParseTraceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra").has_value())
      << "version 00 is exactly 55 characters";
  EXPECT_FALSE(
      ParseTraceParent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x").has_value());
}

// Whatever the spec says a receiver must not trust starts a new trace.
TEST(ParseTraceParent, RefusesWhatIsNotOne) {
  for (const std::string bad : {
           "",
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",      // no flags
           "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   // version ff
           "00-00000000000000000000000000000000-00f067aa0ba902b7-01",   // zero trace id
           "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",   // zero parent id
           "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",   // upper case
           "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",   // not hex
           "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",   // separators
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 ",  // trailing space
           "0-4bf92f3577b34da6a3ce929d0e0e47360-00f067aa0ba902b7-01",   // short version
       }) {
    EXPECT_FALSE(ParseTraceParent(bad).has_value()) << bad;
  }
}

TEST(NewIds, AreLowerCaseHexOfTheirLengthAndDiffer) {
  std::set<std::string> traces;
  for (int i = 0; i < 100; ++i) {
    const std::string trace = NewTraceId();
    const std::string span = NewSpanId();
    EXPECT_TRUE(ParseTraceParent("00-" + trace + "-" + span + "-01").has_value())
        << trace << " " << span;
    traces.insert(trace);
  }
  EXPECT_EQ(traces.size(), 100u);
}

}  // namespace
}  // namespace giftwall::logging
