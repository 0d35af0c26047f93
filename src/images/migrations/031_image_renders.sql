-- Renders under way, one row per (upload, canonical spec), admitted under the tenant's lock
-- against TENANT_MAX_RENDERS_IN_FLIGHT (a burst of cold specs cannot overshoot the cap). The
-- row goes when its variant is recorded or its render fails; one whose API died meanwhile
-- counts until it expires (past the longest a render's run may take).
CREATE TABLE image_renders (
  upload_id  uuid NOT NULL,
  spec       text NOT NULL,
  tenant_id  uuid NOT NULL REFERENCES tenants (id),
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (upload_id, spec)
);
CREATE INDEX image_renders_tenant_idx ON image_renders (tenant_id, expires_at);
