// Import batches: the batch row with its counts, its items and their outcomes. An item's
// outcome and the batch's counts change in one statement, once (only a pending item moves).
import type { Caller, UploadLabels } from '../../upload/types';
import { pageInCreationOrder, type ListPosition } from '../../db/queries/keyset';
import type { UploadGrant } from '../../tokens/grant';
import { withTransaction, type Pool, type Queryable } from '../../db/pool';
import { insertWithinQuota } from '../../db/queries/quotas';

export interface ImportBatchRow {
  id: string;
  tenant_id: string;
  /** `listing` while an S3 source's objects are listed by the batch's workflow; `failed` when they could not be. */
  state: 'listing' | 'running' | 'paused' | 'completed' | 'cancelled' | 'failed';
  concurrency: number;
  pipeline: string | null;
  caller: Caller;
  upload_grant: UploadGrant | null;
  /** An S3 source's location and its sealed credentials (a batch of URLs: null). */
  source: ImportBatchSource | null;
  /** Metadata and tags every item's upload carries (under an item's own). */
  labels: UploadLabels | null;
  total: number;
  done: number;
  failed: number;
  skipped: number;
  created_at: Date;
  finished_at: Date | null;
  /** Why a listing failed (a problem's JSON). */
  error: Record<string, unknown> | null;
}

export interface ImportBatchSource {
  endpoint: string;
  region: string;
  bucket: string;
  prefix: string;
  /** The credentials, sealed for this batch (src/imports/s3-source.ts). */
  sealedAccess: string;
}

export interface BatchItem {
  url: string;
  fileName?: string;
  sha256?: string;
  /** The item's own metadata and tags (the batch's are added when it is imported). */
  labels?: UploadLabels;
}

export interface ImportBatchItemRow {
  batch_id: string;
  n: number;
  url: string;
  file_name: string | null;
  sha256: string | null;
  labels: UploadLabels | null;
  state: 'pending' | 'done' | 'failed' | 'skipped';
  upload_id: string | null;
  error: Record<string, unknown> | null;
}

/**
 * Records a batch and its items (none yet for a source still to be listed: `listing`), while
 * the tenant has fewer than `maxOpen` open batches (else QuotaReached).
 */
export async function insertImportBatch(
  pool: Pool,
  b: Pick<ImportBatchRow, 'id' | 'tenant_id' | 'concurrency' | 'pipeline' | 'caller' | 'upload_grant' | 'source' | 'labels'>,
  items: BatchItem[] | 'to-list',
  maxOpen: number,
): Promise<ImportBatchRow> {
  return insertWithinQuota(pool, b.tenant_id, 'open_import_batches', maxOpen, async (tx) => {
    const listed = items === 'to-list' ? [] : items;
    const row = await tx.query<ImportBatchRow>(
      `INSERT INTO import_batches (id, tenant_id, concurrency, pipeline, caller, upload_grant, source, labels, total, state)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING *`,
      [
        b.id,
        b.tenant_id,
        b.concurrency,
        b.pipeline,
        JSON.stringify(b.caller),
        b.upload_grant && JSON.stringify(b.upload_grant),
        b.source && JSON.stringify(b.source),
        b.labels && JSON.stringify(b.labels),
        listed.length,
        items === 'to-list' ? 'listing' : 'running',
      ],
    );
    await insertItems(tx, b.id, listed);
    return row.rows[0]!;
  });
}

/** One statement for the items, however many: their fields as parallel arrays. */
async function insertItems(tx: Queryable, batchId: string, items: BatchItem[]): Promise<void> {
  await tx.query(
    `INSERT INTO import_batch_items (batch_id, n, url, file_name, sha256, labels)
     SELECT $1, n, url, file_name, sha256, labels
       FROM unnest($2::text[], $3::text[], $4::text[], $5::jsonb[]) WITH ORDINALITY AS t(url, file_name, sha256, labels, n)`,
    [
      batchId,
      items.map((i) => i.url),
      items.map((i) => i.fileName ?? null),
      items.map((i) => i.sha256 ?? null),
      items.map((i) => (i.labels ? JSON.stringify(i.labels) : null)),
    ],
  );
}

/** A listed batch's items, recorded once: the batch leaves `listing` for `running` (a repeat changes nothing). */
export async function recordListedItems(pool: Pool, batchId: string, items: BatchItem[]): Promise<void> {
  await withTransaction(pool, async (tx) => {
    const moved = await tx.query(`UPDATE import_batches SET state = 'running', total = $2 WHERE id = $1 AND state = 'listing'`, [
      batchId,
      items.length,
    ]);
    if (moved.rowCount) await insertItems(tx, batchId, items);
  });
}

/** A batch whose source could not be listed ends `failed`, with the problem that says why. */
export async function failListing(db: Queryable, batchId: string, error: Record<string, unknown>): Promise<void> {
  await db.query(`UPDATE import_batches SET state = 'failed', error = $2, finished_at = now() WHERE id = $1 AND state = 'listing'`, [
    batchId,
    JSON.stringify(error),
  ]);
}

export async function findImportBatch(db: Queryable, tenantId: string, id: string): Promise<ImportBatchRow | undefined> {
  return (await db.query<ImportBatchRow>('SELECT * FROM import_batches WHERE id = $1 AND tenant_id = $2', [id, tenantId])).rows[0];
}

/** A page of the tenant's batches in creation order, after `after`. */
export function pageImportBatches(db: Queryable, tenantId: string, page: { after?: ListPosition; limit: number }) {
  return pageInCreationOrder<ImportBatchRow>(
    db,
    { columns: '*', from: 'import_batches', where: 'tenant_id = $1', values: [tenantId] },
    page,
  );
}

export async function findImportBatchById(db: Queryable, id: string): Promise<ImportBatchRow | undefined> {
  return (await db.query<ImportBatchRow>('SELECT * FROM import_batches WHERE id = $1', [id])).rows[0];
}

/** The next pending items after `after`, in order. */
export async function pendingBatchItems(db: Queryable, batchId: string, after: number, limit: number): Promise<number[]> {
  const res = await db.query<{ n: number }>(
    `SELECT n FROM import_batch_items WHERE batch_id = $1 AND n > $2 AND state = 'pending' ORDER BY n LIMIT $3`,
    [batchId, after, limit],
  );
  return res.rows.map((r) => r.n);
}

export async function findBatchItem(db: Queryable, batchId: string, n: number): Promise<ImportBatchItemRow | undefined> {
  return (await db.query<ImportBatchItemRow>('SELECT * FROM import_batch_items WHERE batch_id = $1 AND n = $2', [batchId, n])).rows[0];
}

/** A page of a batch's items in order, optionally of one state. */
export async function listBatchItems(
  db: Queryable,
  batchId: string,
  o: { state?: ImportBatchItemRow['state']; after: number; limit: number },
): Promise<ImportBatchItemRow[]> {
  const res = await db.query<ImportBatchItemRow>(
    `SELECT * FROM import_batch_items WHERE batch_id = $1 AND n > $2 AND ($3::text IS NULL OR state = $3) ORDER BY n LIMIT $4`,
    [batchId, o.after, o.state ?? null, o.limit],
  );
  return res.rows;
}

/** Records a pending item's outcome and counts it on the batch, once (a repeat changes nothing). */
export async function recordBatchItem(
  pool: Pool,
  batchId: string,
  n: number,
  outcome: { state: 'done' | 'failed' | 'skipped'; uploadId: string | null; error: Record<string, unknown> | null },
): Promise<void> {
  await withTransaction(pool, async (tx) => {
    const moved = await tx.query(
      `UPDATE import_batch_items SET state = $3, upload_id = $4, error = $5 WHERE batch_id = $1 AND n = $2 AND state = 'pending'`,
      [batchId, n, outcome.state, outcome.uploadId, outcome.error && JSON.stringify(outcome.error)],
    );
    if (!moved.rowCount) return;
    await tx.query(`UPDATE import_batches SET ${outcome.state} = ${outcome.state} + 1 WHERE id = $1`, [batchId]);
  });
}

/** Ends a batch: its items not started are skipped (a cancelled batch). */
export async function finishImportBatch(pool: Pool, batchId: string, state: 'completed' | 'cancelled'): Promise<void> {
  await withTransaction(pool, async (tx) => {
    const skipped = await tx.query(`UPDATE import_batch_items SET state = 'skipped' WHERE batch_id = $1 AND state = 'pending'`, [batchId]);
    await tx.query(
      `UPDATE import_batches SET state = $2, skipped = skipped + $3, finished_at = coalesce(finished_at, now())
        WHERE id = $1 AND state IN ('listing', 'running', 'paused')`,
      [batchId, state, skipped.rowCount ?? 0],
    );
  });
}

/** Records an open batch as paused or running (its workflow decides; this is what the API shows). */
export async function setBatchPaused(db: Queryable, id: string, paused: boolean): Promise<void> {
  await db.query(`UPDATE import_batches SET state = $2 WHERE id = $1 AND state IN ('running', 'paused')`, [
    id,
    paused ? 'paused' : 'running',
  ]);
}
