// Tenants and their API keys. Keys are stored only as SHA-256 hashes.
import { statement, type Queryable } from '../pool';
import { pageInCreationOrder, type ListPosition } from './keyset';

/** Reserved tenant (migration 005) that holds the idempotency keys of operator routes. */
export const OPERATOR_TENANT_ID = '00000000-0000-0000-0000-000000000000';

export type DedupeMode = 'off' | 'sha256';

export interface TenantRow {
  id: string;
  name: string;
  dedupe: DedupeMode;
  created_at: Date;
}

export interface ApiKeyRow {
  id: string;
  label: string;
  /** null: every scope. */
  scopes: string[] | null;
  created_at: Date;
  revoked_at: Date | null;
  /** When it last authenticated a request (to the minute); null: never. */
  last_used_at: Date | null;
}

export async function insertTenant(db: Queryable, id: string, name: string, dedupe: DedupeMode = 'off'): Promise<TenantRow> {
  const res = await db.query<TenantRow>(
    'INSERT INTO tenants (id, name, dedupe) VALUES ($1, $2, $3) RETURNING id, name, dedupe, created_at',
    [id, name, dedupe],
  );
  return res.rows[0]!;
}

/** A tenant with its settings and, once its deletion began, when (`closed_at`) and when it ended (`erased_at`). */
export type TenantSettingsRow = TenantRow & {
  retention_days: number | null;
  image_specs: 'presets' | 'any';
  /** Hours a deleted upload can be restored (0: erased at once). */
  delete_grace_hours: number;
  /** Its default storage target (null: the instance's store) and the residency its uploads must have (null: any). */
  default_storage_target: string | null;
  residency: string | null;
  closed_at: Date | null;
  erased_at: Date | null;
};

const TENANT_COLUMNS =
  'id, name, dedupe, created_at, retention_days, image_specs, delete_grace_hours, default_storage_target, residency, closed_at, erased_at';

/** The tenant (not the reserved operator tenant), deleted or not. */
/** A page of tenants (the reserved operator tenant left out) in creation order, with their settings. */
export function pageTenants(db: Queryable, page: { after?: ListPosition; limit: number }) {
  return pageInCreationOrder<TenantSettingsRow>(
    db,
    { columns: '*', from: 'tenants', where: 'id <> $1', values: [OPERATOR_TENANT_ID] },
    page,
  );
}

export interface TenantUsage {
  tenant_id: string;
  uploads: string;
  bytes: string;
  /** Deleted and not yet erased. */
  pending_deletions: string;
  /** Under a legal hold. */
  held: string;
}

/** Live uploads, their bytes, and deletions not yet erased, of each tenant named (one pass over their uploads). */
export async function tenantUsage(db: Queryable, tenantIds: string[]): Promise<TenantUsage[]> {
  const res = await db.query<TenantUsage>(
    `SELECT tenant_id, count(*) FILTER (WHERE deleted_at IS NULL) AS uploads,
            coalesce(sum(bytes) FILTER (WHERE deleted_at IS NULL), 0) AS bytes,
            count(*) FILTER (WHERE deleted_at IS NOT NULL AND erased_at IS NULL) AS pending_deletions,
            count(*) FILTER (WHERE hold_reason IS NOT NULL) AS held
       FROM uploads WHERE tenant_id = ANY($1::uuid[]) GROUP BY tenant_id`,
    [tenantIds],
  );
  return res.rows;
}

export async function findTenant(db: Queryable, id: string): Promise<TenantSettingsRow | undefined> {
  const res = await db.query<TenantSettingsRow>(`SELECT ${TENANT_COLUMNS} FROM tenants WHERE id = $1 AND id <> $2`, [
    id,
    OPERATOR_TENANT_ID,
  ]);
  return res.rows[0];
}

/** Changes the settings given (an absent one is kept); undefined when there is no such tenant or it is deleted. */
export async function setTenantSettings(
  db: Queryable,
  id: string,
  s: { retentionDays?: number | null; imageSpecs?: 'presets' | 'any'; deleteGraceHours?: number; residency?: string | null },
): Promise<TenantSettingsRow | undefined> {
  const res = await db.query<TenantSettingsRow>(
    `UPDATE tenants SET retention_days = CASE WHEN $2 THEN $3 ELSE retention_days END, image_specs = coalesce($4, image_specs),
                        delete_grace_hours = coalesce($5, delete_grace_hours),
                        residency = CASE WHEN $6 THEN $7 ELSE residency END
      WHERE id = $1 AND closed_at IS NULL RETURNING ${TENANT_COLUMNS}`,
    [
      id,
      s.retentionDays !== undefined,
      s.retentionDays ?? null,
      s.imageSpecs ?? null,
      s.deleteGraceHours ?? null,
      s.residency !== undefined,
      s.residency ?? null,
    ],
  );
  return res.rows[0];
}

export async function insertApiKey(
  db: Queryable,
  keyHash: Buffer,
  tenantId: string,
  label: string,
  scopes: readonly string[] | null = null,
): Promise<ApiKeyRow> {
  const res = await db.query<ApiKeyRow>(
    'INSERT INTO api_keys (key_hash, tenant_id, label, scopes) VALUES ($1, $2, $3, $4) RETURNING id, label, scopes, created_at, revoked_at, last_used_at',
    [keyHash, tenantId, label, scopes],
  );
  return res.rows[0]!;
}

export async function findActiveKeyByHash(
  db: Queryable,
  keyHash: Buffer,
): Promise<{ tenant_id: string; id: string; label: string; scopes: string[] | null } | undefined> {
  const res = await db.query<{ tenant_id: string; id: string; label: string; scopes: string[] | null }>(
    statement('find_key_by_hash', 'SELECT tenant_id, id, label, scopes FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL', [
      keyHash,
    ]),
  );
  return res.rows[0];
}

/** Records a use of the key, unless one was recorded within the last minute. */
export async function touchApiKey(db: Queryable, id: string): Promise<void> {
  await db.query(
    statement(
      'touch_api_key',
      "UPDATE api_keys SET last_used_at = now() WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')",
      [id],
    ),
  );
}

/** A page of the tenant's keys (revoked ones included) in creation order, after `after`; `limit` rows at most. */
export function pageApiKeys(db: Queryable, tenantId: string, page: { after?: ListPosition; limit: number }) {
  return pageInCreationOrder<ApiKeyRow>(
    db,
    { columns: 'id, label, scopes, created_at, revoked_at, last_used_at', from: 'api_keys', where: 'tenant_id = $1', values: [tenantId] },
    page,
  );
}

/** Revokes one of the tenant's keys; false when the tenant has no such (unrevoked) key. */
export async function revokeApiKey(db: Queryable, tenantId: string, id: string): Promise<boolean> {
  const res = await db.query('UPDATE api_keys SET revoked_at = now() WHERE tenant_id = $1 AND id = $2 AND revoked_at IS NULL', [
    tenantId,
    id,
  ]);
  return res.rowCount === 1;
}

/** One of the tenant's unrevoked keys, by id (a derived credential's parent). */
export async function findActiveKeyById(
  db: Queryable,
  tenantId: string,
  id: string,
): Promise<{ id: string; label: string; scopes: string[] | null } | undefined> {
  const res = await db.query<{ id: string; label: string; scopes: string[] | null }>(
    'SELECT id, label, scopes FROM api_keys WHERE tenant_id = $1 AND id = $2 AND revoked_at IS NULL',
    [tenantId, id],
  );
  return res.rows[0];
}
