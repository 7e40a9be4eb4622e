// A bounded pool of MySQL sessions, leased one at a time.
#ifndef GIFTWALL_SERVER_STORAGE_CONNECTION_POOL_H_
#define GIFTWALL_SERVER_STORAGE_CONNECTION_POOL_H_

#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/storage/mysql_url.h"
#include "server/storage/sql_connection.h"

namespace giftwall::storage {

struct PoolOptions {
  MysqlEndpoint endpoint;
  SessionOptions session;
  int max_size = 16;
  // How long Acquire waits for a free session before UNAVAILABLE.
  absl::Duration acquire_timeout = absl::Seconds(2);
  // A session idle for longer than this is pinged before it is handed out.
  absl::Duration validate_after_idle = absl::Seconds(5);
};

class ConnectionPool;

// A leased session: move-only; going out of scope returns it to the pool, or discards it if it
// saw a client-side error.
class PooledConnection {
 public:
  PooledConnection(PooledConnection&& other) noexcept
      : pool_(std::exchange(other.pool_, nullptr)), conn_(std::move(other.conn_)) {}
  PooledConnection& operator=(PooledConnection&& other) noexcept;
  PooledConnection(const PooledConnection&) = delete;
  PooledConnection& operator=(const PooledConnection&) = delete;
  ~PooledConnection() { Release(); }

  SqlConnection* operator->() const { return conn_.get(); }
  SqlConnection& operator*() const { return *conn_; }

 private:
  friend class ConnectionPool;
  PooledConnection(ConnectionPool* pool, std::unique_ptr<SqlConnection> conn)
      : pool_(pool), conn_(std::move(conn)) {}
  void Release();

  ConnectionPool* pool_;
  std::unique_ptr<SqlConnection> conn_;
};

struct PoolStats {
  int idle = 0;
  int leased = 0;
  int64_t discarded_total = 0;
  int64_t opened_total = 0;
  int64_t acquired_total = 0;
  absl::Duration acquire_wait_total;  // how long Acquire waited for a free session, in all
  int64_t exhausted_total = 0;        // Acquire calls that waited in vain (UNAVAILABLE)
};

// Where a repository gets its sessions: a pool, or a choice between pools (the wall reads'
// ReplicaRouter).
class SessionSource {
 public:
  virtual ~SessionSource() = default;
  virtual absl::StatusOr<PooledConnection> Acquire() = 0;
};

class ConnectionPool final : public SessionSource {
 public:
  explicit ConnectionPool(PoolOptions options);
  // Every lease must have been returned.
  ~ConnectionPool() override;
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;

  // A session, reused or newly opened. UNAVAILABLE when the database cannot be reached or no
  // session frees up within acquire_timeout.
  absl::StatusOr<PooledConnection> Acquire() override;

  PoolStats Stats() const ABSL_LOCKS_EXCLUDED(mu_);
  const PoolOptions& options() const { return options_; }

 private:
  friend class PooledConnection;
  void Return(std::unique_ptr<SqlConnection> conn) ABSL_LOCKS_EXCLUDED(mu_);

  const PoolOptions options_;
  mutable absl::Mutex mu_;
  // Most recently used last: reusing warm sessions lets cold ones age out.
  std::vector<std::unique_ptr<SqlConnection>> idle_ ABSL_GUARDED_BY(mu_);
  // Sessions that exist or are being opened: idle, leased, connecting.
  int open_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t discarded_total_ ABSL_GUARDED_BY(mu_) = 0;
  // Idle sessions last used before this are pinged before reuse.
  absl::Time suspect_before_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  int64_t opened_total_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t acquired_total_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Duration acquire_wait_total_ ABSL_GUARDED_BY(mu_);
  int64_t exhausted_total_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace giftwall::storage

#endif  // GIFTWALL_SERVER_STORAGE_CONNECTION_POOL_H_
