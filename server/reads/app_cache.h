// What wall reads need of each app, read once per bound and shared, never per wall: the gift
// catalogue (CatalogCache), the senders who opted out (OptOutCache). A value changed through this
// server is read again at its next use (Forget); one changed through another server is seen here
// within the bound, plus one read (while one caller reads it again, the others keep using the
// value it replaces).
#ifndef GIFTWALL_SERVER_READS_APP_CACHE_H_
#define GIFTWALL_SERVER_READS_APP_CACHE_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace giftwall::reads {

// Apps a cache holds at most: an app code is the caller's text, so a caller naming ever new apps
// must not grow the server. Past it, the least recently read go.
inline constexpr size_t kMaxCachedApps = 1024;

template <typename T>
class AppCache {
 public:
  // Reads the app's value from the database (empty, not an error, for an app without one).
  using Load = std::function<absl::StatusOr<std::shared_ptr<const T>>(absl::string_view app_code)>;

  // `ttl` zero reads the value at every use.
  AppCache(
      Load load, absl::Duration ttl, std::function<absl::Time()> now = [] { return absl::Now(); })
      : load_(std::move(load)), ttl_(ttl), now_(std::move(now)) {}
  AppCache(const AppCache&) = delete;
  AppCache& operator=(const AppCache&) = delete;

  // The app's value, read at most `ttl` ago. Callers that find it expired together read it once:
  // one reads, the others use the value it replaces, or when there is none (the first read, or
  // after Forget), wait for that read and take what it got, its error included.
  absl::StatusOr<std::shared_ptr<const T>> Get(const std::string& app_code)
      ABSL_LOCKS_EXCLUDED(mu_) {
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
        if (entry.value != nullptr && now - entry.read_at < ttl_) return entry.value;
        if (!entry.loading) {
          entry.loading = true;
          generation = entry.generation;
          started = now;
          ++loads_;
          break;
        }
        // Another caller is reading it: meanwhile the value it replaces serves, if any (a write
        // through this server dropped it); otherwise wait for that read and take what it got.
        if (entry.value != nullptr) return entry.value;
        const int64_t attempt = entry.attempts;
        ++waiting_;
        do {
          loaded_.Wait(&mu_);
          it = entries_.find(app_code);
        } while (it != entries_.end() && it->second.attempts == attempt);
        --waiting_;
        if (it == entries_.end()) continue;
        if (!it->second.last_error.ok()) return it->second.last_error;
        if (it->second.value != nullptr) return it->second.value;
        // That read began before a write through this server: read again.
      }
    }
    absl::StatusOr<std::shared_ptr<const T>> value = load_(app_code);
    absl::MutexLock lock(&mu_);
    Entry& entry = entries_[app_code];
    entry.loading = false;
    ++entry.attempts;
    entry.last_error = value.status();
    // A value read across a Forget may predate the write: this caller uses it, the next reads
    // again. The bound runs from when the read began, not from when it ended.
    if (value.ok() && entry.generation == generation) {
      entry.value = *value;
      entry.read_at = started;
    }
    loaded_.SignalAll();
    return value;
  }

  // Makes the next Get of the app read it (after a write through this server).
  void Forget(const std::string& app_code) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(app_code);
    if (it == entries_.end()) return;
    ++it->second.generation;
    it->second.value = nullptr;
    it->second.read_at = absl::InfinitePast();
  }

  int64_t loads() const ABSL_LOCKS_EXCLUDED(mu_) {  // reads started
    absl::MutexLock lock(&mu_);
    return loads_;
  }
  size_t size() const ABSL_LOCKS_EXCLUDED(mu_) {  // apps held
    absl::MutexLock lock(&mu_);
    return entries_.size();
  }
  int waiting() const ABSL_LOCKS_EXCLUDED(mu_) {  // callers waiting for another's read
    absl::MutexLock lock(&mu_);
    return waiting_;
  }

 private:
  struct Entry {
    std::shared_ptr<const T> value;             // null until read, and after Forget
    absl::Time read_at = absl::InfinitePast();  // when the read of `value` began
    bool loading = false;
    int64_t attempts = 0;     // reads finished
    absl::Status last_error;  // of the last read
    int64_t generation = 0;   // a Forget during a read leaves that read's result stale
  };

  void MakeRoom() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (entries_.size() < kMaxCachedApps) return;
    // The least recently read eighth of the apps not being read, so that the scan is paid once
    // per many new apps.
    std::vector<std::pair<absl::Time, const std::string*>> idle;
    idle.reserve(entries_.size());
    for (const auto& [app, entry] : entries_) {
      if (!entry.loading) idle.emplace_back(entry.read_at, &app);
    }
    const size_t evict = std::min(idle.size(), kMaxCachedApps / 8);
    std::nth_element(idle.begin(), idle.begin() + static_cast<std::ptrdiff_t>(evict), idle.end());
    std::vector<std::string> gone;
    gone.reserve(evict);
    for (size_t i = 0; i < evict; ++i) gone.push_back(*idle[i].second);
    for (const std::string& app : gone) entries_.erase(app);
  }

  const Load load_;
  const absl::Duration ttl_;
  const std::function<absl::Time()> now_;
  mutable absl::Mutex mu_;
  absl::CondVar loaded_;  // a read finished
  absl::flat_hash_map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  int64_t loads_ ABSL_GUARDED_BY(mu_) = 0;
  int waiting_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace giftwall::reads

#endif  // GIFTWALL_SERVER_READS_APP_CACHE_H_
