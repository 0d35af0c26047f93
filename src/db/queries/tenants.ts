// Tenants and their API keys. Keys are stored only as SHA-256 hashes.
import { statement, type Queryable } from '../pool';

export async function insertTenant(db: Queryable, id: string, name: string): Promise<void> {
  await db.query('INSERT INTO tenants (id, name) VALUES ($1, $2)', [id, name]);
}

export async function insertApiKey(db: Queryable, keyHash: Buffer, tenantId: string, label: string): Promise<void> {
  await db.query('INSERT INTO api_keys (key_hash, tenant_id, label) VALUES ($1, $2, $3)', [keyHash, tenantId, label]);
}

export async function findTenantIdByKeyHash(db: Queryable, keyHash: Buffer): Promise<string | undefined> {
  const res = await db.query<{ tenant_id: string }>(
    statement('find_tenant_by_key_hash', 'SELECT tenant_id FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL', [keyHash]),
  );
  return res.rows[0]?.tenant_id;
}
