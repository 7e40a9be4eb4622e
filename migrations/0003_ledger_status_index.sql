-- Operators' questions about the ledger (how many done, failed, dead; how many the catch-up scan
-- recovered) are answered from this index alone, without reading the rows.
CREATE INDEX idx_projection_events_status
  ON wallet_projection_events (projection_name, app_code, status, projected_by);
