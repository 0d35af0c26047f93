// Storage targets (migration 038): a tenant's registered buckets, its default and required
// residency, and whether anything still lives on a target.
import type { S3Encryption } from '../../storage/s3-encryption';
import type { Queryable } from '../pool';
import { pageInCreationOrder, type ListPosition } from './keyset';

export interface StorageTargetRow {
  id: string;
  tenant_id: string;
  name: string;
  endpoint: string;
  bucket: string;
  region: string;
  prefix: string;
  force_path_style: boolean;
  access_key_id: string;
  /** Sealed (src/secret-box.ts, context storageTargetSecretContext). */
  secret_access_key: string;
  residency: string | null;
  /** Its own server-side encryption; null: the instance's (S3_SSE). */
  encryption: S3Encryption | null;
  version: number;
  created_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
}

const COLUMNS =
  'id, tenant_id, name, endpoint, bucket, region, prefix, force_path_style, access_key_id, secret_access_key, residency, encryption, version, created_at, updated_at, deleted_at';

export type NewStorageTarget = Omit<StorageTargetRow, 'version' | 'created_at' | 'updated_at' | 'deleted_at'>;

export async function insertStorageTarget(tx: Queryable, t: NewStorageTarget): Promise<StorageTargetRow> {
  const res = await tx.query<StorageTargetRow>(
    `INSERT INTO storage_targets (id, tenant_id, name, endpoint, bucket, region, prefix, force_path_style, access_key_id, secret_access_key, residency, encryption)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING ${COLUMNS}`,
    [
      t.id,
      t.tenant_id,
      t.name,
      t.endpoint,
      t.bucket,
      t.region,
      t.prefix,
      t.force_path_style,
      t.access_key_id,
      t.secret_access_key,
      t.residency,
      t.encryption && JSON.stringify(t.encryption),
    ],
  );
  return res.rows[0]!;
}

/** A target by id, removed ones included (objects may still name it while it is being emptied). */
export async function findStorageTarget(db: Queryable, id: string): Promise<StorageTargetRow | undefined> {
  return (await db.query<StorageTargetRow>(`SELECT ${COLUMNS} FROM storage_targets WHERE id = $1`, [id])).rows[0];
}

/** The tenant's live target with this id or name. */
export async function findTenantTarget(db: Queryable, tenantId: string, idOrName: string): Promise<StorageTargetRow | undefined> {
  const res = await db.query<StorageTargetRow>(
    `SELECT ${COLUMNS} FROM storage_targets
      WHERE tenant_id = $1 AND deleted_at IS NULL AND (name = $2 OR id::text = $2)`,
    [tenantId, idOrName],
  );
  return res.rows[0];
}

/** A page of the tenant's live targets in creation order, after `after`. */
export function pageTenantTargets(db: Queryable, tenantId: string, page: { after?: ListPosition; limit: number }) {
  return pageInCreationOrder<StorageTargetRow>(
    db,
    { columns: COLUMNS, from: 'storage_targets', where: 'tenant_id = $1 AND deleted_at IS NULL', values: [tenantId] },
    page,
  );
}

/** New credentials (sealed) for a target: one more version. */
export async function setTargetCredentials(
  tx: Queryable,
  tenantId: string,
  id: string,
  c: { access_key_id: string; secret_access_key: string },
): Promise<StorageTargetRow | undefined> {
  const res = await tx.query<StorageTargetRow>(
    `UPDATE storage_targets SET access_key_id = $3, secret_access_key = $4, version = version + 1, updated_at = now()
      WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL RETURNING ${COLUMNS}`,
    [tenantId, id, c.access_key_id, c.secret_access_key],
  );
  return res.rows[0];
}

export interface TargetUse {
  uploads: number;
  sessions: number;
  isDefault: boolean;
}

/** What still lives on a target: uploads (renditions live beside them), open sessions, and whether it is the default. */
export async function targetUse(db: Queryable, tenantId: string, id: string): Promise<TargetUse> {
  const address = `targets/${id}/%`;
  const res = await db.query<TargetUse>(
    `SELECT (SELECT count(*)::int FROM uploads WHERE storage_target = $2 AND tenant_id = $1) AS uploads,
            (SELECT count(*)::int FROM resumable_sessions WHERE tenant_id = $1 AND storage_key LIKE $3) AS sessions,
            coalesce((SELECT default_storage_target = $2 FROM tenants WHERE id = $1), false) AS "isDefault"`,
    [tenantId, id, address],
  );
  return res.rows[0]!;
}

/** Removes a target nothing lives on; false when something does (checked under the tenant's lock by the caller). */
export async function removeStorageTarget(tx: Queryable, tenantId: string, id: string): Promise<boolean> {
  const res = await tx.query('UPDATE storage_targets SET deleted_at = now() WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL', [
    tenantId,
    id,
  ]);
  return (res.rowCount ?? 0) > 0;
}

export interface TenantPlacement {
  default_storage_target: string | null;
  residency: string | null;
}

export async function tenantPlacement(db: Queryable, tenantId: string): Promise<TenantPlacement | undefined> {
  const res = await db.query<TenantPlacement>('SELECT default_storage_target, residency FROM tenants WHERE id = $1', [tenantId]);
  return res.rows[0];
}

/** Sets the tenant's default target (null: the instance's store). */
export async function setDefaultTarget(tx: Queryable, tenantId: string, targetId: string | null): Promise<void> {
  await tx.query('UPDATE tenants SET default_storage_target = $2 WHERE id = $1', [tenantId, targetId]);
}

/** Sets the residency the tenant's uploads must have (null: any). */
export async function setTenantResidency(tx: Queryable, tenantId: string, residency: string | null): Promise<void> {
  await tx.query('UPDATE tenants SET residency = $2 WHERE id = $1', [tenantId, residency]);
}

/** Every target ever registered, or a tenant's (removed ones too: the audit and the sweeps look at what each holds). */
export async function allStorageTargetIds(db: Queryable, tenantId?: string): Promise<string[]> {
  const res = await db.query<{ id: string }>('SELECT id FROM storage_targets WHERE $1::uuid IS NULL OR tenant_id = $1 ORDER BY id', [
    tenantId ?? null,
  ]);
  return res.rows.map((r) => r.id);
}
