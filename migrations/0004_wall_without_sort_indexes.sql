-- A wall is bounded by the gift catalogue (hundreds of rows): GetGiftWall reads the whole wall by
-- primary key, one snapshot for the page and the summary, and sorts it in memory. The four sort
-- indexes served only the page; every projection rewrote three or four of their entries per wall
-- row it merged (count, coins and times change on every event). They cost the write path and
-- no longer serve any read (docs/BENCHMARKS.md has the figures).
ALTER TABLE user_gift_wall
  DROP INDEX idx_user_gift_wall_count,
  DROP INDEX idx_user_gift_wall_last_received,
  DROP INDEX idx_user_gift_wall_coins,
  DROP INDEX idx_user_gift_wall_first_received;
