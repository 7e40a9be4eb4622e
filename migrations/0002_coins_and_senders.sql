-- Coins, names and icons, senders and the top sender (冠名) of each gift on a wall.
--
-- Everything here is a function of the set of folded events, whatever order they arrive in:
-- sums add up, and each "latest" or "earliest" value keeps the (time, event_id) of the event it
-- came from, so that a later-arriving but earlier-occurring event is compared correctly.

ALTER TABLE user_gift_wall
  ADD COLUMN total_coins BIGINT NOT NULL DEFAULT 0 AFTER gift_count,
  -- Name and icon of the latest event (occurred_at_ms, then event_id) that carried them.
  ADD COLUMN gift_name VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '',
  ADD COLUMN gift_name_at_ms BIGINT NOT NULL DEFAULT 0,
  ADD COLUMN gift_name_event_id VARBINARY(128) NOT NULL DEFAULT '',
  ADD COLUMN gift_icon VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '',
  ADD COLUMN gift_icon_at_ms BIGINT NOT NULL DEFAULT 0,
  ADD COLUMN gift_icon_event_id VARBINARY(128) NOT NULL DEFAULT '',
  -- Distinct senders of this gift to this user.
  ADD COLUMN sender_count BIGINT NOT NULL DEFAULT 0,
  -- The top sender: highest sent_count; ties to whoever reached it first (the earlier
  -- last_sent_at_ms), then the lower user id. 0 while the gift has no sender.
  ADD COLUMN top_sender_user_id BIGINT NOT NULL DEFAULT 0,
  ADD COLUMN top_sender_count BIGINT NOT NULL DEFAULT 0,
  ADD COLUMN top_sender_coins BIGINT NOT NULL DEFAULT 0,
  ADD COLUMN top_sender_first_sent_at_ms BIGINT NOT NULL DEFAULT 0,
  ADD COLUMN top_sender_last_sent_at_ms BIGINT NOT NULL DEFAULT 0,
  -- The sender of the earliest event (occurred_at_ms, then event_id) that had one.
  ADD COLUMN first_sender_user_id BIGINT NOT NULL DEFAULT 0,
  ADD COLUMN first_sender_at_ms BIGINT NOT NULL DEFAULT 0,
  ADD COLUMN first_sender_event_id VARBINARY(128) NOT NULL DEFAULT '';

CREATE INDEX idx_user_gift_wall_coins
  ON user_gift_wall (app_code, user_id, total_coins DESC, gift_id);

CREATE INDEX idx_user_gift_wall_first_received
  ON user_gift_wall (app_code, user_id, first_received_at_ms, gift_id);

-- Who sent each gift on each wall. Events without a sender count toward the gift only.
CREATE TABLE IF NOT EXISTS user_gift_wall_sender (
  app_code VARBINARY(32) NOT NULL,
  user_id BIGINT NOT NULL,
  gift_id VARBINARY(64) NOT NULL,
  sender_user_id BIGINT NOT NULL,
  sent_count BIGINT NOT NULL,
  sent_coins BIGINT NOT NULL,
  first_sent_at_ms BIGINT NOT NULL,
  last_sent_at_ms BIGINT NOT NULL,
  created_at_ms BIGINT NOT NULL,
  updated_at_ms BIGINT NOT NULL,
  PRIMARY KEY (app_code, user_id, gift_id, sender_user_id),
  -- The top-sender order, so that a gift's senders list reads the index in order.
  KEY idx_user_gift_wall_sender_rank
    (app_code, user_id, gift_id, sent_count DESC, last_sent_at_ms, sender_user_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
