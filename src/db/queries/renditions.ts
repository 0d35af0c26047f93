// Renditions and the upload's processing outcome, written by the transcode activity.
import { checkDerivedBytes } from './byte-quotas';
import { withTransaction, type Pool, type Queryable } from '../pool';

export interface RenditionRow {
  upload_id: string;
  name: string;
  storage_key: string;
  content_type: string;
  bytes: string;
  /** Its companions' total (an HLS rung's segments), stored beside it. */
  companion_bytes: string;
  width: number | null;
  height: number | null;
  duration_ms: number | null;
  /** The pipeline version that made it. */
  pipeline: string;
  pipeline_version: number;
  created_at: Date;
}

export type NewRendition = Omit<RenditionRow, 'bytes' | 'companion_bytes' | 'created_at'> & { bytes: number; companion_bytes: number };

/** A rendition as the API and the workflows describe it. */
export function renditionSummary(r: RenditionRow) {
  return {
    name: r.name,
    storageKey: r.storage_key,
    contentType: r.content_type,
    bytes: Number(r.bytes),
    width: r.width,
    height: r.height,
    durationMs: r.duration_ms,
  };
}

/** The rows served: those of the upload's own pipeline version (NULL on the upload: the built-in default). */
const SERVED = `r.pipeline = coalesce(u.pipeline, 'default') AND r.pipeline_version = coalesce(u.pipeline_version, 0)`;

/**
 * Records a rendition unless one is there; false when the upload has been deleted (its
 * tombstone is set), so the caller removes the object it wrote. A new row is checked against
 * the tenant's maxStoredBytes first (ByteQuotaExceeded: nothing recorded).
 */
export async function insertRenditionIfAbsent(pool: Pool, r: NewRendition): Promise<boolean> {
  const values = [
    r.upload_id,
    r.name,
    r.storage_key,
    r.content_type,
    r.bytes,
    r.companion_bytes,
    r.width,
    r.height,
    r.duration_ms,
    r.pipeline,
    r.pipeline_version,
  ];
  const insert = `INSERT INTO renditions (upload_id, name, storage_key, content_type, bytes, companion_bytes, width, height, duration_ms, pipeline, pipeline_version)`;
  const conflict = 'ON CONFLICT (upload_id, pipeline, pipeline_version, name) DO NOTHING';
  // A tenant without maxStoredBytes: one statement (the upload share-locked while it runs).
  const quick = await pool.query<{ limited: boolean }>(
    `WITH live AS (SELECT t.max_stored_bytes IS NOT NULL AS limited FROM uploads u JOIN tenants t ON t.id = u.tenant_id
                    WHERE u.id = $1 AND u.deleted_at IS NULL FOR SHARE OF u),
          ins AS (${insert} SELECT $1::uuid, $2::text, $3::text, $4::text, $5::bigint, $6::bigint, $7::int, $8::int, $9::int, $10::text, $11::int FROM live WHERE NOT live.limited ${conflict} RETURNING 1)
     SELECT limited FROM live`,
    values,
  );
  const found = quick.rows[0];
  if (!found) return false;
  if (!found.limited) return true;
  return withTransaction(pool, async (tx) => {
    const live = await tx.query('SELECT 1 FROM uploads WHERE id = $1 AND deleted_at IS NULL FOR SHARE', [r.upload_id]);
    if (!live.rowCount) return false;
    const there = await tx.query(
      'SELECT 1 FROM renditions WHERE upload_id = $1 AND pipeline = $2 AND pipeline_version = $3 AND name = $4',
      [r.upload_id, r.pipeline, r.pipeline_version, r.name],
    );
    if (there.rowCount) return true;
    await checkDerivedBytes(tx, r.upload_id, r.bytes + r.companion_bytes);
    await tx.query(`${insert} VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ${conflict}`, values);
    return true;
  });
}

/** The renditions served for the upload: its own pipeline version's. */
export async function listRenditions(db: Queryable, uploadId: string): Promise<RenditionRow[]> {
  const res = await db.query<RenditionRow>(
    `SELECT r.* FROM renditions r JOIN uploads u ON u.id = r.upload_id WHERE r.upload_id = $1 AND ${SERVED} ORDER BY r.name`,
    [uploadId],
  );
  return res.rows;
}

/** The upload's renditions of one pipeline version (served or not). */
export async function listRenditionsOf(db: Queryable, uploadId: string, pipeline: string, version: number): Promise<RenditionRow[]> {
  const res = await db.query<RenditionRow>(
    'SELECT * FROM renditions WHERE upload_id = $1 AND pipeline = $2 AND pipeline_version = $3 ORDER BY created_at, name',
    [uploadId, pipeline, version],
  );
  return res.rows;
}

/** Every rendition of the upload, of any version (erasure removes them all). */
export async function allRenditionKeys(db: Queryable, uploadId: string): Promise<string[]> {
  const res = await db.query<{ storage_key: string }>('SELECT storage_key FROM renditions WHERE upload_id = $1', [uploadId]);
  return res.rows.map((r) => r.storage_key);
}

/**
 * Renditions the upload does not serve: those of versions older than the served one (which a
 * switch removes), or those of one given version (which a re-run that did not switch removes).
 * A newer version's are never listed here: the job making them may still switch to them.
 */
export async function unservedRenditions(
  db: Queryable,
  uploadId: string,
  of: 'older' | { pipeline: string; version: number },
): Promise<{ name: string; storage_key: string; pipeline: string; pipeline_version: number }[]> {
  const one = of === 'older' ? null : of;
  const res = await db.query<{ name: string; storage_key: string; pipeline: string; pipeline_version: number }>(
    `SELECT r.name, r.storage_key, r.pipeline, r.pipeline_version FROM renditions r JOIN uploads u ON u.id = r.upload_id
      WHERE r.upload_id = $1 AND NOT (${SERVED})
        AND CASE WHEN $2::text IS NULL
                 THEN r.pipeline <> coalesce(u.pipeline, 'default') OR r.pipeline_version < coalesce(u.pipeline_version, 0)
                 ELSE r.pipeline = $2 AND r.pipeline_version = $3 END`,
    [uploadId, one?.pipeline ?? null, one?.version ?? null],
  );
  return res.rows;
}

export async function deleteRenditionRow(
  db: Queryable,
  r: { upload_id: string; pipeline: string; pipeline_version: number; name: string },
): Promise<void> {
  await db.query('DELETE FROM renditions WHERE upload_id = $1 AND pipeline = $2 AND pipeline_version = $3 AND name = $4', [
    r.upload_id,
    r.pipeline,
    r.pipeline_version,
    r.name,
  ]);
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
