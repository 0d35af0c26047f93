// Deletion with erasure, step by step; each statement is safe to run again (a retried
// activity finds its work done and does nothing more).
import { releaseStored } from './byte-quotas';
import { withTransaction, type Pool, type Queryable } from '../pool';
import { replaceUploadAnswer } from './idempotency-keys';
import { destroyPayloadKeys } from './payload-keys';
import { objectInUse } from './records';
import { uploadScopes } from '../../codec/payload-scope';
import type { UploadRow } from './uploads';
import { eraseRecord } from './upload-record';
import { recordEvent } from './events';

/**
 * Sets the tombstone (once: the first deletion's time stays). From this commit the bytes
 * are not served and the downstream steps write no rendition or outcome. Undefined when
 * the tenant has no such upload.
 */
export async function tombstoneUpload(db: Queryable, tenantId: string, uploadId: string): Promise<UploadRow | 'held' | undefined> {
  const res = await db.query<UploadRow>(
    `UPDATE uploads SET status = 'deleted', deleted_at = coalesce(deleted_at, now())
      WHERE tenant_id = $1 AND id = $2 AND hold_reason IS NULL
      RETURNING *`,
    [tenantId, uploadId],
  );
  if (res.rows[0]) return res.rows[0];
  // Not tombstoned: no such upload, or one under a legal hold (which nothing deletes).
  const held = await db.query('SELECT 1 FROM uploads WHERE tenant_id = $1 AND id = $2 AND hold_reason IS NOT NULL', [tenantId, uploadId]);
  return held.rows.length ? 'held' : undefined;
}

/**
 * Live uploads whose time is up: by their own expires_at, or older than their tenant's
 * retention_days (a held upload's time is never up); at most `limit` of each kind. Both are index range scans over live rows only.
 */
export async function dueUploads(db: Queryable, limit: number): Promise<{ id: string; tenant_id: string; idempotency_key: string }[]> {
  const res = await db.query<{ id: string; tenant_id: string; idempotency_key: string }>(
    `(SELECT id, tenant_id, idempotency_key FROM uploads
       WHERE expires_at IS NOT NULL AND deleted_at IS NULL AND expires_at <= now() AND hold_reason IS NULL ORDER BY expires_at LIMIT $1)
     UNION
     (SELECT u.id, u.tenant_id, u.idempotency_key FROM tenants t
        CROSS JOIN LATERAL (SELECT id, tenant_id, idempotency_key FROM uploads
                             WHERE tenant_id = t.id AND deleted_at IS NULL AND hold_reason IS NULL
                               AND created_at <= now() - t.retention_days * interval '1 day'
                             ORDER BY created_at LIMIT $1) u
       WHERE t.retention_days IS NOT NULL)`,
    [limit],
  );
  return res.rows;
}

/** The upload's rendition and image variant rows, removed once their objects are gone. */
export async function deleteRenditionRows(db: Queryable, uploadId: string): Promise<void> {
  await db.query('DELETE FROM renditions WHERE upload_id = $1', [uploadId]);
  await db.query('DELETE FROM image_variants WHERE upload_id = $1', [uploadId]);
}

/**
 * Gives up the upload's claim on its stored object, in one transaction: a shared object's
 * count goes down (its row goes at 0) only the first time. Answers whether the bytes may now
 * be deleted — no counted share and no other unreleased upload names them — decided in the
 * same transaction that took the count, whose row lock orders it against a new upload
 * sharing the bytes.
 */
export async function releaseObject(pool: Pool, uploadId: string): Promise<{ storageKey: string; bytes: number; unused: boolean }> {
  return withTransaction(pool, async (tx) => {
    const row = (
      await tx.query<{ storage_key: string; bytes: string; object_released: boolean; tenant_id: string }>(
        'SELECT storage_key, bytes, object_released, tenant_id FROM uploads WHERE id = $1 FOR UPDATE',
        [uploadId],
      )
    ).rows[0];
    if (!row) throw new Error(`upload ${uploadId} is gone`);
    if (!row.object_released) {
      const shared = await tx.query<{ refs: number }>(
        'SELECT refs FROM stored_objects WHERE tenant_id = $1 AND storage_key = $2 FOR UPDATE',
        [row.tenant_id, row.storage_key],
      );
      if (shared.rows[0] && shared.rows[0].refs > 1) {
        await tx.query('UPDATE stored_objects SET refs = refs - 1 WHERE tenant_id = $1 AND storage_key = $2', [
          row.tenant_id,
          row.storage_key,
        ]);
      } else if (shared.rows[0]) {
        await tx.query('DELETE FROM stored_objects WHERE tenant_id = $1 AND storage_key = $2', [row.tenant_id, row.storage_key]);
      }
      await tx.query('UPDATE uploads SET object_released = true WHERE id = $1', [uploadId]);
    }
    return { storageKey: row.storage_key, bytes: Number(row.bytes), unused: !(await objectInUse(tx, row.storage_key)) };
  });
}

/**
 * Removes the personal metadata (the file name, probed media, the steps' outcomes, the upload
 * token's subject and metadata, the upload's own metadata, tags and their versions) and marks the upload erased;
 * the key's stored answer becomes `gone` (410), so a replay of the original request under
 * its key no longer carries the name, or a Location to bytes that are gone. The data keys of
 * the upload's runs are destroyed in the same transaction: what Temporal keeps of them
 * (inputs with the name, the token's subject and metadata) can no longer be opened.
 */
export async function scrubUpload(
  pool: Pool,
  uploadId: string,
  gone: { status: number; body: string },
): Promise<{ deletedAt: Date; erasedAt: Date; first: boolean }> {
  return withTransaction(pool, async (tx) => {
    const before = await tx.query<{ erased_at: Date | null }>('SELECT erased_at FROM uploads WHERE id = $1 FOR UPDATE', [uploadId]);
    const res = await tx.query<{ deleted_at: Date; erased_at: Date; workflow_id: string | null }>(
      `UPDATE uploads SET file_name = NULL, media = NULL, processing_reason = NULL, subject = NULL, token_metadata = NULL,
                          erased_at = coalesce(erased_at, now())
        WHERE id = $1 RETURNING deleted_at, erased_at, workflow_id`,
      [uploadId],
    );
    await tx.query('DELETE FROM upload_steps WHERE upload_id = $1', [uploadId]);
    if (!before.rows[0]?.erased_at) await releaseStored(tx, uploadId);
    await eraseRecord(tx, uploadId);
    await replaceUploadAnswer(tx, uploadId, gone);
    await destroyPayloadKeys(tx, uploadScopes(uploadId, res.rows[0]!.workflow_id));
    return { deletedAt: res.rows[0]!.deleted_at, erasedAt: res.rows[0]!.erased_at, first: !before.rows[0]?.erased_at };
  });
}

/** The restore window opens: until `graceSeconds` after the tombstone. */
export async function openRestoreWindow(db: Queryable, uploadId: string, graceSeconds: number): Promise<Date | undefined> {
  const res = await db.query<{ restorable_until: Date }>(
    `UPDATE uploads SET restorable_until = deleted_at + make_interval(secs => $2)
      WHERE id = $1 AND deleted_at IS NOT NULL AND erased_at IS NULL RETURNING restorable_until`,
    [uploadId, graceSeconds],
  );
  return res.rows[0]?.restorable_until;
}

/**
 * Takes the deletion back within its window, in one transaction with its upload.restored
 * event (numbered by `restores`): the row is live again as it was. Undefined when no window
 * is open (restored already, or erasing).
 */
export async function restoreUpload(
  pool: Pool,
  uploadId: string,
  event: (row: { tenant_id: string; restores: number; restored_at: Date }) => { id: string; type: string; payload: string },
): Promise<{ restoredAt: Date; eventId: string; tenantId: string; payload: string } | undefined> {
  return withTransaction(pool, async (tx) => {
    const res = await tx.query<{ tenant_id: string; restores: number; restored_at: Date }>(
      `UPDATE uploads SET status = CASE WHEN processed_at IS NOT NULL THEN 'processed' ELSE 'committed' END,
                          deleted_at = NULL, restorable_until = NULL, restores = restores + 1
        WHERE id = $1 AND restorable_until IS NOT NULL AND erased_at IS NULL
        RETURNING tenant_id, restores, now() AS restored_at`,
      [uploadId],
    );
    const row = res.rows[0];
    if (!row) return undefined;
    const e = event(row);
    await recordEvent(
      tx,
      { id: e.id, tenant_id: row.tenant_id, upload_id: uploadId, type: e.type, payload: e.payload },
      { afterTombstone: false },
    );
    return { restoredAt: row.restored_at, eventId: e.id, tenantId: row.tenant_id, payload: e.payload };
  });
}

/** The window closes for the erasure, unless a legal hold keeps it open (then: `held`). */
export async function closeRestoreWindow(db: Queryable, uploadId: string): Promise<'closed' | 'held'> {
  const res = await db.query(`UPDATE uploads SET restorable_until = NULL WHERE id = $1 AND hold_reason IS NULL RETURNING id`, [uploadId]);
  return res.rows.length ? 'closed' : 'held';
}
