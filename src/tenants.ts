// Creating tenants and API keys. The plain key is returned once and never stored.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Pool, Queryable } from './db/pool';
import { withTransaction } from './db/pool';
import { heldScopes, type Credential, type Scope } from './credentials';
import { findActiveKeyByHash, insertApiKey, insertTenant, type ApiKeyRow, type DedupeMode, type TenantRow } from './db/queries/tenants';

export { OPERATOR_TENANT_ID } from './db/queries/tenants';

/** API keys are stored and looked up only by this hash. */
export function hashApiKey(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

/** The tenant and the key's principal (its id, label and scopes) of an active API key. */
export async function lookupApiKey(db: Queryable, token: string): Promise<Credential | undefined> {
  const row = await findActiveKeyByHash(db, hashApiKey(token));
  return row && { tenantId: row.tenant_id, principal: { kind: 'key', id: row.id, label: row.label, scopes: heldScopes(row.scopes) } };
}

export async function tenantForApiKey(db: Queryable, token: string): Promise<string | undefined> {
  return (await lookupApiKey(db, token))?.tenantId;
}

export function newApiKey(): string {
  return `onc_${randomBytes(24).toString('base64url')}`;
}

export interface CreatedApiKey extends ApiKeyRow {
  key: string;
}

/** `scopes` null: a key holding every scope. */
export async function createApiKey(
  db: Queryable,
  tenantId: string,
  label: string,
  scopes: readonly Scope[] | null = null,
): Promise<CreatedApiKey> {
  const key = newApiKey();
  return { ...(await insertApiKey(db, hashApiKey(key), tenantId, label, scopes)), key };
}

/** A tenant with its first API key, in one transaction. */
export async function createTenantWithKey(
  pool: Pool,
  name: string,
  apiKey: string = newApiKey(),
  dedupe: DedupeMode = 'off',
): Promise<{ tenant: TenantRow; apiKey: CreatedApiKey }> {
  return withTransaction(pool, async (tx) => {
    const tenant = await insertTenant(tx, randomUUID(), name, dedupe);
    const row = await insertApiKey(tx, hashApiKey(apiKey), tenant.id, 'initial');
    return { tenant, apiKey: { ...row, key: apiKey } };
  });
}

export async function createTenant(
  pool: Pool,
  name: string,
  apiKey?: string,
  dedupe: DedupeMode = 'off',
): Promise<{ tenantId: string; apiKey: string }> {
  const created = await createTenantWithKey(pool, name, apiKey, dedupe);
  return { tenantId: created.tenant.id, apiKey: created.apiKey.key };
}
