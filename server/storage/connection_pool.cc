#include "server/storage/connection_pool.h"

#include "absl/strings/str_format.h"
#include "glog/logging.h"

namespace giftwall::storage {

PooledConnection& PooledConnection::operator=(PooledConnection&& other) noexcept {
  if (this != &other) {
    Release();
    pool_ = std::exchange(other.pool_, nullptr);
    conn_ = std::move(other.conn_);
  }
  return *this;
}

void PooledConnection::Release() {
  if (pool_ != nullptr && conn_ != nullptr) pool_->Return(std::move(conn_));
  pool_ = nullptr;
}

ConnectionPool::ConnectionPool(PoolOptions options) : options_(std::move(options)) {
  CHECK_GT(options_.max_size, 0) << "pool size must be positive";
}

ConnectionPool::~ConnectionPool() {
  absl::MutexLock lock(&mu_);
  CHECK_EQ(open_, static_cast<int>(idle_.size())) << "a pooled connection outlived its pool";
}

absl::StatusOr<PooledConnection> ConnectionPool::Acquire() {
  const absl::Time deadline = absl::Now() + options_.acquire_timeout;
  for (;;) {
    std::unique_ptr<SqlConnection> conn;
    absl::Time suspect_before;
    {
      absl::MutexLock lock(&mu_);
      auto can_proceed = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return !idle_.empty() || open_ < options_.max_size;
      };
      const absl::Time wait_from = absl::Now();
      const bool got = mu_.AwaitWithDeadline(absl::Condition(&can_proceed), deadline);
      acquire_wait_total_ += absl::Now() - wait_from;
      if (!got) {
        ++exhausted_total_;
        return absl::UnavailableError(
            absl::StrFormat("database connection pool exhausted: all %d sessions busy for %s",
                            options_.max_size, absl::FormatDuration(options_.acquire_timeout)));
      }
      suspect_before = suspect_before_;
      ++acquired_total_;
      if (!idle_.empty()) {
        conn = std::move(idle_.back());
        idle_.pop_back();
      } else {
        ++open_;  // reserve the slot before connecting outside the lock
      }
    }
    if (conn != nullptr) {
      const bool fresh = absl::Now() - conn->last_used() < options_.validate_after_idle &&
                         conn->last_used() > suspect_before;
      if (fresh || conn->Ping()) {
        return PooledConnection(this, std::move(conn));
      }
      LOG(WARNING) << "discarding a pooled database session that no longer answers";
      Return(std::move(conn));  // broken: Return discards it and frees the slot
      continue;
    }
    absl::StatusOr<std::unique_ptr<SqlConnection>> opened =
        SqlConnection::Open(options_.endpoint, options_.session);
    absl::MutexLock lock(&mu_);
    if (!opened.ok()) {
      --open_;
      return opened.status();
    }
    ++opened_total_;
    return PooledConnection(this, *std::move(opened));
  }
}

void ConnectionPool::Return(std::unique_ptr<SqlConnection> conn) {
  if (conn->broken()) {
    conn.reset();  // closing may block on the network: not under the lock
    absl::MutexLock lock(&mu_);
    --open_;
    ++discarded_total_;
    // One dead session usually means the server restarted or the network broke: check every
    // idle session before its next use instead of failing one call per session.
    suspect_before_ = absl::Now();
    return;
  }
  absl::MutexLock lock(&mu_);
  idle_.push_back(std::move(conn));
}

PoolStats ConnectionPool::Stats() const {
  absl::MutexLock lock(&mu_);
  return PoolStats{static_cast<int>(idle_.size()),
                   open_ - static_cast<int>(idle_.size()),
                   discarded_total_,
                   opened_total_,
                   acquired_total_,
                   acquire_wait_total_,
                   exhausted_total_};
}

}  // namespace giftwall::storage
