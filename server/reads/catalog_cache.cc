#include "server/reads/catalog_cache.h"

#include <utility>

namespace giftwall::reads {

CatalogCache::CatalogCache(LoadCatalogFn load, absl::Duration ttl, std::function<absl::Time()> now)
    : load_(std::move(load)), ttl_(ttl), now_(std::move(now)) {}

absl::StatusOr<std::shared_ptr<const domain::CatalogIndex>> CatalogCache::Get(
    const std::string& app_code) {
  int64_t generation = 0;
  {
    absl::MutexLock lock(&mu_);
    for (;;) {
      const absl::Time now = now_();
      auto it = entries_.find(app_code);
      if (it == entries_.end()) {
        MakeRoom(now);
        it = entries_.emplace(app_code, Entry()).first;
      }
      Entry& entry = it->second;
      if (entry.catalog != nullptr && now - entry.read_at < ttl_) return entry.catalog;
      if (!entry.loading) {
        entry.loading = true;
        generation = entry.generation;
        ++loads_;
        break;
      }
      // Another caller is reading it: take what that read gets.
      const int64_t attempt = entry.attempts;
      while (true) {
        loaded_.Wait(&mu_);
        it = entries_.find(app_code);
        if (it == entries_.end() || it->second.attempts != attempt) break;
      }
      if (it != entries_.end() && !it->second.last_error.ok()) return it->second.last_error;
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
  // again.
  if (catalog != nullptr && entry.generation == generation) {
    entry.catalog = catalog;
    entry.read_at = now_();
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
  it->second.read_at = absl::InfinitePast();
}

int64_t CatalogCache::loads() const {
  absl::MutexLock lock(&mu_);
  return loads_;
}

size_t CatalogCache::size() const {
  absl::MutexLock lock(&mu_);
  return entries_.size();
}

void CatalogCache::MakeRoom(absl::Time now) {
  if (entries_.size() < kMaxCachedCatalogs) return;
  // Expired first; if none is, any not being read.
  for (bool expired_only : {true, false}) {
    for (auto it = entries_.begin(); it != entries_.end();) {
      const Entry& entry = it->second;
      if (!entry.loading && (!expired_only || now - entry.read_at >= ttl_)) {
        entries_.erase(it++);
      } else {
        ++it;
      }
    }
    if (entries_.size() < kMaxCachedCatalogs) return;
  }
}

}  // namespace giftwall::reads
