-- Anonymous sends (神秘人, issue 19): a sender row remembers whether any of its events said
-- `anonymous` (DESIGN §2.5), so that a reader who is neither the wall's owner nor that sender sees
-- the sender masked. Sticky: once 1, every later merge keeps it. Added last, so the server adds
-- it in place, without rewriting the table.
ALTER TABLE user_gift_wall_sender
  ADD COLUMN anonymous TINYINT NOT NULL DEFAULT 0;

ALTER TABLE user_gift_wall_period_sender
  ADD COLUMN anonymous TINYINT NOT NULL DEFAULT 0;
