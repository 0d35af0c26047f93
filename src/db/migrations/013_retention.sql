-- Retention. A tenant's retention_days (null: keep forever) and an upload's own expires_at
-- (sent with the upload, on every arrival mode) both end in the deletion workflow, started
-- by the expire-uploads Schedule. The partial index finds uploads due by their own date;
-- uploads due by tenant retention are found per tenant on uploads_tenant_created_idx.
ALTER TABLE tenants ADD COLUMN retention_days integer CHECK (retention_days > 0);
ALTER TABLE uploads ADD COLUMN expires_at timestamptz;
ALTER TABLE resumable_sessions ADD COLUMN expires_at timestamptz;
CREATE INDEX uploads_live_created_idx ON uploads (tenant_id, created_at) WHERE deleted_at IS NULL;
CREATE INDEX uploads_expires_idx ON uploads (expires_at) WHERE expires_at IS NOT NULL AND deleted_at IS NULL;
