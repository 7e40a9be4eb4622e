#include "client/wall_table.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "client/cli.h"

namespace giftwall::client {
std::string FormatTimeMs(int64_t ms) {
  if (ms == 0) return "-";
  return absl::FormatTime("%Y-%m-%d %H:%M:%E3SZ", absl::FromUnixMillis(ms), absl::UTCTimeZone());
}

std::string FormatPeriod(const v1::GiftWallPeriod& period) {
  return absl::StrCat(period.kind(), " ", period.key(), " (", FormatTimeMs(period.start_ms()),
                      " to ", FormatTimeMs(period.end_ms()), ")\n");
}

namespace {

// A sender as the viewer may see them: masked ones (神秘人) as "anonymous".
std::string SenderName(const v1::GiftWallSender& sender) {
  return sender.anonymous() ? "anonymous" : absl::StrCat(sender.user_id());
}

}  // namespace

std::string FormatWallTable(const v1::GetGiftWallResponse& page) {
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"GIFT", "NAME", "COUNT", "COINS", "SENDERS", "TOP SENDER (冠名)", "FIRST SENDER",
                  "FIRST RECEIVED", "LAST RECEIVED"});
  for (const v1::GiftWallItem& item : page.items()) {
    const std::string top = item.has_top_sender()
                                ? absl::StrFormat("%s (%d)", SenderName(item.top_sender()),
                                                  item.top_sender().sent_count())
                                : "-";
    std::string name = item.gift_name().empty() ? "-" : item.gift_name();
    // A server older than the catalogue leaves lit unset: what was received is lit.
    if (!item.lit() && item.gift_count() == 0) absl::StrAppend(&name, " (unlit)");
    rows.push_back({item.gift_id(), name, absl::StrCat(item.gift_count()),
                    absl::StrCat(item.total_coins()), absl::StrCat(item.sender_count()), top,
                    item.first_sender_anonymous()      ? "anonymous"
                    : item.first_sender_user_id() == 0 ? "-"
                                                       : absl::StrCat(item.first_sender_user_id()),
                    FormatTimeMs(item.first_received_at_ms()),
                    FormatTimeMs(item.last_received_at_ms())});
  }
  std::string out = page.has_period() ? FormatPeriod(page.period()) : "";
  absl::StrAppend(&out, page.items().empty() ? "(no gifts on this page)\n" : FormatTable(rows));
  const v1::GiftWallSummary& s = page.summary();
  absl::StrAppendFormat(&out,
                        "\ndistinct gifts: %d, received in all: %d, coins: %d, last received: %s\n",
                        s.distinct_gifts(), s.total_gift_count(), s.total_coins(),
                        FormatTimeMs(s.last_received_at_ms()));
  if (s.catalogue_gifts() > 0) {
    absl::StrAppendFormat(&out, "lit %d of %d on sale", s.lit_gifts(), s.catalogue_gifts());
    if (s.lit_retired_gifts() + s.lit_uncatalogued_gifts() > 0) {
      absl::StrAppendFormat(&out, " (besides: %d retired, %d not in the catalogue)",
                            s.lit_retired_gifts(), s.lit_uncatalogued_gifts());
    }
    std::vector<std::string> series;
    for (const v1::GiftWallSeries& one : s.series()) {
      series.push_back(
          absl::StrFormat("%s %d/%d", one.series(), one.lit_gifts(), one.catalogue_gifts()));
    }
    if (!series.empty()) absl::StrAppend(&out, "; by series: ", absl::StrJoin(series, ", "));
    absl::StrAppend(&out, "\n");
  }
  if (!page.next_page_token().empty()) {
    absl::StrAppend(&out, "more: --page_token=", page.next_page_token(), "\n");
  }
  return out;
}

std::string FormatSendersTable(const v1::ListGiftWallSendersResponse& page) {
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"SENDER", "SENT", "COINS", "FIRST SENT", "LAST SENT"});
  for (const v1::GiftWallSender& sender : page.senders()) {
    rows.push_back({SenderName(sender), absl::StrCat(sender.sent_count()),
                    absl::StrCat(sender.sent_coins()), FormatTimeMs(sender.first_sent_at_ms()),
                    FormatTimeMs(sender.last_sent_at_ms())});
  }
  std::string out = page.has_period() ? FormatPeriod(page.period()) : "";
  absl::StrAppend(&out, page.senders().empty() ? "(no senders on this page)\n" : FormatTable(rows));
  if (!page.next_page_token().empty()) {
    absl::StrAppend(&out, "more: --page_token=", page.next_page_token(), "\n");
  }
  return out;
}

std::string FormatSentTable(const v1::GetSentGiftsResponse& page) {
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"GIFT", "NAME", "SENT", "COINS", "RECEIVERS", "FIRST SENT", "LAST SENT"});
  for (const v1::SentGift& gift : page.gifts()) {
    rows.push_back({absl::StrCat(gift.gift_id(), gift.anonymous() ? " (anonymous)" : ""),
                    gift.gift_name().empty() ? "-" : gift.gift_name(),
                    absl::StrCat(gift.sent_count()), absl::StrCat(gift.sent_coins()),
                    absl::StrCat(gift.receiver_count()), FormatTimeMs(gift.first_sent_at_ms()),
                    FormatTimeMs(gift.last_sent_at_ms())});
  }
  std::string out = page.has_period() ? FormatPeriod(page.period()) : "";
  absl::StrAppend(&out,
                  page.gifts().empty() ? "(no sent gifts on this page)\n" : FormatTable(rows));
  if (!page.next_page_token().empty()) {
    absl::StrAppend(&out, "more: --page_token=", page.next_page_token(), "\n");
  }
  return out;
}

std::string FormatSentReceiversTable(const v1::ListSentGiftReceiversResponse& page) {
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"RECEIVER", "SENT", "COINS", "FIRST SENT", "LAST SENT"});
  for (const v1::SentGiftReceiver& receiver : page.receivers()) {
    rows.push_back({absl::StrCat(receiver.user_id(), receiver.anonymous() ? " (anonymous)" : ""),
                    absl::StrCat(receiver.sent_count()), absl::StrCat(receiver.sent_coins()),
                    FormatTimeMs(receiver.first_sent_at_ms()),
                    FormatTimeMs(receiver.last_sent_at_ms())});
  }
  std::string out = page.has_period() ? FormatPeriod(page.period()) : "";
  absl::StrAppend(&out,
                  page.receivers().empty() ? "(no receivers on this page)\n" : FormatTable(rows));
  if (!page.next_page_token().empty()) {
    absl::StrAppend(&out, "more: --page_token=", page.next_page_token(), "\n");
  }
  return out;
}

std::string FormatSponsorHistoryTable(const v1::ListSponsorHistoryResponse& page) {
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"PERIOD", "GIFT", "冠名", "SENT", "COINS", "REACHED AT", "PERIODS WON"});
  for (const v1::SponsorHistoryEntry& entry : page.entries()) {
    const v1::GiftWallSender& sponsor = entry.sponsor();
    rows.push_back({absl::StrCat(entry.period().kind(), ":", entry.period().key()), entry.gift_id(),
                    SenderName(sponsor), absl::StrCat(sponsor.sent_count()),
                    absl::StrCat(sponsor.sent_coins()), FormatTimeMs(sponsor.last_sent_at_ms()),
                    absl::StrCat(entry.periods_won())});
  }
  std::string out =
      page.entries().empty() ? "(no 冠名 in the retained past periods)\n" : FormatTable(rows);
  if (!page.next_page_token().empty()) {
    absl::StrAppend(&out, "more: --page_token=", page.next_page_token(), "\n");
  }
  return out;
}

std::string FormatStanding(const v1::GetSenderStandingResponse& standing) {
  std::string out = standing.has_period() ? FormatPeriod(standing.period()) : "";
  const v1::GiftWallSender& sender = standing.sender();
  absl::StrAppendFormat(&out, "sender %s sent %d (%d coins)\n", SenderName(sender),
                        sender.sent_count(), sender.sent_coins());
  if (standing.has_sponsor()) {
    absl::StrAppendFormat(&out, "冠名: %s with %d, reached at %s\n", SenderName(standing.sponsor()),
                          standing.sponsor().sent_count(),
                          FormatTimeMs(standing.sponsor().last_sent_at_ms()));
  } else {
    absl::StrAppend(&out, "冠名: none yet\n");
  }
  absl::StrAppend(&out, "needed to take 冠名: ", standing.needed_to_sponsor(), "\n");
  absl::StrAppend(&out, "rank: ",
                  standing.rank_beyond_limit() ? "more than 1,000"
                  : standing.rank() == 0       ? "- (sent none)"
                                               : absl::StrCat(standing.rank()),
                  "\n");
  return out;
}

}  // namespace giftwall::client
