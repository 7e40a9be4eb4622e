-- Period walls (DESIGN §2.15): what each app keeps besides the all-time wall (its time zone and
-- the period kinds), and a wall row and sender row per period, beside the all-time rows. An app
-- without settings keeps the all-time wall only.

CREATE TABLE IF NOT EXISTS giftwall_app_settings (
  app_code VARBINARY(32) NOT NULL,
  -- The kinds kept, a comma list in the order day, week, month ('' keeps none).
  period_kinds VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  -- When the settings last changed: verify compares only the periods that began after it, so a
  -- change alone is never drift.
  changed_at_ms BIGINT NOT NULL,
  changed_by VARCHAR(256) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '',
  created_at_ms BIGINT NOT NULL,
  updated_at_ms BIGINT NOT NULL,
  PRIMARY KEY (app_code)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Each app's time zones over time. A zone is the app's from since_ms on (when it was set); for
-- each kind it takes effect at the end of the period it was set in. An app's first zone has
-- since_ms 0: it covers all of history.
CREATE TABLE IF NOT EXISTS giftwall_app_time_zones (
  app_code VARBINARY(32) NOT NULL,
  since_ms BIGINT NOT NULL,
  time_zone VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  PRIMARY KEY (app_code, since_ms)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- A wall row per period: the columns of user_gift_wall, keyed also by the period's kind and key
-- ('month', '2026-12'). A user's wall of one period is a primary-key range, and so is the
-- history of one kind.
CREATE TABLE IF NOT EXISTS user_gift_wall_period (
  app_code VARBINARY(32) NOT NULL,
  user_id BIGINT NOT NULL,
  period_kind VARCHAR(8) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  period_key VARCHAR(10) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  gift_id VARBINARY(64) NOT NULL,
  gift_count BIGINT NOT NULL,
  total_coins BIGINT NOT NULL DEFAULT 0,
  first_received_at_ms BIGINT NOT NULL,
  last_received_at_ms BIGINT NOT NULL,
  gift_name VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '',
  gift_name_at_ms BIGINT NOT NULL DEFAULT 0,
  gift_name_event_id VARBINARY(128) NOT NULL DEFAULT '',
  gift_icon VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '',
  gift_icon_at_ms BIGINT NOT NULL DEFAULT 0,
  gift_icon_event_id VARBINARY(128) NOT NULL DEFAULT '',
  sender_count BIGINT NOT NULL DEFAULT 0,
  top_sender_user_id BIGINT NOT NULL DEFAULT 0,
  top_sender_count BIGINT NOT NULL DEFAULT 0,
  top_sender_coins BIGINT NOT NULL DEFAULT 0,
  top_sender_first_sent_at_ms BIGINT NOT NULL DEFAULT 0,
  top_sender_last_sent_at_ms BIGINT NOT NULL DEFAULT 0,
  first_sender_user_id BIGINT NOT NULL DEFAULT 0,
  first_sender_at_ms BIGINT NOT NULL DEFAULT 0,
  first_sender_event_id VARBINARY(128) NOT NULL DEFAULT '',
  created_at_ms BIGINT NOT NULL,
  updated_at_ms BIGINT NOT NULL,
  PRIMARY KEY (app_code, user_id, period_kind, period_key, gift_id),
  -- Retention prunes the periods past it, a kind at a time.
  KEY idx_user_gift_wall_period_prune (app_code, period_kind, period_key)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE IF NOT EXISTS user_gift_wall_period_sender (
  app_code VARBINARY(32) NOT NULL,
  user_id BIGINT NOT NULL,
  period_kind VARCHAR(8) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  period_key VARCHAR(10) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  gift_id VARBINARY(64) NOT NULL,
  sender_user_id BIGINT NOT NULL,
  sent_count BIGINT NOT NULL,
  sent_coins BIGINT NOT NULL,
  first_sent_at_ms BIGINT NOT NULL,
  last_sent_at_ms BIGINT NOT NULL,
  created_at_ms BIGINT NOT NULL,
  updated_at_ms BIGINT NOT NULL,
  PRIMARY KEY (app_code, user_id, period_kind, period_key, gift_id, sender_user_id),
  -- The top-sender order within a period's gift, as the all-time table has.
  KEY idx_user_gift_wall_period_sender_rank
    (app_code, user_id, period_kind, period_key, gift_id, sent_count DESC, last_sent_at_ms,
     sender_user_id),
  KEY idx_user_gift_wall_period_sender_prune (app_code, period_kind, period_key)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
