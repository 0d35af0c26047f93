-- GET /v1/uploads pages a tenant's uploads newest first by (created_at, id): this index
-- answers each page with one range scan, whatever the table's size.
CREATE INDEX uploads_tenant_created_idx ON uploads (tenant_id, created_at DESC, id DESC);
