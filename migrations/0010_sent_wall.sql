-- The sent wall (DESIGN §2.19): what a user sent, per gift, all-time and per period, kept for the
-- apps whose settings say keep_sent_wall.
--
-- Its receivers are the walls' own sender rows, read by sender along these indexes: a (sender,
-- gift), or a (sender, period, gift), is a range of one. An entry is written when its sender row
-- is, and never moves (none of its columns change).
CREATE INDEX idx_user_gift_wall_sender_by_sender
  ON user_gift_wall_sender (app_code, sender_user_id, gift_id, user_id);

CREATE INDEX idx_user_gift_wall_period_sender_by_sender
  ON user_gift_wall_period_sender
    (app_code, sender_user_id, period_kind, period_key, gift_id, user_id);

-- One row per (sender, period, gift), the all-time one with an empty period kind and key: the sum
-- of the sender rows of that sender and gift (and period) over every wall, folded in the same
-- transaction as they are; and its open part (open_*), the sum of those sender rows that are not
-- anonymous, which is what viewers other than the sender see. `anonymous` is sticky, as on a
-- sender row: any of these sends was anonymous. The open part's times are 0 while it is empty.
CREATE TABLE IF NOT EXISTS user_gift_sent (
  app_code VARBINARY(32) NOT NULL,
  sender_user_id BIGINT NOT NULL,
  period_kind VARCHAR(8) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '',
  period_key VARCHAR(10) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '',
  gift_id VARBINARY(64) NOT NULL,
  sent_count BIGINT NOT NULL,
  sent_coins BIGINT NOT NULL,
  receiver_count BIGINT NOT NULL,
  first_sent_at_ms BIGINT NOT NULL,
  last_sent_at_ms BIGINT NOT NULL,
  open_sent_count BIGINT NOT NULL DEFAULT 0,
  open_sent_coins BIGINT NOT NULL DEFAULT 0,
  open_receiver_count BIGINT NOT NULL DEFAULT 0,
  open_first_sent_at_ms BIGINT NOT NULL DEFAULT 0,
  open_last_sent_at_ms BIGINT NOT NULL DEFAULT 0,
  anonymous TINYINT NOT NULL DEFAULT 0,
  created_at_ms BIGINT NOT NULL,
  updated_at_ms BIGINT NOT NULL,
  PRIMARY KEY (app_code, sender_user_id, period_kind, period_key, gift_id),
  -- Retention prunes the periods past it, a kind at a time, as the period walls'.
  KEY idx_user_gift_sent_prune (app_code, period_kind, period_key)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

ALTER TABLE giftwall_app_settings
  ADD COLUMN keep_sent_wall TINYINT NOT NULL DEFAULT 0;
