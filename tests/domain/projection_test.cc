#include "server/domain/projection.h"

#include <string>

#include "gtest/gtest.h"

namespace giftwall::domain {
namespace {

TEST(LastError, Rule12_IsCutTo1024BytesOnAUtf8Boundary) {
  // 500 three-byte characters: 1500 bytes. The cut must not split the 342nd character.
  std::string reason;
  for (int i = 0; i < 500; ++i) reason += "\xe7\xa4\xbc";  // 礼
  const std::string stored = LastError(reason);
  EXPECT_EQ(stored.size(), 1023u);
  EXPECT_EQ(stored, reason.substr(0, 1023));
  EXPECT_EQ(LastError(std::string(2000, 'x')).size(), 1024u);
}

TEST(LastError, IsTrimmed) { EXPECT_EQ(LastError("  disk full \n"), "disk full"); }

TEST(LedgerStatus, NamesRoundTrip) {
  for (LedgerStatus s : {LedgerStatus::kProcessing, LedgerStatus::kFailed, LedgerStatus::kDone,
                         LedgerStatus::kDead}) {
    EXPECT_EQ(ParseLedgerStatus(LedgerStatusName(s)), s);
  }
  EXPECT_EQ(ParseLedgerStatus("DONE"), std::nullopt);
}

TEST(ProjectedBy, NamesAreTheLedgerValues) {
  EXPECT_EQ(ProjectedByName(ProjectedBy::kRelay), "relay");
  EXPECT_EQ(ProjectedByName(ProjectedBy::kScan), "scan");
  EXPECT_EQ(ProjectedByName(ProjectedBy::kRequeue), "requeue");
  EXPECT_EQ(ProjectedByName(ProjectedBy::kRebuild), "rebuild");
}

}  // namespace
}  // namespace giftwall::domain
