-- The gift catalogue of each app (issue 19, DESIGN §2.16): what each gift is called and shown as,
-- its price, series and tier, whether it is on sale, and where it sorts. Written by the
-- gift-config service through PutGiftCatalog; an app without rows has no catalogue.
CREATE TABLE IF NOT EXISTS giftwall_gift_catalog (
  app_code VARBINARY(32) NOT NULL,
  gift_id VARBINARY(64) NOT NULL,
  gift_name VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '',
  gift_icon VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '',
  unlit_icon VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '',
  price_coins BIGINT NOT NULL DEFAULT 0,
  series VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '',
  tier VARCHAR(32) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '',
  -- 'on_sale' or 'retired'.
  status VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  sort_order BIGINT NOT NULL DEFAULT 0,
  updated_at_ms BIGINT NOT NULL,
  PRIMARY KEY (app_code, gift_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- One row per app that has written a catalogue: its writes lock it first, so that two writes of
-- one app's catalogue take turns (a replace is whole or not at all, also against another write).
CREATE TABLE IF NOT EXISTS giftwall_gift_catalogs (
  app_code VARBINARY(32) NOT NULL,
  version BIGINT NOT NULL,
  updated_at_ms BIGINT NOT NULL,
  updated_by VARCHAR(256) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '',
  PRIMARY KEY (app_code)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
