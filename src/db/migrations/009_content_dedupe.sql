-- Content dedupe, opt-in per tenant: with dedupe 'sha256', identical bytes (same SHA-256
-- and length) under one tenant share one stored object. stored_objects counts the uploads
-- naming each shared object; it is written in the records transaction (the count goes up
-- with the upload row), so the count and the rows never disagree (the audit checks it).
ALTER TABLE tenants ADD COLUMN dedupe text NOT NULL DEFAULT 'off' CHECK (dedupe IN ('off', 'sha256'));

CREATE TABLE stored_objects (
  tenant_id    uuid NOT NULL REFERENCES tenants (id),
  sha256       text NOT NULL,
  bytes        bigint NOT NULL,
  storage_key  text NOT NULL UNIQUE,
  refs         integer NOT NULL CHECK (refs > 0),
  created_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, sha256, bytes)
);

-- Uploads of a deduping tenant may now name the same object; the audit checks that only
-- counted (shared) objects are named twice.
ALTER TABLE uploads DROP CONSTRAINT uploads_storage_key_key;
CREATE INDEX uploads_storage_key_idx ON uploads (storage_key);
