-- An S3 source's batch is listed by its workflow, not the request that made it: `listing`
-- until its items are recorded, `failed` (with the listing's problem in `error`) when the
-- source could not be listed within its bounds.
ALTER TABLE import_batches DROP CONSTRAINT import_batches_state_check;
ALTER TABLE import_batches ADD CONSTRAINT import_batches_state_check
  CHECK (state IN ('listing', 'running', 'paused', 'completed', 'cancelled', 'failed'));
ALTER TABLE import_batches ADD COLUMN error jsonb;
DROP INDEX import_batches_open_idx;
CREATE INDEX import_batches_open_idx ON import_batches (tenant_id) WHERE state IN ('listing', 'running', 'paused');
