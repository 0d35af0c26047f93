-- Pipelines: what runs after an upload commits, declared per tenant. A declaration is
-- never changed: every change is a new version, and an upload records the version it ran.
CREATE TABLE pipeline_versions (
  tenant_id   uuid NOT NULL REFERENCES tenants (id),
  name        text NOT NULL,
  version     integer NOT NULL CHECK (version > 0),
  steps       jsonb NOT NULL,
  validate    jsonb,
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, name, version)
);

-- What a pipeline's calls to the tenant (its validation hook, http.call steps) are signed
-- with: made with the name's first version and shown once, sealed under SECRETS_KEY.
CREATE TABLE pipeline_secrets (
  tenant_id   uuid NOT NULL REFERENCES tenants (id),
  name        text NOT NULL,
  secret      text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, name)
);

-- NULL on uploads committed before pipelines existed: they ran the built-in default (version 0).
-- `gated` until the pipeline's gates (a virus scan) pass: nothing of it is served meanwhile;
-- `rejected` is final (its bytes are deleted, its key answers the rejection).
ALTER TABLE uploads
  ADD COLUMN pipeline text,
  ADD COLUMN pipeline_version integer,
  ADD COLUMN availability text NOT NULL DEFAULT 'available' CHECK (availability IN ('available', 'gated', 'rejected')),
  ADD COLUMN rejection_reason text;

-- Each step's outcome for an upload, once per (upload, pipeline version, step): a retried
-- step finds its row and keeps the first outcome.
CREATE TABLE upload_steps (
  upload_id         uuid NOT NULL REFERENCES uploads (id),
  pipeline          text NOT NULL,
  pipeline_version  integer NOT NULL,
  step_index        integer NOT NULL,
  type              text NOT NULL,
  status            text NOT NULL CHECK (status IN ('succeeded', 'skipped', 'failed', 'rejected')),
  reason            text,
  output            jsonb,
  finished_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (upload_id, pipeline, pipeline_version, step_index)
);

-- The pipeline a resumable session's upload names (tus metadata, a plan, Uppy metadata).
ALTER TABLE resumable_sessions ADD COLUMN pipeline text;

-- The pipeline every upload of an upload token runs (NULL: whichever the upload names).
ALTER TABLE upload_tokens ADD COLUMN pipeline text;
