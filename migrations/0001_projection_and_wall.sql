-- The wallet's outbox, the projection ledger and the gift wall.
--
-- Identifiers (app_code, event_id, gift_id) are VARBINARY: compared byte for byte, so "E1",
-- "e1" and "E1 " are three events. (utf8mb4_bin would not do: it is a PAD SPACE collation,
-- under which 'E1' = 'E1 ' and the second event would be lost as a duplicate.) Text shown to
-- people is utf8mb4. Every table names its charset: a server default of latin1 must not leak in.

-- Owned by the wallet service in production; created here only where it is absent (local runs,
-- tests). The columns this service reads are the seed's; every other column has a default.
CREATE TABLE IF NOT EXISTS wallet_outbox (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  app_code VARBINARY(32) NOT NULL,
  event_id VARBINARY(128) NOT NULL,
  event_type VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  transaction_id VARBINARY(128) NOT NULL DEFAULT '',
  command_id VARBINARY(128) NOT NULL DEFAULT '',
  payload JSON NULL,
  status VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT 'pending',
  created_at_ms BIGINT NOT NULL,
  updated_at_ms BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (id),
  UNIQUE KEY uk_wallet_outbox_app_event (app_code, event_id),
  KEY idx_wallet_outbox_event_created (app_code, event_type, created_at_ms, event_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- One row per (projection, event): the projection's memory of what it has done with each event.
CREATE TABLE IF NOT EXISTS wallet_projection_events (
  projection_name VARBINARY(64) NOT NULL,
  app_code VARBINARY(32) NOT NULL,
  event_id VARBINARY(128) NOT NULL,
  status VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  retry_count INT NOT NULL DEFAULT 0,
  requeue_count INT NOT NULL DEFAULT 0,
  locked_by VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '',
  locked_until_ms BIGINT NOT NULL DEFAULT 0,
  -- When the scanner may next retry a failed event (and, while processing, when the lease ends).
  next_attempt_at_ms BIGINT NOT NULL DEFAULT 0,
  last_error VARCHAR(1024) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '',
  processed_at_ms BIGINT NOT NULL DEFAULT 0,
  projected_by VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '',
  target_user_id BIGINT NOT NULL DEFAULT 0,
  created_at_ms BIGINT NOT NULL,
  updated_at_ms BIGINT NOT NULL,
  PRIMARY KEY (projection_name, app_code, event_id),
  KEY idx_projection_events_due (projection_name, app_code, status, next_attempt_at_ms),
  KEY idx_projection_events_user (projection_name, app_code, target_user_id),
  CONSTRAINT chk_projection_events_status
    CHECK (status IN ('processing', 'failed', 'done', 'dead')),
  CONSTRAINT chk_projection_events_projected_by
    CHECK (projected_by IN ('', 'relay', 'scan', 'requeue', 'rebuild'))
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- The read model: one row per (user, gift) the user has received. Each sort has its index, in
-- the sort's own direction, so a page is an index range read without a filesort.
CREATE TABLE IF NOT EXISTS user_gift_wall (
  app_code VARBINARY(32) NOT NULL,
  user_id BIGINT NOT NULL,
  gift_id VARBINARY(64) NOT NULL,
  gift_count BIGINT NOT NULL,
  first_received_at_ms BIGINT NOT NULL,
  last_received_at_ms BIGINT NOT NULL,
  created_at_ms BIGINT NOT NULL,
  updated_at_ms BIGINT NOT NULL,
  PRIMARY KEY (app_code, user_id, gift_id),
  KEY idx_user_gift_wall_count (app_code, user_id, gift_count DESC, gift_id),
  KEY idx_user_gift_wall_last_received (app_code, user_id, last_received_at_ms DESC, gift_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
