// Creating tenants and API keys. The plain key is returned once and never stored.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Pool, Queryable } from './db/pool';
import { withTransaction } from './db/pool';
import { findTenantIdByKeyHash, insertApiKey, insertTenant } from './db/queries/tenants';

/** API keys are stored and looked up only by this hash. */
export function hashApiKey(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

export function tenantForApiKey(db: Queryable, token: string): Promise<string | undefined> {
  return findTenantIdByKeyHash(db, hashApiKey(token));
}

export function newApiKey(): string {
  return `onc_${randomBytes(24).toString('base64url')}`;
}

export async function createTenant(pool: Pool, name: string, apiKey: string = newApiKey()): Promise<{ tenantId: string; apiKey: string }> {
  const tenantId = randomUUID();
  await withTransaction(pool, async (tx) => {
    await insertTenant(tx, tenantId, name);
    await insertApiKey(tx, hashApiKey(apiKey), tenantId, 'initial');
  });
  return { tenantId, apiKey };
}
