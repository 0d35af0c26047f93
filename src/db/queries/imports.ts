// Imports not yet committed (POST /v1/imports): created by the API under the tenant's quota,
// advanced by the import's fetch, ended by the records transaction.
import { statement, type Pool, type Queryable } from '../pool';
import { insertWithinQuota } from './quotas';
import type { UploadRow } from './uploads';

export interface ImportRow {
  id: string;
  tenant_id: string;
  idempotency_key: string;
  fingerprint: string;
  origin: string;
  token_id: string | null;
  state: 'importing' | 'failed';
  bytes_fetched: string; // bigint
  bytes_total: string | null; // bigint
  created_at: Date;
  updated_at: Date;
}

export type NewImport = Pick<ImportRow, 'id' | 'tenant_id' | 'idempotency_key' | 'fingerprint' | 'origin' | 'token_id'>;

const COLUMNS = 'id, tenant_id, idempotency_key, fingerprint, origin, token_id, state, bytes_fetched, bytes_total, created_at, updated_at';

/**
 * Inserts the import unless its key already has one (returned instead), while the tenant has
 * fewer than `maxInFlight` imports in flight (else QuotaReached, nothing written).
 */
export async function insertImportOrGet(pool: Pool, i: NewImport, maxInFlight: number): Promise<{ row: ImportRow; created: boolean }> {
  return insertWithinQuota<{ row: ImportRow; created: boolean }>(
    pool,
    i.tenant_id,
    'imports_in_flight',
    maxInFlight,
    async (tx) => {
      const inserted = await tx.query<ImportRow>(
        `INSERT INTO imports (id, tenant_id, idempotency_key, fingerprint, origin, token_id)
         VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${COLUMNS}`,
        [i.id, i.tenant_id, i.idempotency_key, i.fingerprint, i.origin, i.token_id],
      );
      return { row: inserted.rows[0]!, created: true };
    },
    async (tx) => {
      const row = await findImportByKey(tx, i.tenant_id, i.idempotency_key);
      return row && { row, created: false };
    },
  );
}

export async function findImportByKey(db: Queryable, tenantId: string, key: string): Promise<ImportRow | undefined> {
  return (await db.query<ImportRow>(`SELECT ${COLUMNS} FROM imports WHERE tenant_id = $1 AND idempotency_key = $2`, [tenantId, key]))
    .rows[0];
}

export async function findImport(db: Queryable, tenantId: string, id: string): Promise<ImportRow | undefined> {
  return (await db.query<ImportRow>(`SELECT ${COLUMNS} FROM imports WHERE id = $1 AND tenant_id = $2`, [id, tenantId])).rows[0];
}

/** What an upload id names: a stored upload, or an import that will make it (still reading, or failed). */
export type UploadOrImport = { kind: 'upload'; row: UploadRow } | { kind: 'import'; row: ImportRow };

const IMPORT_FIELDS = COLUMNS.split(', ');

/**
 * The upload or the import under an id, in one statement: one snapshot, so an import that
 * commits meanwhile is seen either still importing or as its upload (the commit inserts the
 * one row and deletes the other in one transaction), never as neither.
 */
export async function findUploadOrImport(db: Queryable, tenantId: string, id: string): Promise<UploadOrImport | undefined> {
  const res = await db.query<Record<string, unknown>>(
    statement(
      'find_upload_or_import',
      `SELECT u.*, ${IMPORT_FIELDS.map((c) => `i.${c} AS import_${c}`).join(', ')}
         FROM (SELECT 1) one
         LEFT JOIN uploads u ON u.tenant_id = $1 AND u.id = $2
         LEFT JOIN imports i ON i.tenant_id = $1 AND i.id = $2`,
      [tenantId, id],
    ),
  );
  const row = res.rows[0]!;
  const imported = Object.fromEntries(IMPORT_FIELDS.map((c) => [c, row[`import_${c}`]]));
  for (const c of IMPORT_FIELDS) delete row[`import_${c}`];
  if (row.id !== null) return { kind: 'upload', row: row as unknown as UploadRow };
  if (imported.id !== null) return { kind: 'import', row: imported as unknown as ImportRow };
  return undefined;
}

/** How far the fetch got; never moves an ended import. */
export async function recordImportProgress(db: Queryable, id: string, bytesFetched: number, bytesTotal: number | null): Promise<void> {
  await db.query(
    `UPDATE imports SET bytes_fetched = $2, bytes_total = coalesce($3, bytes_total), updated_at = now() WHERE id = $1 AND state = 'importing'`,
    [id, bytesFetched, bytesTotal],
  );
}

/**
 * Ends an import inside the transaction that records its outcome: a committed upload's row
 * goes (the upload row speaks for it from now on), a failed one stays as `failed` until its
 * key expires.
 */
export async function endImport(db: Queryable, id: string, outcome: 'committed' | 'failed'): Promise<void> {
  if (outcome === 'committed') await db.query('DELETE FROM imports WHERE id = $1', [id]);
  else await db.query(`UPDATE imports SET state = 'failed', updated_at = now() WHERE id = $1`, [id]);
}

/**
 * Imports in flight not advanced for `idleSeconds`: the sweep asks whether their run still
 * runs (an API that died between the row and the run's start leaves one without a run).
 */
export async function staleImports(db: Queryable, idleSeconds: number, limit = 1000): Promise<ImportRow[]> {
  return (
    await db.query<ImportRow>(
      `SELECT ${COLUMNS} FROM imports WHERE state = 'importing' AND updated_at < now() - make_interval(secs => $1) ORDER BY updated_at LIMIT $2`,
      [idleSeconds, limit],
    )
  ).rows;
}

/** A new request under the key of a failed import whose run failed without an answer may start again: its row is removed. */
export async function removeImport(db: Queryable, id: string): Promise<void> {
  await db.query('DELETE FROM imports WHERE id = $1', [id]);
}
