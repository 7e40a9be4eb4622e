// Apps' gift catalogues as wall reads use them: each read once per --catalog_cache_ttl and
// shared, never per wall. A catalogue written through this server is read again at its next use;
// one written through another is seen here within the bound, plus one catalogue read (while one
// caller reads it again, the others keep using the one it replaces).
#ifndef GIFTWALL_SERVER_READS_CATALOG_CACHE_H_
#define GIFTWALL_SERVER_READS_CATALOG_CACHE_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "server/domain/gift_catalog.h"
#include "server/domain/wall_page.h"

namespace giftwall::reads {

// The whole catalogue of an app (empty without one): storage::CatalogRepository::List, or a
// test's.
using LoadCatalogFn =
    std::function<absl::StatusOr<std::vector<domain::CatalogGift>>(absl::string_view app_code)>;

// Apps whose catalogues the cache holds at most: an app code is the caller's text, so a caller
// naming ever new apps must not grow the server. Past it, the least recently read go.
inline constexpr size_t kMaxCachedCatalogs = 1024;

class CatalogCache {
 public:
  // `ttl` zero reads the catalogue at every use.
  CatalogCache(
      LoadCatalogFn load, absl::Duration ttl,
      std::function<absl::Time()> now = [] { return absl::Now(); });
  CatalogCache(const CatalogCache&) = delete;
  CatalogCache& operator=(const CatalogCache&) = delete;

  // The app's catalogue, read at most `ttl` ago. Callers that find it expired together read it
  // once: one reads, the others use the catalogue it replaces, or when there is none (the first
  // read, or after Forget), wait for that read and take what it got, its error included.
  absl::StatusOr<std::shared_ptr<const domain::CatalogIndex>> Get(const std::string& app_code)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Makes the next Get of the app read the catalogue (after a write through this server).
  void Forget(const std::string& app_code) ABSL_LOCKS_EXCLUDED(mu_);

  int64_t loads() const ABSL_LOCKS_EXCLUDED(mu_);  // catalogue reads started
  size_t size() const ABSL_LOCKS_EXCLUDED(mu_);    // apps held
  int waiting() const ABSL_LOCKS_EXCLUDED(mu_);    // callers waiting for another's read

 private:
  struct Entry {
    std::shared_ptr<const domain::CatalogIndex> catalog;  // null until read, and after Forget
    absl::Time read_at = absl::InfinitePast();            // when the read of `catalog` began
    bool loading = false;
    int64_t attempts = 0;     // reads finished
    absl::Status last_error;  // of the last read
    int64_t generation = 0;   // a Forget during a read leaves that read's result stale
  };

  void MakeRoom() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const LoadCatalogFn load_;
  const absl::Duration ttl_;
  const std::function<absl::Time()> now_;
  mutable absl::Mutex mu_;
  absl::CondVar loaded_;  // a read finished
  absl::flat_hash_map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  int64_t loads_ ABSL_GUARDED_BY(mu_) = 0;
  int waiting_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace giftwall::reads

#endif  // GIFTWALL_SERVER_READS_CATALOG_CACHE_H_
