-- Deleting a tenant (DELETE /admin/tenants/{id}, the tenant-delete workflow): `closed_at`
-- when its deletion began, `erased_at` when its last personal data went. From `closed_at`
-- on nothing new is written for the tenant: an upload, its key row, a session, an import,
-- a credential, an endpoint or a new run's data key is refused here, whatever process or
-- cached credential tries, so the deletion's sweep cannot be outrun by a late commit.
ALTER TABLE tenants ADD COLUMN closed_at timestamptz, ADD COLUMN erased_at timestamptz;

CREATE FUNCTION oncely_refuse_closed_tenant() RETURNS trigger
  LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.tenant_id IS NOT NULL AND EXISTS (SELECT 1 FROM tenants WHERE id = NEW.tenant_id AND closed_at IS NOT NULL) THEN
    RAISE EXCEPTION 'tenant % is deleted', NEW.tenant_id USING ERRCODE = 'ONC01';
  END IF;
  RETURN NEW;
END;
$$;

DO $$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['uploads', 'idempotency_keys', 'resumable_sessions', 'imports', 'import_batches',
                           'api_keys', 'upload_tokens', 'webhook_endpoints'] LOOP
    EXECUTE format('CREATE TRIGGER %I BEFORE INSERT ON %I FOR EACH ROW EXECUTE FUNCTION oncely_refuse_closed_tenant()',
                   t || '_tenant_open', t);
  END LOOP;
END;
$$;

-- An upload run's own key (its input holds the file name): the run cannot even be started.
-- The tenant's other scopes stay open: the deletion's own runs seal under the tenant's key.
CREATE TRIGGER payload_keys_tenant_open BEFORE INSERT ON payload_keys
  FOR EACH ROW WHEN (NEW.scope LIKE 'run:%') EXECUTE FUNCTION oncely_refuse_closed_tenant();
