// The columns of the wall's two tables, named once (see columns.h): the statements that read or
// write whole rows list them from here, and the code that reads a row names each column.
#ifndef GIFTWALL_SERVER_STORAGE_WALL_COLUMNS_H_
#define GIFTWALL_SERVER_STORAGE_WALL_COLUMNS_H_

#include "server/storage/columns.h"

namespace giftwall::storage {

// user_gift_wall, every column but app_code and the row's own times.
namespace wall_row {
enum Column {
  kUserId,
  kGiftId,
  kGiftCount,
  kTotalCoins,
  kFirstReceived,
  kLastReceived,
  kName,
  kNameAt,
  kNameEvent,
  kIcon,
  kIconAt,
  kIconEvent,
  kSenderCount,
  kTopUser,
  kTopCount,
  kTopCoins,
  kTopFirst,
  kTopLast,
  kFirstSender,
  kFirstSenderAt,
  kFirstSenderEvent,
};
inline constexpr ResultColumn kColumns[] = {
    {kUserId, "user_id"},
    {kGiftId, "gift_id"},
    {kGiftCount, "gift_count"},
    {kTotalCoins, "total_coins"},
    {kFirstReceived, "first_received_at_ms"},
    {kLastReceived, "last_received_at_ms"},
    {kName, "gift_name"},
    {kNameAt, "gift_name_at_ms"},
    {kNameEvent, "gift_name_event_id"},
    {kIcon, "gift_icon"},
    {kIconAt, "gift_icon_at_ms"},
    {kIconEvent, "gift_icon_event_id"},
    {kSenderCount, "sender_count"},
    {kTopUser, "top_sender_user_id"},
    {kTopCount, "top_sender_count"},
    {kTopCoins, "top_sender_coins"},
    {kTopFirst, "top_sender_first_sent_at_ms"},
    {kTopLast, "top_sender_last_sent_at_ms"},
    {kFirstSender, "first_sender_user_id"},
    {kFirstSenderAt, "first_sender_at_ms"},
    {kFirstSenderEvent, "first_sender_event_id"},
};
static_assert(InPositionOrder(kColumns));
}  // namespace wall_row

// user_gift_wall_sender, every column but app_code and the row's own times.
namespace sender_row {
enum Column {
  kUserId,
  kGiftId,
  kSenderId,
  kSentCount,
  kSentCoins,
  kFirstSent,
  kLastSent,
  kAnonymous
};
inline constexpr ResultColumn kColumns[] = {
    {kUserId, "user_id"},           {kGiftId, "gift_id"},       {kSenderId, "sender_user_id"},
    {kSentCount, "sent_count"},     {kSentCoins, "sent_coins"}, {kFirstSent, "first_sent_at_ms"},
    {kLastSent, "last_sent_at_ms"}, {kAnonymous, "anonymous"},
};
static_assert(InPositionOrder(kColumns));
}  // namespace sender_row

}  // namespace giftwall::storage

#endif  // GIFTWALL_SERVER_STORAGE_WALL_COLUMNS_H_
