-- Imports (POST /v1/imports): the file is read from its origin by the upload's own run. A
-- row stands for an import not yet committed: it gives the upload its id before the commit
-- (the 202's Location), shows how far the read got, and counts towards the tenant's imports
-- in flight. The records transaction deletes it when the upload commits and marks it failed
-- when the import's failure is recorded as the key's answer; a failed row goes with its key.
-- The URL and the tenant's headers for the origin are not kept here (the run's input holds
-- them, the headers sealed).
CREATE TABLE imports (
  id               uuid PRIMARY KEY,
  tenant_id        uuid NOT NULL REFERENCES tenants (id),
  idempotency_key  text NOT NULL,
  fingerprint      text NOT NULL,
  -- scheme://host[:port] of the URL asked for: what the upload's view shows of it.
  origin           text NOT NULL,
  token_id         uuid,
  state            text NOT NULL DEFAULT 'importing' CHECK (state IN ('importing', 'failed')),
  bytes_fetched    bigint NOT NULL DEFAULT 0,
  -- The file's length once the origin declared it.
  bytes_total      bigint,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  UNIQUE (tenant_id, idempotency_key)
);
CREATE INDEX imports_in_flight_idx ON imports (tenant_id) WHERE state = 'importing';

-- The hosts an upload token may import from (NULL: it may not import).
ALTER TABLE upload_tokens ADD COLUMN import_hosts text[];
