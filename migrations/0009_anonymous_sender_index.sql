-- Who sent anonymously to a wall (DESIGN §2.18): a wall read finds its anonymous senders along
-- this index, a range per wall that is empty unless someone sent it a gift anonymously, instead
-- of looking up the sender row of each gift's top and first sender. A sender row's entry is
-- written when the row is and moves only when its `anonymous` does (once at most: it is sticky).
CREATE INDEX idx_user_gift_wall_sender_anonymous
  ON user_gift_wall_sender (app_code, user_id, anonymous);
