-- Data keys for the payloads Oncely hands to Temporal (src/temporal/payload-codec.ts). Each
-- key belongs to one scope: an upload run (`run:{workflowId}`), one upload's other runs
-- (`upload:{uploadId}`), a tenant (`tenant:{tenantId}`) or the deployment. The key itself
-- is stored wrapped by SECRETS_KEY; destroying it (the upload's erasure, the tenant's
-- deletion) nulls the wrapped key, which leaves every payload sealed under it unreadable
-- wherever it was copied. A scope has at most one live key; a scope whose key was destroyed
-- gets a new one when it is used again (a key reused after its tombstone expired).
CREATE TABLE payload_keys (
  id           uuid PRIMARY KEY,
  scope        text NOT NULL,
  tenant_id    uuid,
  wrapped      text,
  created_at   timestamptz NOT NULL DEFAULT now(),
  destroyed_at timestamptz,
  CHECK ((wrapped IS NULL) = (destroyed_at IS NOT NULL))
);
CREATE UNIQUE INDEX payload_keys_live_scope ON payload_keys (scope) WHERE destroyed_at IS NULL;
CREATE INDEX payload_keys_tenant ON payload_keys (tenant_id) WHERE destroyed_at IS NULL;
