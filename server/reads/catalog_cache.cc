#include "server/reads/catalog_cache.h"

#include <algorithm>
#include <utility>

namespace giftwall::reads {

CatalogCache::CatalogCache(LoadCatalogFn load, absl::Duration ttl, std::function<absl::Time()> now)
    : load_(std::move(load)), ttl_(ttl), now_(std::move(now)) {}

absl::StatusOr<std::shared_ptr<const domain::CatalogIndex>> CatalogCache::Get(
    const std::string& app_code) {
  int64_t generation = 0;
  absl::Time started;
  {
    absl::MutexLock lock(&mu_);
    for (;;) {
      const absl::Time now = now_();
      auto it = entries_.find(app_code);
      if (it == entries_.end()) {
        MakeRoom();
        it = entries_.emplace(app_code, Entry()).first;
      }
      Entry& entry = it->second;
      if (entry.catalog != nullptr && now - entry.read_at < ttl_) return entry.catalog;
      if (!entry.loading) {
        entry.loading = true;
        generation = entry.generation;
        started = now;
        ++loads_;
        break;
      }
      // Another caller is reading it: meanwhile the catalogue it replaces serves, if any (a write
      // through this server dropped it); otherwise wait for that read and take what it got.
      if (entry.catalog != nullptr) return entry.catalog;
      const int64_t attempt = entry.attempts;
      ++waiting_;
      do {
        loaded_.Wait(&mu_);
        it = entries_.find(app_code);
      } while (it != entries_.end() && it->second.attempts == attempt);
      --waiting_;
      if (it == entries_.end()) continue;
      if (!it->second.last_error.ok()) return it->second.last_error;
      if (it->second.catalog != nullptr) return it->second.catalog;
      // That read began before a write through this server: read again.
    }
  }
  absl::StatusOr<std::vector<domain::CatalogGift>> gifts = load_(app_code);
  std::shared_ptr<const domain::CatalogIndex> catalog;
  if (gifts.ok()) catalog = std::make_shared<const domain::CatalogIndex>(*std::move(gifts));
  absl::MutexLock lock(&mu_);
  Entry& entry = entries_[app_code];
  entry.loading = false;
  ++entry.attempts;
  entry.last_error = gifts.status();
  // A catalogue read across a Forget may predate the write: this caller uses it, the next reads
  // again. The bound runs from when the read began, not from when it ended.
  if (catalog != nullptr && entry.generation == generation) {
    entry.catalog = catalog;
    entry.read_at = started;
  }
  loaded_.SignalAll();
  if (!gifts.ok()) return gifts.status();
  return catalog;
}

void CatalogCache::Forget(const std::string& app_code) {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(app_code);
  if (it == entries_.end()) return;
  ++it->second.generation;
  it->second.catalog = nullptr;
  it->second.read_at = absl::InfinitePast();
}

int64_t CatalogCache::loads() const {
  absl::MutexLock lock(&mu_);
  return loads_;
}

int CatalogCache::waiting() const {
  absl::MutexLock lock(&mu_);
  return waiting_;
}

size_t CatalogCache::size() const {
  absl::MutexLock lock(&mu_);
  return entries_.size();
}

void CatalogCache::MakeRoom() {
  if (entries_.size() < kMaxCachedCatalogs) return;
  // The least recently read eighth of the apps not being read, so that the scan is paid once per
  // many new apps.
  std::vector<std::pair<absl::Time, const std::string*>> idle;
  idle.reserve(entries_.size());
  for (const auto& [app, entry] : entries_) {
    if (!entry.loading) idle.emplace_back(entry.read_at, &app);
  }
  const size_t evict = std::min(idle.size(), kMaxCachedCatalogs / 8);
  std::nth_element(idle.begin(), idle.begin() + static_cast<std::ptrdiff_t>(evict), idle.end());
  std::vector<std::string> gone;
  gone.reserve(evict);
  for (size_t i = 0; i < evict; ++i) gone.push_back(*idle[i].second);
  for (const std::string& app : gone) entries_.erase(app);
}

}  // namespace giftwall::reads
