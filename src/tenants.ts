// Creating tenants and API keys. The plain key is returned once and never stored.
import { randomBytes, randomUUID } from 'node:crypto';
import type { Pool } from './db/pool';
import { withTransaction } from './db/pool';
import { insertApiKey, insertTenant } from './db/queries/tenants';
import { hashApiKey } from './api/middleware/auth';

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
