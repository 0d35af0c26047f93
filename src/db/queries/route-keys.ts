// Idempotency for the non-upload POST routes (no workflow): claim the key row before the
// handler runs, store the exact response after it.
import type { Queryable } from '../pool';

export interface RouteKeyRow {
  fingerprint: string;
  response_status: number | null;
  response_body: string | null;
  stale: boolean;
  expired: boolean;
}

/** Claims (tenant, key) for this request; returns undefined when claimed, else the existing row. */
export async function claimRouteKey(
  db: Queryable,
  k: { tenantId: string; key: string; fingerprint: string; route: string; ttlSeconds: number; staleSeconds: number },
): Promise<RouteKeyRow | undefined> {
  // A claim whose request died without answering is taken over after `staleSeconds`.
  await db.query(
    `DELETE FROM idempotency_keys WHERE tenant_id = $1 AND key = $2 AND response_status IS NULL AND created_at < now() - make_interval(secs => $3)`,
    [k.tenantId, k.key, k.staleSeconds],
  );
  const claimed = await db.query(
    `INSERT INTO idempotency_keys (tenant_id, key, fingerprint, route, created_at, expires_at)
     VALUES ($1, $2, $3, $4, now(), now() + make_interval(secs => $5))
     ON CONFLICT (tenant_id, key) DO NOTHING`,
    [k.tenantId, k.key, k.fingerprint, k.route, k.ttlSeconds],
  );
  if (claimed.rowCount === 1) return undefined;
  const res = await db.query<RouteKeyRow>(
    `SELECT fingerprint, response_status, response_body, false AS stale, expires_at <= now() AS expired
       FROM idempotency_keys WHERE tenant_id = $1 AND key = $2
     UNION ALL
     SELECT fingerprint, NULL, NULL, false, true FROM idempotency_tombstones WHERE tenant_id = $1 AND key = $2
     LIMIT 1`,
    [k.tenantId, k.key],
  );
  return res.rows[0];
}

export async function completeRouteKey(db: Queryable, tenantId: string, key: string, status: number, body: string): Promise<void> {
  await db.query(
    'UPDATE idempotency_keys SET response_status = $3, response_body = $4, completed_at = now() WHERE tenant_id = $1 AND key = $2 AND response_status IS NULL',
    [tenantId, key, status, body],
  );
}

/** Frees a claim whose request failed without an answer worth keeping (5xx, crash). */
export async function releaseRouteKey(db: Queryable, tenantId: string, key: string): Promise<void> {
  await db.query('DELETE FROM idempotency_keys WHERE tenant_id = $1 AND key = $2 AND response_status IS NULL', [tenantId, key]);
}
