-- The per-tenant cap on open sessions (TENANT_MAX_OPEN_SESSIONS) counts a tenant's
-- sessions not yet committed at every creation; this keeps that count off the table's size.
CREATE INDEX resumable_sessions_open_idx ON resumable_sessions (tenant_id) WHERE state <> 'committed';
