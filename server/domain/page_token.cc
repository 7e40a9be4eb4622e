#include "server/domain/page_token.h"

#include <algorithm>
#include <initializer_list>
#include <optional>

#include "absl/strings/escaping.h"

namespace giftwall::domain {
namespace {

constexpr uint8_t kTokenVersion = 1;
constexpr uint8_t kGiftWallTokenKind = 1;
// A senders page's before the viewer: its cursor named a sender. No longer issued nor taken.
constexpr uint8_t kSenderByIdTokenKind = 2;
constexpr uint8_t kDeadEventTokenKind = 3;
constexpr uint8_t kSponsorHistoryTokenKind = 4;
constexpr uint8_t kCatalogTokenKind = 5;
// A wall's with include_unlit: kGiftWallTokenKind's fields and where the cursor is.
constexpr uint8_t kGiftWallWithUnlitTokenKind = 6;
constexpr uint8_t kSenderTokenKind = 7;
constexpr uint8_t kSentTokenKind = 8;
// A token longer than this was not issued by this service (the longest carries a 1 KiB error
// filter and an event id).
constexpr size_t kMaxTokenChars = 4096;

// FNV-1a, 32 bits: a stable checksum (replicas must agree), not a signature.
uint32_t Fnv1a(absl::string_view bytes) {
  uint32_t hash = 2166136261u;
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 16777619u;
  }
  return hash;
}

class TokenWriter {
 public:
  void Byte(uint8_t b) { out_.push_back(static_cast<char>(b)); }
  void Varint(uint64_t v) {
    while (v >= 0x80) {
      Byte(static_cast<uint8_t>(v | 0x80));
      v >>= 7;
    }
    Byte(static_cast<uint8_t>(v));
  }
  void Int(int64_t v) {  // zigzag, so small negative values stay short
    Varint((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
  }
  void Str(absl::string_view s) {
    Varint(s.size());
    out_.append(s.data(), s.size());
  }
  std::string Finish() {
    const uint32_t sum = Fnv1a(out_);
    for (int shift = 0; shift < 32; shift += 8) Byte(static_cast<uint8_t>(sum >> shift));
    return absl::WebSafeBase64Escape(out_);
  }

 private:
  std::string out_;
};

class TokenReader {
 public:
  // Verifies the checksum and positions the reader at the start of the fields.
  static std::optional<TokenReader> Open(absl::string_view token) {
    if (token.size() > kMaxTokenChars) return std::nullopt;
    std::string raw;
    if (!absl::WebSafeBase64Unescape(token, &raw) || raw.size() < 4) return std::nullopt;
    // The unescaper skips white space and ignores a last character's unused bits, so a damaged
    // token can decode to the same bytes: only the exact text this service writes is read.
    if (absl::WebSafeBase64Escape(raw) != token) return std::nullopt;
    const absl::string_view body(raw.data(), raw.size() - 4);
    uint32_t sum = 0;
    for (int i = 0; i < 4; ++i) {
      sum |= static_cast<uint32_t>(static_cast<unsigned char>(raw[body.size() + i])) << (8 * i);
    }
    if (sum != Fnv1a(body)) return std::nullopt;
    raw.resize(body.size());
    return TokenReader(std::move(raw));
  }

  bool Byte(uint8_t* b) {
    if (pos_ >= data_.size()) return false;
    *b = static_cast<uint8_t>(data_[pos_++]);
    return true;
  }
  bool Varint(uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      uint8_t b;
      if (!Byte(&b)) return false;
      // Only the shortest encoding, within 64 bits, is read: the writer writes no other.
      if ((shift > 0 && b == 0) || (shift == 63 && b > 1)) return false;
      *v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return true;
    }
    return false;
  }
  bool Int(int64_t* v) {
    uint64_t u;
    if (!Varint(&u)) return false;
    *v = static_cast<int64_t>((u >> 1) ^ (~(u & 1) + 1));
    return true;
  }
  bool Str(std::string* s) {
    uint64_t n;
    if (!Varint(&n) || n > data_.size() - pos_) return false;
    s->assign(data_, pos_, n);
    pos_ += n;
    return true;
  }
  bool AtEnd() const { return pos_ == data_.size(); }

 private:
  explicit TokenReader(std::string data) : data_(std::move(data)) {}
  std::string data_;
  size_t pos_ = 0;
};

absl::Status Malformed() {
  return absl::InvalidArgumentError("page_token is malformed: pass next_page_token unchanged");
}

// Opens `token` and reads its version and kind, one of `want_kinds`, into *kind.
std::optional<TokenReader> OpenToken(absl::string_view token,
                                     std::initializer_list<uint8_t> want_kinds,
                                     uint8_t* kind = nullptr) {
  std::optional<TokenReader> r = TokenReader::Open(token);
  uint8_t version, read_kind;
  if (!r || !r->Byte(&version) || version != kTokenVersion || !r->Byte(&read_kind) ||
      std::find(want_kinds.begin(), want_kinds.end(), read_kind) == want_kinds.end()) {
    return std::nullopt;
  }
  if (kind != nullptr) *kind = read_kind;
  return r;
}

// A last field that only some tokens carry: empty if absent. Present, it is never empty (the
// encoder leaves an empty one out), so that a token has one spelling.
bool OptionalStr(TokenReader& r, std::string* out) {
  return r.AtEnd() || (r.Str(out) && !out->empty());
}

TokenWriter StartToken(uint8_t kind) {
  TokenWriter w;
  w.Byte(kTokenVersion);
  w.Byte(kind);
  return w;
}

}  // namespace

std::string EncodeGiftWallPageToken(const GiftWallPageToken& token) {
  // Without include_unlit, tokens read as they did before the catalogue.
  TokenWriter w =
      StartToken(token.include_unlit ? kGiftWallWithUnlitTokenKind : kGiftWallTokenKind);
  w.Byte(static_cast<uint8_t>(token.sort));
  w.Str(token.app_code);
  w.Int(token.user_id);
  if (token.include_unlit) w.Byte(token.unlit ? 1 : 0);
  w.Int(token.sort_value);
  w.Str(token.gift_id);
  // Last, and only for a period: tokens of all-time pages read as they did before periods.
  if (!token.period.empty()) w.Str(token.period);
  return w.Finish();
}

absl::StatusOr<GiftWallPageToken> DecodeGiftWallPageToken(absl::string_view token,
                                                          absl::string_view app_code,
                                                          int64_t user_id, WallSort sort,
                                                          bool include_unlit) {
  uint8_t kind = 0;
  std::optional<TokenReader> r =
      OpenToken(token, {kGiftWallTokenKind, kGiftWallWithUnlitTokenKind}, &kind);
  uint8_t sort_byte, unlit = 0;
  GiftWallPageToken out;
  out.include_unlit = kind == kGiftWallWithUnlitTokenKind;
  if (!r || !r->Byte(&sort_byte) || sort_byte > static_cast<uint8_t>(WallSort::kCatalog) ||
      !r->Str(&out.app_code) || !r->Int(&out.user_id) ||
      (out.include_unlit && (!r->Byte(&unlit) || unlit > 1)) || !r->Int(&out.sort_value) ||
      !r->Str(&out.gift_id) || !OptionalStr(*r, &out.period) || !r->AtEnd()) {
    return Malformed();
  }
  out.sort = static_cast<WallSort>(sort_byte);
  out.unlit = unlit == 1;
  if (out.app_code != app_code || out.user_id != user_id || out.sort != sort ||
      out.include_unlit != include_unlit) {
    return absl::InvalidArgumentError(
        "page_token was issued for another wall or sort: pass it only with the app_code, "
        "user_id, sort and include_unlit of the request that returned it");
  }
  return out;
}

std::string EncodeSenderPageToken(const SenderPageToken& token) {
  TokenWriter w = StartToken(kSenderTokenKind);
  w.Str(token.app_code);
  w.Int(token.user_id);
  w.Str(token.gift_id);
  w.Int(token.cursor.sent_count);
  w.Int(token.cursor.last_sent_at_ms);
  w.Int(token.cursor.tied_shown);
  if (!token.period.empty()) w.Str(token.period);
  return w.Finish();
}

absl::StatusOr<SenderPageToken> DecodeSenderPageToken(absl::string_view token,
                                                      absl::string_view app_code, int64_t user_id,
                                                      absl::string_view gift_id) {
  uint8_t kind = 0;
  std::optional<TokenReader> r = OpenToken(token, {kSenderTokenKind, kSenderByIdTokenKind}, &kind);
  if (r && kind == kSenderByIdTokenKind) {
    return absl::InvalidArgumentError(
        "page_token is from an older server, whose senders' tokens named a sender: read the "
        "senders again from the first page");
  }
  SenderPageToken out;
  if (!r || !r->Str(&out.app_code) || !r->Int(&out.user_id) || !r->Str(&out.gift_id) ||
      !r->Int(&out.cursor.sent_count) || !r->Int(&out.cursor.last_sent_at_ms) ||
      !r->Int(&out.cursor.tied_shown) || out.cursor.tied_shown < 1 ||
      out.cursor.tied_shown > kMaxTiedShown || !OptionalStr(*r, &out.period) || !r->AtEnd()) {
    return Malformed();
  }
  if (out.app_code != app_code || out.user_id != user_id || out.gift_id != gift_id) {
    return absl::InvalidArgumentError(
        "page_token was issued for another gift's senders: pass it only with the app_code, "
        "user_id and gift_id of the request that returned it");
  }
  return out;
}

std::string EncodeSponsorHistoryPageToken(const SponsorHistoryPageToken& token) {
  TokenWriter w = StartToken(kSponsorHistoryTokenKind);
  w.Str(token.app_code);
  w.Int(token.user_id);
  w.Str(token.period_kind);
  w.Str(token.gift_filter);
  w.Str(token.period_key);
  w.Str(token.gift_id);
  return w.Finish();
}

absl::StatusOr<SponsorHistoryPageToken> DecodeSponsorHistoryPageToken(
    absl::string_view token, absl::string_view app_code, int64_t user_id,
    absl::string_view period_kind, absl::string_view gift_filter) {
  std::optional<TokenReader> r = OpenToken(token, {kSponsorHistoryTokenKind});
  SponsorHistoryPageToken out;
  if (!r || !r->Str(&out.app_code) || !r->Int(&out.user_id) || !r->Str(&out.period_kind) ||
      !r->Str(&out.gift_filter) || !r->Str(&out.period_key) || !r->Str(&out.gift_id) ||
      !r->AtEnd()) {
    return Malformed();
  }
  if (out.app_code != app_code || out.user_id != user_id || out.period_kind != period_kind ||
      out.gift_filter != gift_filter) {
    return absl::InvalidArgumentError(
        "page_token was issued for another wall's history: pass it only with the app_code, "
        "user_id, period_kind and gift_id of the request that returned it");
  }
  return out;
}

std::string EncodeSentPageToken(const SentPageToken& token) {
  TokenWriter w = StartToken(kSentTokenKind);
  w.Str(token.app_code);
  w.Int(token.sender_user_id);
  w.Str(token.gift_id);
  w.Str(token.after_gift);
  w.Int(token.after_receiver);
  w.Str(token.period);
  return w.Finish();
}

absl::StatusOr<SentPageToken> DecodeSentPageToken(absl::string_view token,
                                                  absl::string_view app_code,
                                                  int64_t sender_user_id,
                                                  absl::string_view gift_id) {
  std::optional<TokenReader> r = OpenToken(token, {kSentTokenKind});
  SentPageToken out;
  if (!r || !r->Str(&out.app_code) || !r->Int(&out.sender_user_id) || !r->Str(&out.gift_id) ||
      !r->Str(&out.after_gift) || !r->Int(&out.after_receiver) || !r->Str(&out.period) ||
      !r->AtEnd()) {
    return Malformed();
  }
  if (out.app_code != app_code || out.sender_user_id != sender_user_id || out.gift_id != gift_id) {
    return absl::InvalidArgumentError(
        "page_token was issued for another sent wall: pass it only with the app_code, "
        "sender_user_id and gift_id of the request that returned it");
  }
  return out;
}

std::string EncodeCatalogPageToken(const CatalogPageToken& token) {
  TokenWriter w = StartToken(kCatalogTokenKind);
  w.Str(token.app_code);
  w.Int(token.sort_order);
  w.Str(token.gift_id);
  return w.Finish();
}

absl::StatusOr<CatalogPageToken> DecodeCatalogPageToken(absl::string_view token,
                                                        absl::string_view app_code) {
  std::optional<TokenReader> r = OpenToken(token, {kCatalogTokenKind});
  CatalogPageToken out;
  if (!r || !r->Str(&out.app_code) || !r->Int(&out.sort_order) || !r->Str(&out.gift_id) ||
      !r->AtEnd()) {
    return Malformed();
  }
  if (out.app_code != app_code) {
    return absl::InvalidArgumentError(
        "page_token was issued for another app's catalogue: pass it only with the app_code of "
        "the request that returned it");
  }
  return out;
}

std::string EncodeDeadEventPageToken(const DeadEventPageToken& token) {
  TokenWriter w = StartToken(kDeadEventTokenKind);
  w.Str(token.app_code);
  w.Str(token.error_contains);
  w.Str(token.event_id);
  return w.Finish();
}

absl::StatusOr<DeadEventPageToken> DecodeDeadEventPageToken(absl::string_view token,
                                                            absl::string_view app_code,
                                                            absl::string_view error_contains) {
  std::optional<TokenReader> r = OpenToken(token, {kDeadEventTokenKind});
  DeadEventPageToken out;
  if (!r || !r->Str(&out.app_code) || !r->Str(&out.error_contains) || !r->Str(&out.event_id) ||
      !r->AtEnd()) {
    return Malformed();
  }
  if (out.app_code != app_code || out.error_contains != error_contains) {
    return absl::InvalidArgumentError(
        "page_token was issued for another app_code or error_contains: pass it only with the "
        "request that returned it");
  }
  return out;
}

}  // namespace giftwall::domain
