-- Leases (DESIGN §2.20): who acts alone on something, whatever replica and whatever database node
-- it runs on: scanning an app (`scan/<app>`), rebuilding one (`rebuild/<app>`), migrating the
-- schema (`migrate`, which runs this file first, before the lease it needs). A row per lease,
-- never deleted: a released lease expires now and keeps its token, so that tokens only grow.
-- Times are the database's clock, in Unix milliseconds.
--
-- `token` grows at each new holder; every write made under a lease checks, in its own
-- transaction, that the lease is still its holder's with that token, and counts itself in
-- `fenced_writes` (a write to the row, so that on a cluster a takeover committed on another node
-- and that transaction cannot both commit).
CREATE TABLE IF NOT EXISTS giftwall_leases (
  name VARBINARY(64) NOT NULL,
  holder VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  token BIGINT NOT NULL,
  expires_at_ms BIGINT NOT NULL,
  taken_at_ms BIGINT NOT NULL,
  renewed_at_ms BIGINT NOT NULL,
  fenced_writes BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (name)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
