-- The key table serves every mutating route: a row can be claimed (no response yet) while
-- its request runs, and records which route it belongs to.
ALTER TABLE idempotency_keys
  ADD COLUMN route text NOT NULL DEFAULT '/v1/uploads',
  ALTER COLUMN workflow_id DROP NOT NULL,
  ALTER COLUMN response_status DROP NOT NULL,
  ALTER COLUMN response_body DROP NOT NULL;
