-- The primary's heartbeat (DESIGN §6, reads from a replica): the holder of the `heartbeat` lease
-- (§2.20) writes the database's now here every 2 s, whether or not anything else is written.
-- A replica's copy of the row says how far it trails the primary, read with the replica's own
-- session and needing no replication privileges. Times are Unix milliseconds.
CREATE TABLE IF NOT EXISTS giftwall_heartbeat (
  name VARBINARY(32) NOT NULL,
  written_at_ms BIGINT NOT NULL,
  writer VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  PRIMARY KEY (name)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
