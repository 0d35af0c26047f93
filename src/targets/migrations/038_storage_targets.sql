-- Storage targets: a tenant's own S3-compatible buckets. An object's address names its target:
-- a key under `targets/{id}/` lives in that target's bucket (under its prefix), any other key in
-- the instance's store, the default target (src/storage/address.ts). The address is the one
-- place the target is written, so rows carry it in storage_key and reads follow the row;
-- uploads.storage_target is derived from it for filters and the in-use check.
CREATE TABLE storage_targets (
  id                 uuid PRIMARY KEY,
  tenant_id          uuid NOT NULL REFERENCES tenants (id),
  name               text NOT NULL,
  endpoint           text NOT NULL,
  bucket             text NOT NULL,
  region             text NOT NULL,
  prefix             text NOT NULL DEFAULT '',
  force_path_style   boolean NOT NULL DEFAULT true,
  access_key_id      text NOT NULL,
  -- Sealed with SECRETS_KEY under the target's id; never answered back.
  secret_access_key  text NOT NULL,
  residency          text,
  -- Counts credential changes: processes holding a client for an older version make a new one.
  version            integer NOT NULL DEFAULT 1,
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now(),
  deleted_at         timestamptz
);
CREATE UNIQUE INDEX storage_targets_name_idx ON storage_targets (tenant_id, name) WHERE deleted_at IS NULL;

-- The tenant's default target (null: the instance's store) and the residency its uploads must have (null: any).
ALTER TABLE tenants
  ADD COLUMN default_storage_target uuid REFERENCES storage_targets (id),
  ADD COLUMN residency text;

ALTER TABLE uploads ADD COLUMN storage_target uuid
  GENERATED ALWAYS AS (CASE WHEN storage_key LIKE 'targets/%' THEN substring(storage_key FROM 9 FOR 36)::uuid END) STORED;
CREATE INDEX uploads_storage_target_idx ON uploads (storage_target, tenant_id) WHERE storage_target IS NOT NULL;

-- Shared objects (content dedupe) are shared within one target only: the same bytes on two
-- targets are two objects, so no upload's row names an object outside its own target.
ALTER TABLE stored_objects ADD COLUMN storage_target uuid
  GENERATED ALWAYS AS (CASE WHEN storage_key LIKE 'targets/%' THEN substring(storage_key FROM 9 FOR 36)::uuid END) STORED;
ALTER TABLE stored_objects DROP CONSTRAINT stored_objects_pkey;
CREATE UNIQUE INDEX stored_objects_content_idx
  ON stored_objects (tenant_id, sha256, bytes, coalesce(storage_target, '00000000-0000-0000-0000-000000000000'::uuid));

-- An upload token may pin the target its uploads go to.
ALTER TABLE upload_tokens ADD COLUMN storage_target uuid REFERENCES storage_targets (id);
