-- Tenants own everything; API keys are stored only as SHA-256 hashes.
CREATE TABLE tenants (
  id          uuid PRIMARY KEY,
  name        text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
  key_hash    bytea PRIMARY KEY,
  tenant_id   uuid NOT NULL REFERENCES tenants (id),
  label       text NOT NULL DEFAULT '',
  created_at  timestamptz NOT NULL DEFAULT now(),
  revoked_at  timestamptz
);
CREATE INDEX api_keys_tenant_idx ON api_keys (tenant_id);

-- One row per logical upload. UNIQUE (tenant_id, idempotency_key) is the last line of
-- defence for "one upload per key": a retried or duplicated records transaction collides
-- here instead of inserting a second row.
CREATE TABLE uploads (
  id               uuid PRIMARY KEY,
  tenant_id        uuid NOT NULL REFERENCES tenants (id),
  idempotency_key  text NOT NULL,
  workflow_id      text NOT NULL,
  storage_key      text NOT NULL UNIQUE,
  bytes            bigint NOT NULL CHECK (bytes >= 0),
  sha256           text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
  content_type     text NOT NULL,
  file_name        text,
  status           text NOT NULL DEFAULT 'committed',
  created_at       timestamptz NOT NULL DEFAULT now(),
  UNIQUE (tenant_id, idempotency_key)
);

-- The stored answer for a (tenant, key). Written in the same transaction as the upload
-- row (or alone, for a recorded rejection), so a replay is exactly the original answer.
CREATE TABLE idempotency_keys (
  tenant_id        uuid NOT NULL REFERENCES tenants (id),
  key              text NOT NULL,
  fingerprint      text NOT NULL,
  workflow_id      text NOT NULL,
  upload_id        uuid REFERENCES uploads (id),
  response_status  integer NOT NULL,
  response_body    text NOT NULL,
  created_at       timestamptz NOT NULL,
  completed_at     timestamptz NOT NULL DEFAULT now(),
  expires_at       timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, key)
);
CREATE INDEX idempotency_keys_expires_idx ON idempotency_keys (expires_at);
