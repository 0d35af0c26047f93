-- The upload's own record: metadata (a JSON object) and tags, versioned. The row holds the
-- current version; upload_versions holds every version once the record was first changed
-- (version 1, as uploaded, is written with the first change). upload_labels lists each tag
-- and each top-level scalar metadata entry so a filtered list walks one index range in
-- creation order, however many uploads the tenant has.
ALTER TABLE uploads
  ADD COLUMN metadata jsonb,
  ADD COLUMN tags text[] NOT NULL DEFAULT '{}',
  ADD COLUMN record_version integer NOT NULL DEFAULT 1;

ALTER TABLE resumable_sessions ADD COLUMN labels jsonb;

CREATE TABLE upload_versions (
  upload_id uuid NOT NULL REFERENCES uploads (id) ON DELETE CASCADE,
  version integer NOT NULL,
  tenant_id uuid NOT NULL,
  metadata jsonb,
  tags text[] NOT NULL DEFAULT '{}',
  -- Who made it: `key:<id>`, `token:<id>`, `admin`, or `upload` for version 1.
  changed_by text NOT NULL,
  changed_at timestamptz NOT NULL DEFAULT now(),
  -- The change's request (its body and caller), so a retry of it is recognised as itself.
  request_hash text,
  PRIMARY KEY (upload_id, version)
);

CREATE TABLE upload_labels (
  tenant_id uuid NOT NULL,
  label text NOT NULL,
  created_at timestamptz NOT NULL,
  upload_id uuid NOT NULL REFERENCES uploads (id) ON DELETE CASCADE,
  PRIMARY KEY (tenant_id, label, upload_id)
);
CREATE INDEX upload_labels_page_idx ON upload_labels (tenant_id, label, created_at DESC, upload_id DESC);
CREATE INDEX upload_labels_upload_idx ON upload_labels (upload_id);

-- Uploads made with a token before: its metadata was their only metadata.
UPDATE uploads SET metadata = token_metadata WHERE token_metadata IS NOT NULL AND erased_at IS NULL;
INSERT INTO upload_labels (tenant_id, label, created_at, upload_id)
  SELECT u.tenant_id, 'm:' || m.key || '=' || m.value, u.created_at, u.id
    FROM uploads u, jsonb_each_text(u.metadata) m
   WHERE u.metadata IS NOT NULL AND length(m.key) + length(m.value) <= 512
  ON CONFLICT DO NOTHING;
