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

-- Renditions per pipeline version: a re-run under another version writes its own set beside
-- the one served (the upload's pipeline and version), and the switch replaces it.
ALTER TABLE renditions
  ADD COLUMN pipeline text NOT NULL DEFAULT 'default',
  ADD COLUMN pipeline_version integer NOT NULL DEFAULT 0;
ALTER TABLE renditions DROP CONSTRAINT renditions_pkey;
ALTER TABLE renditions ADD PRIMARY KEY (upload_id, pipeline, pipeline_version, name);

-- Re-processing: a job runs one pipeline version over a fixed set of a tenant's uploads
-- (those of the pipeline matching its filter, committed before the job); each upload's
-- outcome is one row, so counting is exact whatever a job's workflow repeats.
CREATE TABLE reprocess_jobs (
  id                uuid PRIMARY KEY,
  tenant_id         uuid NOT NULL REFERENCES tenants (id),
  pipeline          text NOT NULL,
  pipeline_version  integer NOT NULL,
  filter            jsonb NOT NULL,
  state             text NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'completed', 'cancelled')),
  total             integer NOT NULL,
  created_at        timestamptz NOT NULL DEFAULT now(),
  finished_at       timestamptz
);
CREATE INDEX reprocess_jobs_tenant_idx ON reprocess_jobs (tenant_id, created_at);

CREATE TABLE reprocess_items (
  job_id     uuid NOT NULL REFERENCES reprocess_jobs (id),
  upload_id  uuid NOT NULL REFERENCES uploads (id),
  outcome    text NOT NULL CHECK (outcome IN ('done', 'skipped', 'failed')),
  reason     text,
  PRIMARY KEY (job_id, upload_id)
);
