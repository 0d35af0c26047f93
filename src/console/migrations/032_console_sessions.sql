-- The console's sign-ins: an API key (or the operator's token) exchanged for a cookie.
-- Only the cookie's SHA-256 is kept. A key session holds no rights of its own: every
-- request re-reads its key (src/console/sessions.ts), so revoking the key ends it.
CREATE TABLE console_sessions (
  id            uuid PRIMARY KEY,
  token_hash    bytea NOT NULL UNIQUE,
  tenant_id     uuid NOT NULL REFERENCES tenants (id),
  -- null: the operator (ADMIN_TOKEN), whose sessions live in the reserved operator tenant.
  api_key_id    uuid,
  csrf_token    text NOT NULL,
  user_agent    text,
  created_at    timestamptz NOT NULL DEFAULT now(),
  last_seen_at  timestamptz NOT NULL DEFAULT now(),
  expires_at    timestamptz NOT NULL,
  revoked_at    timestamptz
);
CREATE INDEX console_sessions_tenant_idx ON console_sessions (tenant_id, created_at DESC);
CREATE INDEX console_sessions_key_idx ON console_sessions (api_key_id) WHERE revoked_at IS NULL;
CREATE TRIGGER console_sessions_tenant_open BEFORE INSERT ON console_sessions
  FOR EACH ROW EXECUTE FUNCTION oncely_refuse_closed_tenant();

-- The console's search: uploads by the start of their file name, or of their key.
CREATE INDEX uploads_file_name_prefix_idx ON uploads (tenant_id, lower(file_name) text_pattern_ops);
CREATE INDEX uploads_key_prefix_idx ON uploads (tenant_id, idempotency_key text_pattern_ops);
