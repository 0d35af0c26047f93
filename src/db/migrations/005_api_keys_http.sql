-- API keys get an id, so they can be listed and revoked over HTTP without the secret.
ALTER TABLE api_keys ADD COLUMN id uuid NOT NULL DEFAULT gen_random_uuid();
CREATE UNIQUE INDEX api_keys_id_idx ON api_keys (id);

-- Operator routes (tenant creation) keep their idempotency keys under this reserved tenant;
-- it has no API keys, so no request can act as it.
INSERT INTO tenants (id, name) VALUES ('00000000-0000-0000-0000-000000000000', 'operator') ON CONFLICT (id) DO NOTHING;
