// Housekeeping writes: key rows past their TTL become tombstones; tombstones past their
// window go; objects are checked against the uploads and renditions that reference them.
import type { Pool, Queryable } from '../pool';
import { withTransaction } from '../pool';

/** Moves expired key rows to tombstones in one transaction; returns how many. */
export async function expireKeys(
  pool: Pool,
  tombstoneSeconds: number,
  batch = 1000,
): Promise<{ expired: number; tombstonesRemoved: number }> {
  return withTransaction(pool, async (tx) => {
    const moved = await tx.query(
      `WITH expired AS (
         DELETE FROM idempotency_keys
          WHERE (tenant_id, key) IN (SELECT tenant_id, key FROM idempotency_keys WHERE expires_at <= now() LIMIT $2)
          RETURNING tenant_id, key, fingerprint, upload_id)
       INSERT INTO idempotency_tombstones (tenant_id, key, fingerprint, upload_id, expires_at)
       SELECT tenant_id, key, fingerprint, upload_id, now() + make_interval(secs => $1) FROM expired
       ON CONFLICT (tenant_id, key) DO NOTHING`,
      [tombstoneSeconds, batch],
    );
    // A failed import's row shows its failure as long as its key answers it.
    await tx.query(
      `DELETE FROM imports i WHERE state = 'failed'
         AND NOT EXISTS (SELECT 1 FROM idempotency_keys k WHERE k.tenant_id = i.tenant_id AND k.key = i.idempotency_key)`,
    );
    const gone = await tx.query('DELETE FROM idempotency_tombstones WHERE expires_at <= now()');
    return { expired: moved.rowCount ?? 0, tombstonesRemoved: gone.rowCount ?? 0 };
  });
}

/** True when an upload, a rendition or a resumable session (its object or tail) names this object. */
export async function isReferenced(db: Queryable, storageKey: string): Promise<boolean> {
  const res = await db.query(
    `SELECT 1 FROM uploads WHERE storage_key = $1 UNION ALL SELECT 1 FROM renditions WHERE storage_key = $1
     UNION ALL SELECT 1 FROM resumable_sessions WHERE storage_key = $1 OR tail_key = $1 LIMIT 1`,
    [storageKey],
  );
  return (res.rowCount ?? 0) > 0;
}

/** (tenant, key) pairs claimed by a request that has not answered yet. */
export async function openClaims(db: Queryable): Promise<{ tenant_id: string; key: string }[]> {
  return (await db.query<{ tenant_id: string; key: string }>('SELECT tenant_id, key FROM idempotency_keys WHERE response_status IS NULL'))
    .rows;
}
