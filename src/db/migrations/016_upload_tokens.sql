-- Upload tokens: a credential an app's backend mints for one end user and one purpose
-- (src/tokens/). Stored like API keys (the hash only), with the limits the API enforces
-- and the count of uploads committed under it (taken under the row's lock at the commit).
CREATE TABLE upload_tokens (
  id            uuid PRIMARY KEY,
  tenant_id     uuid NOT NULL REFERENCES tenants(id),
  token_hash    bytea NOT NULL UNIQUE,
  expires_at    timestamptz NOT NULL,
  max_bytes     bigint,
  allowed_types text[],
  max_uploads   integer,
  uploads_used  integer NOT NULL DEFAULT 0,
  subject       text,
  metadata      jsonb,
  created_at    timestamptz NOT NULL DEFAULT now(),
  revoked_at    timestamptz
);
CREATE INDEX upload_tokens_tenant_idx ON upload_tokens (tenant_id, created_at);

-- Who an upload is for: the token it was made with, its subject and metadata.
ALTER TABLE uploads ADD COLUMN token_id uuid, ADD COLUMN subject text, ADD COLUMN token_metadata jsonb;
CREATE INDEX uploads_tenant_subject_idx ON uploads (tenant_id, subject, created_at DESC, id DESC) WHERE subject IS NOT NULL;
