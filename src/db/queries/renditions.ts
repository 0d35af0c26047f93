// Renditions and the upload's processing outcome, written by the transcode activity.
import type { Queryable } from '../pool';

export interface RenditionRow {
  upload_id: string;
  name: string;
  storage_key: string;
  content_type: string;
  bytes: string;
  width: number | null;
  height: number | null;
  duration_ms: number | null;
  created_at: Date;
}

export type NewRendition = Omit<RenditionRow, 'bytes' | 'created_at'> & { bytes: number };

/**
 * Records a rendition unless one is there; false when the upload has been deleted (its
 * tombstone is set), so the caller removes the object it wrote.
 */
export async function insertRenditionIfAbsent(db: Queryable, r: NewRendition): Promise<boolean> {
  const res = await db.query(
    `INSERT INTO renditions (upload_id, name, storage_key, content_type, bytes, width, height, duration_ms)
     SELECT $1, $2, $3, $4, $5, $6, $7, $8 FROM uploads WHERE id = $1 AND deleted_at IS NULL
     ON CONFLICT (upload_id, name) DO NOTHING
     RETURNING 1`,
    [r.upload_id, r.name, r.storage_key, r.content_type, r.bytes, r.width, r.height, r.duration_ms],
  );
  if (res.rowCount) return true;
  const kept = await db.query('SELECT 1 FROM uploads WHERE id = $1 AND deleted_at IS NULL', [r.upload_id]);
  return kept.rowCount !== 0;
}

export async function listRenditions(db: Queryable, uploadId: string): Promise<RenditionRow[]> {
  const res = await db.query<RenditionRow>('SELECT * FROM renditions WHERE upload_id = $1 ORDER BY name', [uploadId]);
  return res.rows;
}

/** Records the processing outcome once; later calls (retries) leave the first one. */
export async function setProcessingOutcome(
  db: Queryable,
  uploadId: string,
  outcome: { status: 'ready' | 'skipped' | 'failed'; reason: string | null; media: unknown },
): Promise<void> {
  await db.query(
    `UPDATE uploads SET processing_status = $2, processing_reason = $3, media = $4
      WHERE id = $1 AND processing_status = 'pending' AND deleted_at IS NULL`,
    [uploadId, outcome.status, outcome.reason, JSON.stringify(outcome.media ?? null)],
  );
}

export async function markProcessed(db: Queryable, uploadId: string): Promise<void> {
  await db.query(
    `UPDATE uploads SET status = 'processed', processed_at = coalesce(processed_at, now()) WHERE id = $1 AND deleted_at IS NULL`,
    [uploadId],
  );
}
