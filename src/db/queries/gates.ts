// An upload's availability while its pipeline's gates run: `gated` from the commit, then
// `available` once they pass, or `rejected` for good.
import type { Pool, Queryable } from '../pool';
import { withTransaction } from '../pool';
import { replaceUploadAnswer } from './idempotency-keys';

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
        WHERE id = $1 AND availability <> 'rejected' AND deleted_at IS NULL`,
      [uploadId, reason],
    );
    if (!res.rowCount) return;
    await replaceUploadAnswer(tx, uploadId, answer);
  });
}
