// The data keys of the payload codec (migration 026): one live key per scope, found or
// created by whichever process needs it first; destroyed with what they protect.
import { statement, type Queryable } from '../pool';
import type { TenantRow } from '../../codec/payload-scope';

export interface PayloadKeyRow {
  id: string;
  /** Null once destroyed. */
  wrapped: string | null;
  scope: string;
}

/** The scope's live key, if it has one. */
export async function findLivePayloadKey(db: Queryable, scope: string): Promise<PayloadKeyRow | undefined> {
  const res = await db.query<PayloadKeyRow>(
    statement('find-live-payload-key', 'SELECT id, wrapped, scope FROM payload_keys WHERE scope = $1 AND destroyed_at IS NULL', [scope]),
  );
  return res.rows[0];
}

/**
 * The scope's live key, recorded first when it has none (then `wrapped` is the one given):
 * one round trip either way; a live key found is marked used now (a run key unused for long
 * may be removed: removeUnusedRunKey). Undefined only when another process recorded the
 * scope's key during this statement (its snapshot cannot see it): read it then.
 */
export async function ensurePayloadKey(
  db: Queryable,
  k: { id: string; scope: string; wrapped: string; tenantId?: string; uploadId?: string },
): Promise<PayloadKeyRow | undefined> {
  const res = await db.query<PayloadKeyRow>(
    statement(
      'ensure-payload-key',
      `WITH made AS (
         INSERT INTO payload_keys (id, scope, tenant_id, wrapped)
         VALUES ($1, $2, coalesce($3::uuid, (SELECT tenant_id FROM uploads WHERE id = $4::uuid)), $5)
         ON CONFLICT (scope) WHERE destroyed_at IS NULL DO NOTHING
         RETURNING id, wrapped, scope),
       found AS (
         UPDATE payload_keys SET used_at = now() WHERE scope = $2 AND destroyed_at IS NULL
         RETURNING id, wrapped, scope)
       SELECT id, wrapped, scope FROM made
       UNION ALL
       SELECT id, wrapped, scope FROM found
       LIMIT 1`,
      [k.id, k.scope, k.tenantId ?? null, k.uploadId ?? null, k.wrapped],
    ),
  );
  return res.rows[0];
}

/** The keys with these ids (a destroyed one with `wrapped` null; an unknown id is left out). */
export async function findPayloadKeys(db: Queryable, ids: string[]): Promise<PayloadKeyRow[]> {
  const res = await db.query<PayloadKeyRow>(
    statement('find-payload-keys', 'SELECT id, wrapped, scope FROM payload_keys WHERE id = ANY($1::uuid[])', [ids]),
  );
  return res.rows;
}

const TENANT_OF: Record<TenantRow, string> = {
  upload: 'SELECT tenant_id FROM uploads WHERE id = $1::uuid',
  event: 'SELECT tenant_id FROM webhook_events WHERE id = $1',
  endpoint: 'SELECT tenant_id FROM webhook_endpoints WHERE id = $1::uuid',
  job: 'SELECT tenant_id FROM reprocess_jobs WHERE id = $1::uuid',
  batch: 'SELECT tenant_id FROM import_batches WHERE id = $1::uuid',
};

/** The tenant a run is about, from its row (its payloads go under the tenant's key). */
export async function tenantOfRow(db: Queryable, row: TenantRow, id: string): Promise<string | undefined> {
  const res = await db.query<{ tenant_id: string }>(statement(`tenant-of-${row}`, TENANT_OF[row], [id]));
  return res.rows[0]?.tenant_id;
}

/** Destroys the live keys of these scopes (in the caller's transaction); answers how many. */
export async function destroyPayloadKeys(db: Queryable, scopes: string[]): Promise<number> {
  const res = await db.query(
    `UPDATE payload_keys SET wrapped = NULL, destroyed_at = now() WHERE scope = ANY($1::text[]) AND destroyed_at IS NULL`,
    [scopes],
  );
  return res.rowCount ?? 0;
}

/** Every live key (rotation re-wraps them under a new SECRETS_KEY), in pages. */
export async function pageLivePayloadKeys(db: Queryable, after: string | null, limit: number): Promise<PayloadKeyRow[]> {
  const res = await db.query<PayloadKeyRow>(
    `SELECT id, wrapped, scope FROM payload_keys WHERE destroyed_at IS NULL AND ($1::uuid IS NULL OR id > $1::uuid) ORDER BY id LIMIT $2`,
    [after, limit],
  );
  return res.rows;
}

/** Replaces a live key's wrapping (the key itself is unchanged). */
export async function rewrapPayloadKey(db: Queryable, id: string, before: string, wrapped: string): Promise<boolean> {
  const res = await db.query('UPDATE payload_keys SET wrapped = $3 WHERE id = $1 AND wrapped = $2 AND destroyed_at IS NULL', [
    id,
    before,
    wrapped,
  ]);
  return (res.rowCount ?? 0) > 0;
}

/**
 * Live run keys unused for `seconds` that no upload names (its run committed none), a page
 * after `after` by id: housekeeping asks Temporal about each (removeUnusedRunKey).
 */
export async function unusedRunKeys(
  db: Queryable,
  seconds: number,
  after: string | null,
  limit: number,
): Promise<{ id: string; scope: string }[]> {
  const res = await db.query<{ id: string; scope: string }>(
    `SELECT p.id, p.scope FROM payload_keys p
      WHERE p.destroyed_at IS NULL AND p.scope LIKE 'run:%' AND coalesce(p.used_at, p.created_at) < now() - make_interval(secs => $1)
        AND ($2::uuid IS NULL OR p.id > $2::uuid)
        AND NOT EXISTS (SELECT 1 FROM uploads u WHERE u.tenant_id = p.tenant_id AND u.workflow_id = substr(p.scope, 5))
      ORDER BY p.id LIMIT $3`,
    [seconds, after, limit],
  );
  return res.rows;
}

/** Removes a run key if it is still unused for `seconds` (a process that took it to seal since keeps it). */
export async function removeUnusedRunKey(db: Queryable, id: string, seconds: number): Promise<boolean> {
  const res = await db.query(
    `DELETE FROM payload_keys WHERE id = $1 AND destroyed_at IS NULL AND coalesce(used_at, created_at) < now() - make_interval(secs => $2)`,
    [id, seconds],
  );
  return (res.rowCount ?? 0) > 0;
}
