-- The sent wall (DESIGN §2.19): what a user sent, per gift, kept for the apps whose settings say
-- keep_sent_wall.
--
-- Its receivers are the walls' own sender rows, read by sender along this index: a (sender, gift)
-- is a range of it. The entry is written when the sender row is, and never moves (none of its
-- columns change).
CREATE INDEX idx_user_gift_wall_sender_by_sender
  ON user_gift_wall_sender (app_code, sender_user_id, gift_id, user_id);

-- One row per (sender, gift): the sum of the sender rows of that sender and gift over every
-- wall, folded in the same transaction as they are. `anonymous` is sticky, as on a sender row:
-- any of these sends was anonymous, so the gift is hidden from viewers other than the sender.
CREATE TABLE IF NOT EXISTS user_gift_sent (
  app_code VARBINARY(32) NOT NULL,
  sender_user_id BIGINT NOT NULL,
  gift_id VARBINARY(64) NOT NULL,
  sent_count BIGINT NOT NULL,
  sent_coins BIGINT NOT NULL,
  receiver_count BIGINT NOT NULL,
  first_sent_at_ms BIGINT NOT NULL,
  last_sent_at_ms BIGINT NOT NULL,
  anonymous TINYINT NOT NULL DEFAULT 0,
  created_at_ms BIGINT NOT NULL,
  updated_at_ms BIGINT NOT NULL,
  PRIMARY KEY (app_code, sender_user_id, gift_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

ALTER TABLE giftwall_app_settings
  ADD COLUMN keep_sent_wall TINYINT NOT NULL DEFAULT 0;
