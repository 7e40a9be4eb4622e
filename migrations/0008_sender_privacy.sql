-- Senders' opt-outs (issue 19, DESIGN §2.18): a sender who set `hidden` through SetSenderPrivacy
-- is shown masked on every wall to every viewer but the wall's owner, the sender and a
-- moderator, from the next read on (the reads look it up, so it reaches back over what was sent before). Written by
-- the profile service; a row with hidden 0 is a sender who opted back in.
CREATE TABLE IF NOT EXISTS giftwall_sender_privacy (
  app_code VARBINARY(32) NOT NULL,
  sender_user_id BIGINT NOT NULL,
  hidden TINYINT NOT NULL,
  updated_at_ms BIGINT NOT NULL,
  updated_by VARCHAR(256) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '',
  PRIMARY KEY (app_code, sender_user_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
