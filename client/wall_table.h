// Human-readable output of the command-line client.
#ifndef GIFTWALL_CLIENT_WALL_TABLE_H_
#define GIFTWALL_CLIENT_WALL_TABLE_H_

#include <cstdint>
#include <string>

#include "giftwall/v1/giftwall.pb.h"

namespace giftwall::client {

// "2026-12-02 16:30:22.123Z" (UTC), or "-" for 0.
std::string FormatTimeMs(int64_t ms);

// "month 2026-12 (start to end)", a line.
std::string FormatPeriod(const v1::GiftWallPeriod& period);

// One page of a wall as an aligned table, followed by the summary line.
std::string FormatWallTable(const v1::GetGiftWallResponse& page);

// One page of a gift's senders as an aligned table, the top sender first.
std::string FormatSendersTable(const v1::ListGiftWallSendersResponse& page);

// One page of a wall's 冠名 history as an aligned table, newest period first.
std::string FormatSponsorHistoryTable(const v1::ListSponsorHistoryResponse& page);

// A page of a sent wall, and of one sent gift's receivers.
std::string FormatSentTable(const v1::GetSentGiftsResponse& page);
std::string FormatSentReceiversTable(const v1::ListSentGiftReceiversResponse& page);

// A sender's standing: what they and the 冠名 sent, what they need, their rank.
std::string FormatStanding(const v1::GetSenderStandingResponse& standing);

}  // namespace giftwall::client

#endif  // GIFTWALL_CLIENT_WALL_TABLE_H_
