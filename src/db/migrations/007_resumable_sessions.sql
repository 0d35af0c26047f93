-- Resumable (tus) sessions: one per (tenant, Idempotency-Key). What a PATCH acknowledges —
-- the offset, the parts written, the bytes held back below the minimum part size and the
-- running SHA-256 state — is updated in one statement, so any API replica can continue
-- from it and an API killed mid-PATCH loses at most what it had not acknowledged.
CREATE TABLE resumable_sessions (
  id               uuid PRIMARY KEY,
  tenant_id        uuid NOT NULL REFERENCES tenants (id),
  idempotency_key  text NOT NULL,
  fingerprint      text NOT NULL,
  upload_length    bigint NOT NULL,
  upload_metadata  text NOT NULL DEFAULT '',
  content_type     text NOT NULL,
  file_name        text,
  declared_sha256  text,
  storage_key      text NOT NULL UNIQUE,
  multipart_id     text NOT NULL,
  upload_offset    bigint NOT NULL DEFAULT 0,
  -- [{"partNumber": 1, "etag": "...", "bytes": 8388608}, ...]
  parts            jsonb NOT NULL DEFAULT '[]',
  -- Acknowledged bytes after the last whole part, kept as an object of their own.
  tail_key         text,
  tail_bytes       bigint NOT NULL DEFAULT 0,
  sha256_state     bytea,
  head             bytea,
  -- open → completing → committed; a failed or expired session's row is deleted.
  state            text NOT NULL DEFAULT 'open',
  -- The lease a PATCH holds while it writes: another PATCH meanwhile gets 423, unless the
  -- holder has made no progress (no bytes from its client, no store write) for a few
  -- seconds: a client whose connection died unnoticed must not block its own resume.
  lease_owner      uuid,
  lease_until      timestamptz,
  progress_at      timestamptz,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  UNIQUE (tenant_id, idempotency_key)
);
