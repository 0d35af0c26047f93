// An upload's availability while its pipeline's gates run: `gated` from the commit, then
// `available` once they pass, or `rejected` for good.
import type { Pool, Queryable } from '../pool';
import { withTransaction } from '../pool';
import { replaceUploadAnswer } from './idempotency-keys';
import { releaseStoredBytes } from './byte-quotas';

export async function openUploadGate(db: Queryable, uploadId: string): Promise<void> {
  await db.query(`UPDATE uploads SET availability = 'available' WHERE id = $1 AND availability = 'gated'`, [uploadId]);
}

/**
 * Rejects the upload in one transaction: not served from now on, and its key's stored answer
 * becomes `answer` so later requests under the key get the rejection. Repeating it changes nothing.
 */
export async function rejectUpload(pool: Pool, uploadId: string, reason: string, answer: { status: number; body: string }): Promise<void> {
  await withTransaction(pool, async (tx) => {
    const res = await tx.query(
      `UPDATE uploads SET availability = 'rejected', rejection_reason = $2
        WHERE id = $1 AND availability <> 'rejected' AND deleted_at IS NULL RETURNING tenant_id, bytes`,
      [uploadId, reason],
    );
    const rejected = res.rows[0] as { tenant_id: string; bytes: string } | undefined;
    if (!rejected) return;
    // Its bytes are not kept: they stop counting against the tenant's stored bytes now.
    await releaseStoredBytes(tx, rejected.tenant_id, Number(rejected.bytes));
    await replaceUploadAnswer(tx, uploadId, answer);
  });
}
