-- Legal holds: a held upload cannot be deleted (by a request, retention, its own expiry or its
-- tenant's deletion) until the hold is released. hold_changes numbers the hold's changes, so
-- each one's event has an id of its own.
ALTER TABLE uploads
  ADD COLUMN hold_reason text,
  ADD COLUMN held_at timestamptz,
  ADD COLUMN held_by text,
  ADD COLUMN hold_changes integer NOT NULL DEFAULT 0;
CREATE INDEX uploads_held_idx ON uploads (tenant_id) WHERE hold_reason IS NOT NULL;
