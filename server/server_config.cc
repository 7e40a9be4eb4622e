#include "server/server_config.h"

#include <unistd.h>

#include <optional>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "server/common/status_macros.h"
#include "server/domain/app_code.h"
#include "server/domain/period.h"
#include "server/env_flags.h"
#include "server/storage/mysql_url.h"
#include "server/transport/gift_wall_service.h"

ABSL_FLAG(std::string, listen, "0.0.0.0:50051", "host:port to serve gRPC on");
ABSL_FLAG(std::string, mysql_url, "",
          "the database: mysql://user[:password]@host:port/database (required)");
ABSL_FLAG(std::string, mysql_password_file, "",
          "a file holding the database password (overrides a password in --mysql_url)");
ABSL_FLAG(std::string, mysql_read_url, "",
          "where the wall reads (GetGiftWall, ListGiftWallSenders, ListSponsorHistory, "
          "GetSenderStanding) go: a replica, mysql://user[:password]@host:port/database (without a "
          "password, --mysql_password_file's); empty: --mysql_url");
ABSL_FLAG(int, db_read_pool_size, 8,
          "most sessions this process opens to --mysql_read_url (when it is set)");
ABSL_FLAG(absl::Duration, read_replica_max_lag, absl::Seconds(30),
          "a read replica that trails the primary by more than this (its copy of the primary's "
          "heartbeat row) is not read");
ABSL_FLAG(std::string, read_replica_fallback, "primary",
          "while the read replica is not usable (unreachable, its schema behind, lagging): "
          "'primary' reads from the primary, 'unavailable' answers UNAVAILABLE");
ABSL_FLAG(std::string, worker_id, "",
          "this replica's name in logs and in the lease rows it holds; default: the host name");
ABSL_FLAG(absl::Duration, lease_duration, absl::Seconds(30),
          "how long this replica's leases (scanning an app, rebuilding one) last unless renewed "
          "(every third of it): a replica that dies gives its work up within this; far above the "
          "clock skew between database nodes");
ABSL_FLAG(int, db_pool_size, 16,
          "most database sessions this process opens to serve calls (projections, wall reads)");
ABSL_FLAG(int, db_background_pool_size, 6,
          "most database sessions this process opens for admin calls and background work (the "
          "catch-up scan, verifies, rebuilds): apart from --db_pool_size's");
ABSL_FLAG(absl::Duration, db_acquire_timeout, absl::Seconds(2),
          "how long a call waits for a free database session before UNAVAILABLE");
ABSL_FLAG(absl::Duration, db_connect_timeout, absl::Seconds(3), "database connect timeout");
ABSL_FLAG(absl::Duration, db_statement_timeout, absl::Seconds(10),
          "longest a database statement may run");
ABSL_FLAG(absl::Duration, lock_wait_timeout, absl::Seconds(1),
          "how long a statement waits for a row lock; a delivery that waits this long for an "
          "event another caller holds answers LEASED");
ABSL_FLAG(std::string, sql_rows, "auto",
          "how statements read their sets of rows (a group's events, a batch's walls): "
          "json_table (one JSON parameter), values (one placeholder per value, for servers and "
          "proxies without JSON_TABLE), or auto (json_table where each session's server has it)");
ABSL_FLAG(int, workers, 16, "threads that run database work for calls");
ABSL_FLAG(int, queue_capacity, 2000,
          "calls that may wait for a worker; beyond this, calls answer RESOURCE_EXHAUSTED");
ABSL_FLAG(int, max_retries, 10, "failures after which an event goes dead");
ABSL_FLAG(int, max_concurrent_rebuilds, giftwall::worker::kDefaultMaxConcurrentRebuilds,
          "RebuildGiftWall streams of different apps running at once in this server; past it "
          "RESOURCE_EXHAUSTED (the background pool is sized for it)");
ABSL_FLAG(int64_t, grpc_memory_limit_mb, 0,
          "memory gRPC's transport may hold for all calls at once (their requests as they "
          "arrive), in MiB; 0: room for a legal batch per projection lane, plus one");
ABSL_FLAG(int64_t, max_wall_gifts, giftwall::domain::kDefaultMaxWallGifts,
          "distinct gifts one wall holds at most; an event of a gift new to a full wall goes dead");
ABSL_FLAG(std::string, period_retention, "month=12,week=26,day=31",
          "past periods of each kind whose walls are kept, besides the current one (DESIGN "
          "§2.15): older periods are neither written nor kept");
ABSL_FLAG(bool, group_commit, true,
          "gather concurrent ProjectMessage/ProjectMessages calls into one transaction; false: "
          "one transaction per call");
ABSL_FLAG(int, group_max_events, 500, "most events in one group commit");
ABSL_FLAG(std::string, group_by, "none",
          "app_code: every projection transaction stays inside one app (a group takes one app's "
          "events, a ProjectMessages batch of several apps commits per app), for a database "
          "sharded by app_code; none: a group gathers any apps' events");
ABSL_FLAG(int, read_lanes, 2,
          "GetGiftWall reads in flight at once (each reads the walls of the calls waiting, in one "
          "statement)");
ABSL_FLAG(absl::Duration, catalog_cache_ttl, absl::Seconds(5),
          "how long a server uses an app's gift catalogue before reading it again: a catalogue "
          "write is seen by every server within this; 0 reads it for every group of wall reads");
ABSL_FLAG(absl::Duration, opt_out_cache_ttl, absl::Seconds(5),
          "how long a server uses an app's senders who opted out (SetSenderPrivacy) before reading "
          "them again: an opt-out through another server masks its sender here within this; 0 "
          "reads them for every group of wall reads");
ABSL_FLAG(int, projection_lanes, 4,
          "group commits in flight at once (each holds a database session while it runs)");
ABSL_FLAG(absl::Duration, drain_delay, absl::ZeroDuration(),
          "on SIGTERM, how long to keep serving after readiness turns NOT_SERVING");
ABSL_FLAG(absl::Duration, shutdown_grace, absl::Seconds(15),
          "on SIGTERM, how long in-flight and queued calls may take to finish");
ABSL_FLAG(absl::Duration, catchup_interval, absl::Seconds(2),
          "how often the background catch-up scan runs; 0 turns it off");
ABSL_FLAG(std::string, catchup_app_codes, "",
          "comma-separated app codes to scan; empty: every app code in the outbox");
ABSL_FLAG(absl::Duration, catchup_min_age, absl::Seconds(10),
          "outbox events younger than this are left to the relay");
ABSL_FLAG(absl::Duration, catchup_safety_margin, absl::Minutes(5),
          "how far behind what it has read the scan's horizon trails (created_at is not commit "
          "order)");
ABSL_FLAG(absl::Duration, catchup_full_sweep, absl::Hours(1),
          "how often the scan reads the whole outbox instead of starting at its horizon");
ABSL_FLAG(int, catchup_batch, 100, "events per catch-up pass, 1..100");
ABSL_FLAG(absl::Duration, keepalive_time, absl::Seconds(30),
          "ping a connection idle this long, to find dead peers (clients may ping every 10s)");
ABSL_FLAG(absl::Duration, keepalive_timeout, absl::Seconds(10),
          "close a connection whose ping is not answered within this");
ABSL_FLAG(absl::Duration, max_connection_age, absl::Minutes(5),
          "end each connection after this (GOAWAY), so that long-lived clients such as the relay "
          "reconnect and spread over replicas added since; 0: never");
ABSL_FLAG(absl::Duration, max_connection_age_grace, absl::Seconds(30),
          "how long calls in flight on a connection past its age may take to finish");
ABSL_FLAG(std::string, metrics_listen, "",
          "host:port to serve Prometheus metrics on (/metrics); empty: no metrics");
ABSL_FLAG(absl::Duration, catchup_status_every, absl::Seconds(30),
          "how often the replica that scans an app measures its lag and dead events (SQL) for "
          "the metrics");
ABSL_FLAG(std::string, tls_cert_file, "",
          "the server's TLS certificate chain (PEM), watched for renewals; required unless "
          "--plaintext");
ABSL_FLAG(std::string, tls_key_file, "", "the private key of --tls_cert_file (PEM)");
ABSL_FLAG(std::string, tls_client_ca_file, "",
          "CAs (PEM) that sign callers' certificates: mutual TLS; empty: no client certificates");
ABSL_FLAG(std::string, tls_client_auth, "require",
          "with --tls_client_ca_file: require a client certificate (require), or verify one only "
          "when presented (optional)");
ABSL_FLAG(absl::Duration, tls_refresh_interval, absl::Minutes(1),
          "how often the TLS files are read again (renewed certificates need no restart)");
ABSL_FLAG(bool, plaintext, false,
          "serve gRPC without TLS: local runs and tests only (conflicts with the --tls_* flags)");
ABSL_FLAG(std::string, health_listen, "",
          "host:port serving only grpc.health.v1.Health, in plaintext: for probes that cannot "
          "speak TLS (Kubernetes' gRPC probes); empty: none");
ABSL_FLAG(std::string, access_policy_file, "",
          "who may call what (giftwall.config.v1.AccessPolicy as JSON), read again when it "
          "changes; empty: every caller may call every method");
ABSL_FLAG(absl::Duration, access_policy_refresh, absl::Seconds(5),
          "how often --access_policy_file is checked for changes");
ABSL_FLAG(std::string, payload_source, "message",
          "what ProjectMessage(s) project: the message's payload (message), or, where the "
          "service shares the database with the wallet's outbox, the outbox row of the "
          "message's (app_code, event_id), refusing a message that says otherwise (outbox)");
ABSL_FLAG(bool, enable_reflection, true,
          "serve gRPC server reflection (grpcurl list/describe), open to every caller like "
          "health; false hides the API's shape");
ABSL_FLAG(bool, enable_admin, false,
          "serve giftwall.v1.ProjectionAdminService (requeue, verify, rebuild, ...)");

namespace giftwall {
namespace {

absl::Status Invalid(absl::string_view flag, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", why));
}

absl::Status CheckListen(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  int port = 0;
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(listen.substr(colon + 1), &port) || port < 0 || port > 65535) {
    return Invalid("listen", absl::StrCat("\"", listen, "\" is not host:port"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadSecret(const std::string& path) {
  absl::StatusOr<std::string> contents = ReadFlagFile("mysql_password_file", path);
  if (!contents.ok()) return contents.status();
  // Files written by editors and secret mounts often end in a newline that is not the secret's.
  return std::string(absl::StripTrailingAsciiWhitespace(*contents));
}

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "giftwall";
  return name;
}

absl::Status Positive(absl::string_view flag, int64_t value) {
  if (value > 0) return absl::OkStatus();
  return Invalid(flag, absl::StrCat("must be > 0, got ", value));
}

absl::Status PositiveDuration(absl::string_view flag, absl::Duration value) {
  if (value > absl::ZeroDuration()) return absl::OkStatus();
  return Invalid(flag, absl::StrCat("must be > 0, got ", absl::FormatDuration(value)));
}

// What keeps callers honest: --plaintext or the --tls_* flags (their files readable),
// --health_listen, --payload_source and the access policy's flags.
absl::Status ReadSecurity(ServerConfig& config) {
  config.plaintext = absl::GetFlag(FLAGS_plaintext);
  transport::TlsOptions tls;
  tls.cert_file = absl::GetFlag(FLAGS_tls_cert_file);
  tls.key_file = absl::GetFlag(FLAGS_tls_key_file);
  tls.client_ca_file = absl::GetFlag(FLAGS_tls_client_ca_file);
  tls.refresh_interval = absl::GetFlag(FLAGS_tls_refresh_interval);
  const std::string client_auth = absl::GetFlag(FLAGS_tls_client_auth);
  if (client_auth != "require" && client_auth != "optional") {
    return Invalid("tls_client_auth",
                   absl::StrCat("must be require or optional, got \"", client_auth, "\""));
  }
  tls.require_client_cert = client_auth == "require";
  const bool any_tls =
      !tls.cert_file.empty() || !tls.key_file.empty() || !tls.client_ca_file.empty();
  if (config.plaintext && any_tls) {
    return Invalid("plaintext",
                   "conflicts with --tls_cert_file, --tls_key_file and --tls_client_ca_file");
  }
  if (any_tls) {
    if (tls.cert_file.empty())
      return Invalid("tls_cert_file", "is required with the other --tls_* flags");
    if (tls.key_file.empty()) return Invalid("tls_key_file", "is required with --tls_cert_file");
    if (absl::Status s = PositiveDuration("tls_refresh_interval", tls.refresh_interval); !s.ok()) {
      return s;
    }
    if (absl::Status s = transport::CheckTlsFiles(tls); !s.ok()) return s;
    config.tls = std::move(tls);
  }
  const std::string payload_source = absl::GetFlag(FLAGS_payload_source);
  if (payload_source != "message" && payload_source != "outbox") {
    return Invalid("payload_source",
                   absl::StrCat("must be message or outbox, got \"", payload_source, "\""));
  }
  config.payload_from_outbox = payload_source == "outbox";
  config.access_policy_file = absl::GetFlag(FLAGS_access_policy_file);
  config.access_policy_refresh = absl::GetFlag(FLAGS_access_policy_refresh);
  if (absl::Status s = PositiveDuration("access_policy_refresh", config.access_policy_refresh);
      !s.ok()) {
    return s;
  }
  config.health_listen = absl::GetFlag(FLAGS_health_listen);
  if (!config.health_listen.empty()) {
    if (absl::Status s = CheckListen(config.health_listen); !s.ok()) {
      return Invalid("health_listen",
                     absl::StrCat("\"", config.health_listen, "\" is not host:port"));
    }
  }
  return absl::OkStatus();
}

// The database: where it is, the serving pool, its sessions' bounds, and the read replica.
absl::Status ReadDatabase(ServerConfig& config) {
  const std::string url = absl::GetFlag(FLAGS_mysql_url);
  if (url.empty()) return Invalid("mysql_url", "is required (or set GIFTWALL_MYSQL_URL)");
  absl::StatusOr<storage::MysqlEndpoint> endpoint = storage::ParseMysqlUrl(url);
  if (!endpoint.ok()) return Invalid("mysql_url", endpoint.status().message());
  config.pool.endpoint = *std::move(endpoint);
  if (const std::string file = absl::GetFlag(FLAGS_mysql_password_file); !file.empty()) {
    absl::StatusOr<std::string> password = ReadSecret(file);
    if (!password.ok()) return password.status();
    config.pool.endpoint.password = *std::move(password);
    config.mysql_password_file = file;
  }

  config.pool.max_size = absl::GetFlag(FLAGS_db_pool_size);
  config.pool.acquire_timeout = absl::GetFlag(FLAGS_db_acquire_timeout);
  config.pool.session.connect_timeout = absl::GetFlag(FLAGS_db_connect_timeout);
  config.pool.session.statement_timeout = absl::GetFlag(FLAGS_db_statement_timeout);
  config.pool.session.lock_wait_timeout = absl::GetFlag(FLAGS_lock_wait_timeout);
  if (const std::string rows = absl::GetFlag(FLAGS_sql_rows);
      !storage::ParseRowsPath(rows, &config.pool.session.rows_path)) {
    return Invalid("sql_rows",
                   absl::StrCat("must be auto, json_table or values, got \"", rows, "\""));
  }
  // The socket outwaits the server's own statement limit by a second, so that the server's error
  // (not a cut connection) reports a slow statement, and no longer: a database that stopped
  // answering fails calls as soon as their statements would have been stopped anyway.
  config.pool.session.read_timeout = config.pool.session.statement_timeout + absl::Seconds(1);
  config.pool.session.write_timeout = config.pool.session.read_timeout;
  for (absl::Status s :
       {Positive("db_pool_size", config.pool.max_size),
        PositiveDuration("db_acquire_timeout", config.pool.acquire_timeout),
        PositiveDuration("db_connect_timeout", config.pool.session.connect_timeout),
        PositiveDuration("db_statement_timeout", config.pool.session.statement_timeout),
        PositiveDuration("lock_wait_timeout", config.pool.session.lock_wait_timeout)}) {
    if (!s.ok()) return s;
  }
  if (config.pool.session.lock_wait_timeout >= config.pool.session.statement_timeout) {
    // A lock wait must end as a lock wait (contention, retried), not as a statement timeout
    // (a failure, counted against the event).
    return Invalid("lock_wait_timeout", "must be shorter than --db_statement_timeout");
  }

  if (const std::string read_url = absl::GetFlag(FLAGS_mysql_read_url); !read_url.empty()) {
    absl::StatusOr<storage::MysqlEndpoint> read_endpoint = storage::ParseMysqlUrl(read_url);
    if (!read_endpoint.ok()) return Invalid("mysql_read_url", read_endpoint.status().message());
    if (read_endpoint->password.empty()) read_endpoint->password = config.pool.endpoint.password;
    storage::PoolOptions& read_pool = config.read_pool.emplace(config.pool);
    read_pool.endpoint = *std::move(read_endpoint);
    read_pool.max_size = absl::GetFlag(FLAGS_db_read_pool_size);
    if (absl::Status s = Positive("db_read_pool_size", read_pool.max_size); !s.ok()) return s;
    config.replica.max_lag = absl::GetFlag(FLAGS_read_replica_max_lag);
    if (absl::Status s = PositiveDuration("read_replica_max_lag", config.replica.max_lag);
        !s.ok()) {
      return s;
    }
    const std::string fallback = absl::GetFlag(FLAGS_read_replica_fallback);
    if (fallback != "primary" && fallback != "unavailable") {
      return Invalid("read_replica_fallback",
                     absl::StrCat("must be primary or unavailable, got \"", fallback, "\""));
    }
    config.replica.fall_back_to_primary = fallback == "primary";
  }
  return absl::OkStatus();
}

// This replica's name, the projection and read lanes, the queues, the retries, shutdown.
absl::Status ReadProcessing(ServerConfig& config) {
  config.worker_id = std::string(absl::StripAsciiWhitespace(absl::GetFlag(FLAGS_worker_id)));
  if (config.worker_id.empty()) config.worker_id = HostName();
  if (config.worker_id.size() > 128) return Invalid("worker_id", "at most 128 bytes");
  config.lease_duration = absl::GetFlag(FLAGS_lease_duration);
  if (config.lease_duration < absl::Seconds(1)) {
    return Invalid("lease_duration", "must be at least 1s");
  }
  config.retry.max_retries = absl::GetFlag(FLAGS_max_retries);
  config.max_wall_gifts = absl::GetFlag(FLAGS_max_wall_gifts);
  absl::StatusOr<domain::PeriodRetention> retention =
      domain::ParsePeriodRetention(absl::GetFlag(FLAGS_period_retention));
  if (!retention.ok()) return Invalid("period_retention", retention.status().message());
  config.period_retention = *std::move(retention);
  config.worker_threads = absl::GetFlag(FLAGS_workers);
  config.queue_capacity = absl::GetFlag(FLAGS_queue_capacity);
  config.engine.group_commit = absl::GetFlag(FLAGS_group_commit);
  config.engine.max_group_events = absl::GetFlag(FLAGS_group_max_events);
  config.engine.lanes = absl::GetFlag(FLAGS_projection_lanes);
  if (const std::string group_by = absl::GetFlag(FLAGS_group_by);
      group_by == "app_code" || group_by == "none") {
    config.engine.group_by_app = group_by == "app_code";
  } else {
    return Invalid("group_by", absl::StrCat("must be none or app_code, got \"", group_by, "\""));
  }
  config.engine.queue_capacity = config.queue_capacity;
  config.reads.lanes = absl::GetFlag(FLAGS_read_lanes);
  config.reads.queue_capacity = config.queue_capacity;
  config.catalog_cache_ttl = absl::GetFlag(FLAGS_catalog_cache_ttl);
  config.opt_out_cache_ttl = absl::GetFlag(FLAGS_opt_out_cache_ttl);
  config.drain_delay = absl::GetFlag(FLAGS_drain_delay);
  config.shutdown_grace = absl::GetFlag(FLAGS_shutdown_grace);
  for (absl::Status s : {Positive("max_retries", config.retry.max_retries),
                         Positive("max_wall_gifts", config.max_wall_gifts),
                         Positive("workers", config.worker_threads),
                         Positive("group_max_events", config.engine.max_group_events),
                         Positive("projection_lanes", config.engine.lanes),
                         Positive("read_lanes", config.reads.lanes),
                         Positive("queue_capacity", config.queue_capacity)}) {
    if (!s.ok()) return s;
  }
  if (config.drain_delay < absl::ZeroDuration()) return Invalid("drain_delay", "must be >= 0");
  if (config.catalog_cache_ttl < absl::ZeroDuration()) {
    return Invalid("catalog_cache_ttl", "must be >= 0");
  }
  if (config.opt_out_cache_ttl < absl::ZeroDuration()) {
    return Invalid("opt_out_cache_ttl", "must be >= 0");
  }
  if (config.shutdown_grace < absl::ZeroDuration()) {
    return Invalid("shutdown_grace", "must be >= 0");
  }
  return absl::OkStatus();
}

// What the gRPC server may hold, and the sessions the lanes take from the pools.
absl::Status ReadMemoryAndLanes(ServerConfig& config) {
  // A legal batch per lane that projects, and one more being read.
  const int64_t batch_mib = (int64_t{transport::kMaxReceiveMessageBytes} >> 20) + 1;
  const int64_t memory_mib = absl::GetFlag(FLAGS_grpc_memory_limit_mb);
  if (memory_mib < 0 || (memory_mib > 0 && memory_mib < batch_mib)) {
    return Invalid("grpc_memory_limit_mb",
                   absl::StrCat("must be 0 (the default) or at least ", batch_mib,
                                " (one legal batch), got ", memory_mib));
  }
  config.grpc_memory_bytes = (memory_mib > 0 ? memory_mib : batch_mib * (config.engine.lanes + 1))
                             << 20;
  // Each lane holds a session while it runs, and other work needs some too.
  if (!config.read_pool.has_value()) {
    if (config.engine.lanes + config.reads.lanes >= config.pool.max_size) {
      return Invalid("projection_lanes",
                     absl::StrCat("with --read_lanes, must stay below --db_pool_size (",
                                  config.pool.max_size, ")"));
    }
  } else if (config.engine.lanes >= config.pool.max_size) {
    return Invalid("projection_lanes",
                   absl::StrCat("must stay below --db_pool_size (", config.pool.max_size, ")"));
  } else if (config.reads.lanes >= config.read_pool->max_size) {
    return Invalid("read_lanes", absl::StrCat("must stay below --db_read_pool_size (",
                                              config.read_pool->max_size, ")"));
  }
  return absl::OkStatus();
}

// The background pool and what runs on it: the catch-up scan, admin calls, rebuilds.
absl::Status ReadBackground(ServerConfig& config) {
  // The background pool serves the admin threads (each a session; a rebuild two, one for its
  // lock) and the scan (one at a time).
  config.background_pool = config.pool;
  config.background_pool.max_size = absl::GetFlag(FLAGS_db_background_pool_size);
  if (absl::Status s = Positive("db_background_pool_size", config.background_pool.max_size);
      !s.ok()) {
    return s;
  }

  worker::CatchUpOptions& catch_up = config.catch_up;
  catch_up.interval = absl::GetFlag(FLAGS_catchup_interval);
  catch_up.min_age = absl::GetFlag(FLAGS_catchup_min_age);
  catch_up.safety_margin = absl::GetFlag(FLAGS_catchup_safety_margin);
  catch_up.full_sweep_every = absl::GetFlag(FLAGS_catchup_full_sweep);
  catch_up.batch = absl::GetFlag(FLAGS_catchup_batch);
  if (catch_up.interval < absl::ZeroDuration()) {
    return Invalid("catchup_interval", "must be >= 0 (0 turns the scan off)");
  }
  if (catch_up.min_age < absl::ZeroDuration()) return Invalid("catchup_min_age", "must be >= 0");
  if (catch_up.safety_margin < absl::ZeroDuration()) {
    return Invalid("catchup_safety_margin", "must be >= 0");
  }
  if (absl::Status s = PositiveDuration("catchup_full_sweep", catch_up.full_sweep_every); !s.ok()) {
    return s;
  }
  if (catch_up.batch < 1 || catch_up.batch > 100) {
    return Invalid("catchup_batch", absl::StrCat("must be in 1..100, got ", catch_up.batch));
  }
  for (absl::string_view code :
       absl::StrSplit(absl::GetFlag(FLAGS_catchup_app_codes), ',', absl::SkipWhitespace())) {
    absl::StatusOr<std::string> normalized = domain::NormalizeAppCode(code);
    if (!normalized.ok()) return Invalid("catchup_app_codes", normalized.status().message());
    catch_up.app_codes.push_back(*std::move(normalized));
  }
  catch_up.status_every = absl::GetFlag(FLAGS_catchup_status_every);
  if (absl::Status s = PositiveDuration("catchup_status_every", catch_up.status_every); !s.ok()) {
    return s;
  }
  config.enable_admin = absl::GetFlag(FLAGS_enable_admin);
  config.max_concurrent_rebuilds = absl::GetFlag(FLAGS_max_concurrent_rebuilds);
  if (absl::Status s = Positive("max_concurrent_rebuilds", config.max_concurrent_rebuilds);
      !s.ok()) {
    return s;
  }
  const int background_sessions = BackgroundSessionsNeeded(config);
  if (config.background_pool.max_size < background_sessions) {
    return Invalid("db_background_pool_size",
                   absl::StrCat("must be at least ", background_sessions, ", got ",
                                config.background_pool.max_size,
                                ": a session per admin thread, one for each rebuild "
                                "(--max_concurrent_rebuilds), "
                                "one for the scan's reads, one for the lane that projects, "
                                "one for the heartbeat"));
  }
  return absl::OkStatus();
}

// What else is served: reflection, metrics; and how connections are kept and aged.
absl::Status ReadEndpoints(ServerConfig& config) {
  config.enable_reflection = absl::GetFlag(FLAGS_enable_reflection);
  config.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  if (!config.metrics_listen.empty()) {
    if (absl::Status s = CheckListen(config.metrics_listen); !s.ok()) {
      return Invalid("metrics_listen",
                     absl::StrCat("\"", config.metrics_listen, "\" is not host:port"));
    }
  }
  config.keepalive_time = absl::GetFlag(FLAGS_keepalive_time);
  config.keepalive_timeout = absl::GetFlag(FLAGS_keepalive_timeout);
  config.max_connection_age = absl::GetFlag(FLAGS_max_connection_age);
  config.max_connection_age_grace = absl::GetFlag(FLAGS_max_connection_age_grace);
  for (absl::Status s :
       {PositiveDuration("keepalive_time", config.keepalive_time),
        PositiveDuration("keepalive_timeout", config.keepalive_timeout),
        PositiveDuration("max_connection_age_grace", config.max_connection_age_grace)}) {
    if (!s.ok()) return s;
  }
  if (config.max_connection_age < absl::ZeroDuration()) {
    return Invalid("max_connection_age", "must be >= 0 (0: never)");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ServerConfig> ServerConfigFromFlags() {
  ServerConfig config;
  config.listen = absl::GetFlag(FLAGS_listen);
  RETURN_IF_ERROR(CheckListen(config.listen));
  for (auto* section : {ReadDatabase, ReadProcessing, ReadMemoryAndLanes, ReadBackground,
                        ReadEndpoints, ReadSecurity}) {
    RETURN_IF_ERROR(section(config));
  }
  return config;
}

absl::Status CheckCanServe(const ServerConfig& config) {
  if (!config.plaintext && !config.tls.has_value()) {
    return Invalid("tls_cert_file",
                   "is required to serve: TLS with --tls_cert_file and --tls_key_file, or "
                   "plaintext with --plaintext (local runs and tests only)");
  }
  return domain::CheckZoneDatabase();
}

int BackgroundSessionsNeeded(const ServerConfig& config) {
  const bool scan = config.catch_up.interval > absl::ZeroDuration();
  const int admin = config.enable_admin ? kAdminThreads + config.max_concurrent_rebuilds : 0;
  const int scan_reads = scan ? 1 : 0;
  const int projection_lanes = config.enable_admin || scan ? kBackgroundProjectionLanes : 0;
  const int heartbeat = 1;
  return admin + scan_reads + projection_lanes + heartbeat;
}

namespace {

std::string Duration(absl::Duration d) { return absl::FormatDuration(d); }
std::string OnOff(bool on) { return on ? "true" : "false"; }
std::string OrNone(const std::string& value, absl::string_view none = "(none)") {
  return value.empty() ? std::string(none) : value;
}

// Every setting by the name of the flag it comes from.
std::vector<std::pair<absl::string_view, std::string>> Settings(const ServerConfig& c) {
  const std::optional<transport::TlsOptions>& tls = c.tls;
  const worker::CatchUpOptions& scan = c.catch_up;
  return {
      {"listen", c.listen},
      {"plaintext", OnOff(c.plaintext)},
      {"tls_cert_file", tls ? tls->cert_file : "(none)"},
      {"tls_key_file", tls ? tls->key_file : "(none)"},
      {"tls_client_ca_file", tls ? OrNone(tls->client_ca_file) : "(none)"},
      {"tls_client_auth", tls ? (tls->require_client_cert ? "require" : "optional") : "(none)"},
      {"tls_refresh_interval", tls ? Duration(tls->refresh_interval) : "(none)"},
      {"health_listen", OrNone(c.health_listen)},
      {"metrics_listen", OrNone(c.metrics_listen)},
      {"access_policy_file",
       OrNone(c.access_policy_file, "(none: every caller may call everything)")},
      {"access_policy_refresh", Duration(c.access_policy_refresh)},
      {"payload_source", c.payload_from_outbox ? "outbox" : "message"},
      {"enable_admin", OnOff(c.enable_admin)},
      {"enable_reflection", OnOff(c.enable_reflection)},
      {"mysql_url", c.pool.endpoint.Describe()},
      {"mysql_password_file", OrNone(c.mysql_password_file)},
      {"mysql_read_url", c.read_pool ? c.read_pool->endpoint.Describe() : "(none: --mysql_url)"},
      {"db_read_pool_size", c.read_pool ? absl::StrCat(c.read_pool->max_size) : "(none)"},
      {"read_replica_max_lag", Duration(c.replica.max_lag)},
      {"read_replica_fallback", c.replica.fall_back_to_primary ? "primary" : "unavailable"},
      {"db_pool_size", absl::StrCat(c.pool.max_size)},
      {"db_background_pool_size", absl::StrCat(c.background_pool.max_size)},
      {"db_acquire_timeout", Duration(c.pool.acquire_timeout)},
      {"db_connect_timeout", Duration(c.pool.session.connect_timeout)},
      {"db_statement_timeout", Duration(c.pool.session.statement_timeout)},
      {"lock_wait_timeout", Duration(c.pool.session.lock_wait_timeout)},
      {"sql_rows", std::string(storage::RowsPathName(c.pool.session.rows_path))},
      {"worker_id", c.worker_id},
      {"lease_duration", Duration(c.lease_duration)},
      {"workers", absl::StrCat(c.worker_threads)},
      {"queue_capacity", absl::StrCat(c.queue_capacity)},
      {"max_retries", absl::StrCat(c.retry.max_retries)},
      {"max_wall_gifts", absl::StrCat(c.max_wall_gifts)},
      {"period_retention", domain::PeriodRetentionText(c.period_retention)},
      {"max_concurrent_rebuilds", absl::StrCat(c.max_concurrent_rebuilds)},
      {"grpc_memory_limit_mb", absl::StrCat(c.grpc_memory_bytes >> 20)},
      {"group_commit", OnOff(c.engine.group_commit)},
      {"group_max_events", absl::StrCat(c.engine.max_group_events)},
      {"group_by", c.engine.group_by_app ? "app_code" : "none"},
      {"projection_lanes", absl::StrCat(c.engine.lanes)},
      {"read_lanes", absl::StrCat(c.reads.lanes)},
      {"catalog_cache_ttl", Duration(c.catalog_cache_ttl)},
      {"opt_out_cache_ttl", Duration(c.opt_out_cache_ttl)},
      {"drain_delay", Duration(c.drain_delay)},
      {"shutdown_grace", Duration(c.shutdown_grace)},
      {"catchup_interval", Duration(scan.interval)},
      {"catchup_app_codes", scan.app_codes.empty() ? "(all)" : absl::StrJoin(scan.app_codes, ",")},
      {"catchup_min_age", Duration(scan.min_age)},
      {"catchup_safety_margin", Duration(scan.safety_margin)},
      {"catchup_full_sweep", Duration(scan.full_sweep_every)},
      {"catchup_batch", absl::StrCat(scan.batch)},
      {"catchup_status_every", Duration(scan.status_every)},
      {"keepalive_time", Duration(c.keepalive_time)},
      {"keepalive_timeout", Duration(c.keepalive_timeout)},
      {"max_connection_age", Duration(c.max_connection_age)},
      {"max_connection_age_grace", Duration(c.max_connection_age_grace)},
  };
}

}  // namespace

std::string Describe(const ServerConfig& config) {
  std::vector<std::string> parts;
  for (const auto& [flag, value] : Settings(config))
    parts.push_back(absl::StrCat(flag, "=", value));
  return absl::StrJoin(parts, " ");
}

}  // namespace giftwall
