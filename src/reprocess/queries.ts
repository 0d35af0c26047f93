// Re-processing jobs: the job row (what runs over which uploads), one outcome row per upload,
// and the switch of an upload's served renditions to the new version.
import type { Pool, Queryable } from '../db/pool';
import { withTransaction } from '../db/pool';
import { pageInCreationOrder, type ListPosition } from '../db/queries/keyset';
import type { ReprocessOutcome } from '../pipelines/step-results';

export type { ReprocessOutcome };

/** Which of the pipeline's uploads a job takes (all of them when empty). */
export interface ReprocessFilter {
  createdAfter?: string;
  createdBefore?: string;
  /** A media type (`image/png`) or a family (`image/*`). */
  contentType?: string;
  /** Only these uploads (the console's Reprocess button names one). */
  uploadIds?: string[];
}

export interface ReprocessJobRow {
  id: string;
  tenant_id: string;
  pipeline: string;
  pipeline_version: number;
  filter: ReprocessFilter;
  state: 'running' | 'completed' | 'cancelled';
  total: number;
  created_at: Date;
  finished_at: Date | null;
}

/** The uploads a job takes: live, not rejected, of the pipeline, matching the filter, committed before the job. */
const JOB_UPLOADS = `FROM uploads u, reprocess_jobs j
  WHERE j.id = $1 AND u.tenant_id = j.tenant_id AND u.deleted_at IS NULL AND u.availability <> 'rejected'
    AND coalesce(u.pipeline, 'default') = j.pipeline AND u.created_at <= j.created_at
    AND (j.filter->>'createdAfter' IS NULL OR u.created_at >= (j.filter->>'createdAfter')::timestamptz)
    AND (j.filter->>'createdBefore' IS NULL OR u.created_at < (j.filter->>'createdBefore')::timestamptz)
    AND (j.filter->>'contentType' IS NULL OR u.content_type = j.filter->>'contentType'
         OR (right(j.filter->>'contentType', 2) = '/*' AND u.content_type LIKE left(j.filter->>'contentType', -1) || '%'))
    AND (j.filter->'uploadIds' IS NULL OR u.id::text IN (SELECT jsonb_array_elements_text(j.filter->'uploadIds')))`;

/** Records a new job with its total (the uploads it will take, counted in the same transaction). */
export async function insertReprocessJob(
  pool: Pool,
  j: { id: string; tenantId: string; pipeline: string; version: number; filter: ReprocessFilter },
): Promise<ReprocessJobRow> {
  return withTransaction(pool, async (tx) => {
    await tx.query(`INSERT INTO reprocess_jobs (id, tenant_id, pipeline, pipeline_version, filter, total) VALUES ($1, $2, $3, $4, $5, 0)`, [
      j.id,
      j.tenantId,
      j.pipeline,
      j.version,
      JSON.stringify(j.filter),
    ]);
    const res = await tx.query<ReprocessJobRow>(
      `UPDATE reprocess_jobs SET total = (SELECT count(*)::int ${JOB_UPLOADS}) WHERE id = $1 RETURNING *`,
      [j.id],
    );
    return res.rows[0]!;
  });
}

/** A page of the tenant's re-processing jobs in creation order, after `after`. */
export function pageReprocessJobs(db: Queryable, tenantId: string, page: { after?: ListPosition; limit: number }) {
  return pageInCreationOrder<ReprocessJobRow>(
    db,
    {
      columns: 'id, tenant_id, pipeline, pipeline_version, filter, state, total, created_at, finished_at',
      from: 'reprocess_jobs',
      where: 'tenant_id = $1',
      values: [tenantId],
    },
    page,
  );
}

export async function findReprocessJob(db: Queryable, tenantId: string, id: string): Promise<ReprocessJobRow | undefined> {
  const res = await db.query<ReprocessJobRow>('SELECT * FROM reprocess_jobs WHERE tenant_id = $1 AND id = $2', [tenantId, id]);
  return res.rows[0];
}

/** The next page of the job's uploads after `after` (by id). */
export async function reprocessPage(db: Queryable, jobId: string, after: string | null, limit: number): Promise<string[]> {
  const res = await db.query<{ id: string }>(
    `SELECT u.id ${JOB_UPLOADS} AND ($2::uuid IS NULL OR u.id > $2::uuid) ORDER BY u.id LIMIT $3`,
    [jobId, after, limit],
  );
  return res.rows.map((r) => r.id);
}

/** Records upload outcomes once each (a repeated page changes nothing). */
export async function recordReprocessItems(db: Queryable, jobId: string, items: ReprocessOutcome[]): Promise<void> {
  if (!items.length) return;
  await db.query(
    `INSERT INTO reprocess_items (job_id, upload_id, outcome, reason)
     SELECT $1, x.upload_id, x.outcome, x.reason FROM jsonb_to_recordset($2::jsonb) AS x(upload_id uuid, outcome text, reason text)
     ON CONFLICT DO NOTHING`,
    [jobId, JSON.stringify(items.map((i) => ({ upload_id: i.uploadId, outcome: i.outcome, reason: i.reason })))],
  );
}

export async function finishReprocessJob(db: Queryable, jobId: string, state: 'completed' | 'cancelled'): Promise<void> {
  await db.query(`UPDATE reprocess_jobs SET state = $2, finished_at = now() WHERE id = $1 AND state = 'running'`, [jobId, state]);
}

/** A job's progress: outcome counts and the first failures. */
export async function reprocessProgress(
  db: Queryable,
  jobId: string,
): Promise<{
  done: number;
  skipped: number;
  failed: number;
  superseded: number;
  failures: { uploadId: string; reason: string | null }[];
  supersededUploads: { uploadId: string; reason: string | null }[];
}> {
  const counts = await db.query<{ done: number; skipped: number; failed: number; superseded: number }>(
    `SELECT count(*) FILTER (WHERE outcome = 'done')::int AS done, count(*) FILTER (WHERE outcome = 'skipped')::int AS skipped,
            count(*) FILTER (WHERE outcome = 'failed')::int AS failed, count(*) FILTER (WHERE outcome = 'superseded')::int AS superseded
       FROM reprocess_items WHERE job_id = $1`,
    [jobId],
  );
  const listed = (outcome: string) =>
    db.query<{ uploadId: string; reason: string | null }>(
      `SELECT upload_id AS "uploadId", reason FROM reprocess_items WHERE job_id = $1 AND outcome = $2 ORDER BY upload_id LIMIT 100`,
      [jobId, outcome],
    );
  return { ...counts.rows[0]!, failures: (await listed('failed')).rows, supersededUploads: (await listed('superseded')).rows };
}

/** Why a switch did not happen: the upload is gone, or serves a newer version (the number). */
export type SwitchResult = { switched: true } | { switched: false; deleted: true } | { switched: false; servedVersion: number };

/**
 * Makes a pipeline version the one the upload serves, in one statement with its outcome,
 * unless the upload serves a newer version: the newest version wins, whichever job ends
 * last. The statement locks the upload's row, so switches of one upload run one at a time.
 * Switching to the version already served repeats harmlessly (a retried activity). The
 * older versions' renditions are then removed by the caller (unservedRenditions 'older').
 */
export async function switchServedVersion(
  pool: Pool,
  uploadId: string,
  to: { pipeline: string; version: number },
  outcome: { status: 'ready' | 'skipped' | 'failed'; reason: string | null; media: unknown },
): Promise<SwitchResult> {
  const res = await pool.query<{ deleted: boolean; served: number; switched: boolean }>(
    `WITH target AS (
       SELECT id, deleted_at IS NOT NULL AS deleted, coalesce(pipeline_version, 0) AS served FROM uploads WHERE id = $1 FOR UPDATE
     ), switched AS (
       UPDATE uploads u SET pipeline = $2, pipeline_version = $3, processing_status = $4, processing_reason = $5,
                            media = coalesce($6::jsonb, u.media)
         FROM target t WHERE u.id = t.id AND NOT t.deleted AND t.served <= $3
       RETURNING u.id
     )
     SELECT t.deleted, t.served, EXISTS (SELECT 1 FROM switched) AS switched FROM target t`,
    [uploadId, to.pipeline, to.version, outcome.status, outcome.reason, outcome.media === null ? null : JSON.stringify(outcome.media)],
  );
  const row = res.rows[0];
  if (row?.switched) return { switched: true };
  if (!row || row.deleted) return { switched: false, deleted: true };
  return { switched: false, servedVersion: row.served };
}

/** What a re-run needs of the upload: null when it is deleted or rejected. */
export async function reprocessTarget(
  db: Queryable,
  uploadId: string,
): Promise<
  | {
      storage_key: string;
      content_type: string;
      bytes: string;
      sha256: string;
      file_name: string | null;
      created_at: Date;
      pipeline: string | null;
      pipeline_version: number | null;
    }
  | undefined
> {
  const res = await db.query(
    `SELECT storage_key, content_type, bytes, sha256, file_name, created_at, pipeline, pipeline_version FROM uploads
      WHERE id = $1 AND deleted_at IS NULL AND availability <> 'rejected'`,
    [uploadId],
  );
  return res.rows[0];
}
