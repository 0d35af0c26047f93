// Legal holds on uploads: placing and releasing one (each change numbered, its event written
// in the same transaction), and what deletion, retention and tenant deletion ask of them.
import type { Queryable } from '../pool';

export interface HoldRow {
  id: string;
  tenant_id: string;
  deleted_at: Date | null;
  hold_reason: string | null;
  held_at: Date | null;
  held_by: string | null;
  hold_changes: number;
  /** Where its original is (an address: src/storage/address.ts). */
  storage_key: string;
  /** While a deletion's restore window is open (a hold then keeps the upload past it). */
  restorable_until: Date | null;
}

const HOLD_COLUMNS = 'id, tenant_id, deleted_at, hold_reason, held_at, held_by, hold_changes, storage_key, restorable_until';

/**
 * The upload's hold, its row locked until the transaction ends, with whether its tenant is
 * closed. The tenant's row is share-locked: a hold and the tenant's close are ordered, so no
 * hold is placed on a tenant whose deletion has begun.
 */
export async function lockHold(tx: Queryable, tenantId: string, id: string): Promise<(HoldRow & { tenant_closed: boolean }) | undefined> {
  const res = await tx.query<HoldRow & { tenant_closed: boolean }>(
    `SELECT ${HOLD_COLUMNS.split(', ')
      .map((c) => `u.${c}`)
      .join(', ')}, t.closed_at IS NOT NULL AS tenant_closed
       FROM uploads u JOIN tenants t ON t.id = u.tenant_id
      WHERE u.tenant_id = $1 AND u.id = $2
      FOR UPDATE OF u FOR SHARE OF t`,
    [tenantId, id],
  );
  return res.rows[0];
}

/** Places (reason) or releases (null) the hold: one more change. */
export async function setHold(tx: Queryable, id: string, reason: string | null, by: string): Promise<HoldRow> {
  const res = await tx.query<HoldRow>(
    `UPDATE uploads SET hold_reason = $2, held_at = CASE WHEN $2::text IS NULL THEN NULL ELSE now() END,
                        held_by = CASE WHEN $2::text IS NULL THEN NULL ELSE $3 END, hold_changes = hold_changes + 1
      WHERE id = $1 RETURNING ${HOLD_COLUMNS}`,
    [id, reason, by],
  );
  return res.rows[0]!;
}

/** How many of the tenant's uploads are held. */
export async function countHeld(db: Queryable, tenantId: string): Promise<number> {
  const res = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM uploads WHERE tenant_id = $1 AND hold_reason IS NOT NULL', [
    tenantId,
  ]);
  return res.rows[0]!.n;
}

/** Whether another held upload shares the object at `storageKey` (dedupe): its store hold then stays. */
export async function heldElsewhere(db: Queryable, storageKey: string, uploadId: string): Promise<boolean> {
  const res = await db.query('SELECT 1 FROM uploads WHERE storage_key = $1 AND id <> $2 AND hold_reason IS NOT NULL LIMIT 1', [
    storageKey,
    uploadId,
  ]);
  return (res.rowCount ?? 0) > 0;
}

/** Whether the upload is under a legal hold now. */
export async function isHeld(db: Queryable, uploadId: string): Promise<boolean> {
  const res = await db.query('SELECT 1 FROM uploads WHERE id = $1 AND hold_reason IS NOT NULL', [uploadId]);
  return (res.rowCount ?? 0) > 0;
}
