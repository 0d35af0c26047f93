-- Import batches (POST /v1/import-batches): up to 10,000 files, each one import keyed by
-- (batch, item), run by the batch's workflow a few at a time. The batch row holds who made it
-- (each item is admitted as that caller) and its counts; an item row, its outcome.
CREATE TABLE import_batches (
  id            uuid PRIMARY KEY,
  tenant_id     uuid NOT NULL REFERENCES tenants (id),
  -- running → completed | cancelled; paused while paused (its items in flight go on).
  state         text NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'paused', 'completed', 'cancelled')),
  concurrency   integer NOT NULL,
  pipeline      text,
  caller        jsonb NOT NULL,
  upload_grant  jsonb,
  total         integer NOT NULL,
  done          integer NOT NULL DEFAULT 0,
  failed        integer NOT NULL DEFAULT 0,
  skipped       integer NOT NULL DEFAULT 0,
  created_at    timestamptz NOT NULL DEFAULT now(),
  finished_at   timestamptz
);
CREATE INDEX import_batches_open_idx ON import_batches (tenant_id) WHERE state IN ('running', 'paused');

CREATE TABLE import_batch_items (
  batch_id   uuid NOT NULL REFERENCES import_batches (id),
  n          integer NOT NULL,
  url        text NOT NULL,
  file_name  text,
  sha256     text,
  -- pending → done | failed | skipped (cancelled before it started)
  state      text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'done', 'failed', 'skipped')),
  upload_id  uuid,
  error      jsonb,
  PRIMARY KEY (batch_id, n)
);
