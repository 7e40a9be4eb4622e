#include "server/domain/viewer.h"

#include <vector>

#include "gtest/gtest.h"

namespace giftwall::domain {
namespace {

constexpr int64_t kOwner = 1;
constexpr int64_t kHider = 7;  // hid every gift: the fake database says so
constexpr int64_t kOpen = 8;   // hid nothing

// The fake database: who hid, and what it was asked.
struct Hidden {
  std::vector<std::vector<ShownSender>> asked;
  HiddenSendersFn Fn() {
    return [this](absl::Span<const ShownSender> senders) -> absl::StatusOr<std::vector<bool>> {
      asked.emplace_back(senders.begin(), senders.end());
      std::vector<bool> answers;
      for (const ShownSender& s : senders) answers.push_back(s.sender_user_id == kHider);
      return answers;
    };
  }
};

const std::vector<ShownSender> kShown = {{"rose", kHider}, {"rose", kOpen}, {"car", 0}};

TEST(Viewer, Rule18_TheOwnerAndAModeratorSeeEveryoneWithoutAsking) {
  for (const Viewer& viewer : {Viewer{kOwner, false}, Viewer{0, true}, Viewer{99, true}}) {
    Hidden hidden;
    absl::StatusOr<std::vector<bool>> masked = MaskedFor(viewer, kOwner, kShown, hidden.Fn());
    ASSERT_TRUE(masked.ok());
    EXPECT_EQ(*masked, std::vector<bool>({false, false, false}));
    EXPECT_TRUE(hidden.asked.empty()) << "viewer " << viewer.user_id;
  }
}

TEST(Viewer, Rule18_AStrangerAndNobodySeeWhoHidMasked) {
  for (int64_t stranger : {int64_t{0}, int64_t{99}}) {
    Hidden hidden;
    absl::StatusOr<std::vector<bool>> masked =
        MaskedFor(Viewer{stranger, false}, kOwner, kShown, hidden.Fn());
    ASSERT_TRUE(masked.ok());
    EXPECT_EQ(*masked, std::vector<bool>({true, false, false}));
    // One question, about the two real senders; no sender (0) has nothing to mask.
    ASSERT_EQ(hidden.asked.size(), 1u);
    ASSERT_EQ(hidden.asked[0].size(), 2u);
    EXPECT_EQ(hidden.asked[0][0].sender_user_id, kHider);
    EXPECT_EQ(hidden.asked[0][1].gift_id, "rose");
  }
}

TEST(Viewer, Rule18_ASenderSeesThemselfButNotOtherHiders) {
  Hidden hidden;
  const std::vector<ShownSender> shown = {{"rose", kHider}, {"car", kHider}, {"rose", 9}};
  absl::StatusOr<std::vector<bool>> self =
      MaskedFor(Viewer{kHider, false}, kOwner, shown, hidden.Fn());
  ASSERT_TRUE(self.ok());
  EXPECT_EQ(*self, std::vector<bool>({false, false, false}));
  ASSERT_EQ(hidden.asked.size(), 1u);
  EXPECT_EQ(hidden.asked[0].size(), 1u);  // only sender 9

  absl::StatusOr<std::vector<bool>> other =
      MaskedFor(Viewer{kOpen, false}, kOwner, shown, hidden.Fn());
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(*other, std::vector<bool>({true, true, false}));
}

TEST(Viewer, Rule18_AFailedLookUpFailsTheRead) {
  const HiddenSendersFn down =
      [](absl::Span<const ShownSender>) -> absl::StatusOr<std::vector<bool>> {
    return absl::UnavailableError("database down");
  };
  EXPECT_EQ(MaskedFor(Viewer{}, kOwner, kShown, down).status().code(),
            absl::StatusCode::kUnavailable);
  const HiddenSendersFn short_answer =
      [](absl::Span<const ShownSender>) -> absl::StatusOr<std::vector<bool>> {
    return std::vector<bool>{};
  };
  EXPECT_EQ(MaskedFor(Viewer{}, kOwner, kShown, short_answer).status().code(),
            absl::StatusCode::kInternal);
}

TEST(Viewer, Rule18_AnOptOutHidesTheTopAndFirstSenderItNames) {
  std::vector<WallItem> items(3);
  items[0].top_sender = SenderStats{kHider, 3, 0, 1, 2};
  items[0].first_sender_user_id = kOpen;
  items[1].top_sender = SenderStats{kOpen, 1, 0, 1, 2};
  items[1].first_sender_user_id = kHider;
  items[2].first_sender_user_id = 0;  // no sender
  MarkOptedOut(OptOuts{kHider}, items);
  EXPECT_TRUE(items[0].top_sender_hidden);
  EXPECT_FALSE(items[0].first_sender_hidden);
  EXPECT_FALSE(items[1].top_sender_hidden);
  EXPECT_TRUE(items[1].first_sender_hidden);
  EXPECT_FALSE(items[2].top_sender_hidden || items[2].first_sender_hidden);
}

}  // namespace
}  // namespace giftwall::domain
