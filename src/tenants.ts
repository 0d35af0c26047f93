// Creating tenants and API keys. The plain key is returned once and never stored.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Pool, Queryable } from './db/pool';
import { withTransaction } from './db/pool';
import { heldScopes, type Credential, type Scope } from './credentials';
import {
  findActiveKeyByHash,
  insertApiKey,
  insertTenant,
  touchApiKey,
  type ApiKeyRow,
  type DedupeMode,
  type TenantRow,
} from './db/queries/tenants';

export { OPERATOR_TENANT_ID } from './db/queries/tenants';

/** API keys are stored and looked up only by this hash. */
export function hashApiKey(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

/** When this process last recorded each key's use: a use is written at most once a minute per key. */
const lastTouched = new Map<string, number>();
const TOUCH_EVERY_MS = 60_000;

/** Records that the key was used, at most once a minute; a failure to record it never fails the request. */
function noteUse(db: Queryable, id: string): void {
  const now = Date.now();
  if (now - (lastTouched.get(id) ?? 0) < TOUCH_EVERY_MS) return;
  if (lastTouched.size > 10_000) lastTouched.clear();
  lastTouched.set(id, now);
  touchApiKey(db, id).catch(() => lastTouched.delete(id));
}

/** The tenant and the key's principal (its id, label and scopes) of an active API key; the use is recorded. */
export async function lookupApiKey(db: Queryable, token: string): Promise<Credential | undefined> {
  const row = await findActiveKeyByHash(db, hashApiKey(token));
  if (row) noteUse(db, row.id);
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
