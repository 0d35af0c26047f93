-- After the TTL the full response of a key is dropped, but a compact tombstone remains for
-- a longer window, so a late reuse of the key gets a clear "expired" answer naming the
-- original upload instead of silently creating a second one.
CREATE TABLE idempotency_tombstones (
  tenant_id    uuid NOT NULL REFERENCES tenants (id),
  key          text NOT NULL,
  fingerprint  text NOT NULL,
  upload_id    uuid,
  expired_at   timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, key)
);
CREATE INDEX idempotency_tombstones_expires_idx ON idempotency_tombstones (expires_at);
