// Storage migrations (migration 039): the migration row and its outcomes, the uploads it
// takes, and the one-transaction switch of an upload (its original, renditions and variants)
// to the addresses its objects were copied to.
import { withTransaction, type Pool, type Queryable } from '../db/pool';
import { pageInCreationOrder, type ListPosition } from '../db/queries/keyset';
import type { MigrationOutcome } from './contract';

/** Which of the source's uploads a migration takes (all of them when empty). */
export interface MigrationFilter {
  createdAfter?: string;
  createdBefore?: string;
  /** A media type (`image/png`) or a family (`image/*`). */
  contentType?: string;
}

export interface StorageMigrationRow {
  id: string;
  tenant_id: string;
  from_target: string | null;
  to_target: string | null;
  filter: MigrationFilter;
  state: 'running' | 'paused' | 'completed' | 'cancelled';
  total: number;
  created_at: Date;
  finished_at: Date | null;
}

export type { MigrationOutcome };

/** The uploads a migration takes: live, on its source, matching its filter, committed before it. */
const MIGRATION_UPLOADS = `FROM uploads u, storage_migrations m
  WHERE m.id = $1 AND u.tenant_id = m.tenant_id AND u.deleted_at IS NULL AND NOT u.object_released
    AND u.storage_target IS NOT DISTINCT FROM m.from_target AND u.created_at <= m.created_at
    AND (m.filter->>'createdAfter' IS NULL OR u.created_at >= (m.filter->>'createdAfter')::timestamptz)
    AND (m.filter->>'createdBefore' IS NULL OR u.created_at < (m.filter->>'createdBefore')::timestamptz)
    AND (m.filter->>'contentType' IS NULL OR u.content_type = m.filter->>'contentType'
         OR (right(m.filter->>'contentType', 2) = '/*' AND u.content_type LIKE left(m.filter->>'contentType', -1) || '%'))`;

export class MigrationRunning extends Error {
  constructor() {
    super('a migration from this source is already running');
    this.name = 'MigrationRunning';
  }
}

/** Records a new migration with its total; MigrationRunning when one from the same source is open. */
export async function insertMigration(
  pool: Pool,
  m: { id: string; tenantId: string; from: string | null; to: string | null; filter: MigrationFilter },
): Promise<StorageMigrationRow> {
  return withTransaction(pool, async (tx) => {
    try {
      await tx.query(
        'INSERT INTO storage_migrations (id, tenant_id, from_target, to_target, filter, total) VALUES ($1, $2, $3, $4, $5, 0)',
        [m.id, m.tenantId, m.from, m.to, JSON.stringify(m.filter)],
      );
    } catch (err) {
      if ((err as { code?: string }).code === '23505') throw new MigrationRunning();
      throw err;
    }
    const res = await tx.query<StorageMigrationRow>(
      `UPDATE storage_migrations SET total = (SELECT count(*)::int ${MIGRATION_UPLOADS}) WHERE id = $1 RETURNING *`,
      [m.id],
    );
    return res.rows[0]!;
  });
}

export async function findMigration(db: Queryable, tenantId: string, id: string): Promise<StorageMigrationRow | undefined> {
  return (await db.query<StorageMigrationRow>('SELECT * FROM storage_migrations WHERE tenant_id = $1 AND id = $2', [tenantId, id])).rows[0];
}

export function pageMigrations(db: Queryable, tenantId: string, page: { after?: ListPosition; limit: number }) {
  return pageInCreationOrder<StorageMigrationRow>(
    db,
    {
      columns: 'id, tenant_id, from_target, to_target, filter, state, total, created_at, finished_at',
      from: 'storage_migrations',
      where: 'tenant_id = $1',
      values: [tenantId],
    },
    page,
  );
}

/** The next page of the migration's uploads after `after` (by id). */
export async function migrationPage(db: Queryable, migrationId: string, after: string | null, limit: number): Promise<string[]> {
  const res = await db.query<{ id: string }>(
    `SELECT u.id ${MIGRATION_UPLOADS} AND ($2::uuid IS NULL OR u.id > $2::uuid) ORDER BY u.id LIMIT $3`,
    [migrationId, after, limit],
  );
  return res.rows.map((r) => r.id);
}

/** Of a page's uploads, those whose original is at most `maxBytes` (moved a page at a time). */
export async function smallUploads(db: Queryable, ids: string[], maxBytes: number): Promise<string[]> {
  const res = await db.query<{ id: string }>('SELECT id FROM uploads WHERE id = ANY($1::uuid[]) AND bytes <= $2', [ids, maxBytes]);
  const small = new Set(res.rows.map((r) => r.id));
  return ids.filter((id) => small.has(id));
}

/** Records outcomes once each (a repeated page changes nothing). */
export async function recordMigrationItems(db: Queryable, migrationId: string, items: MigrationOutcome[]): Promise<void> {
  if (!items.length) return;
  await db.query(
    `INSERT INTO storage_migration_items (migration_id, upload_id, outcome, reason, bytes, source, derived)
     SELECT $1, x.upload_id, x.outcome, x.reason, x.bytes, x.source, coalesce(x.derived, false)
       FROM jsonb_to_recordset($2::jsonb) AS x(upload_id uuid, outcome text, reason text, bytes bigint, source text, derived boolean)
     ON CONFLICT DO NOTHING`,
    [
      migrationId,
      JSON.stringify(
        items.map((i) => ({
          upload_id: i.uploadId,
          outcome: i.outcome,
          reason: i.reason,
          bytes: i.bytes,
          source: i.source ?? null,
          derived: i.derived ?? false,
        })),
      ),
    ],
  );
}

export async function setMigrationState(db: Queryable, id: string, state: StorageMigrationRow['state']): Promise<void> {
  const finished = state === 'completed' || state === 'cancelled';
  await db.query(
    `UPDATE storage_migrations SET state = $2, finished_at = CASE WHEN $3 THEN now() END WHERE id = $1 AND state IN ('running', 'paused')`,
    [id, state, finished],
  );
}

export interface MigrationProgress {
  moved: number;
  skipped: number;
  failed: number;
  bytesMoved: number;
  failures: { uploadId: string; reason: string | null }[];
}

export async function migrationProgress(db: Queryable, id: string): Promise<MigrationProgress> {
  const counts = await db.query<{ moved: number; skipped: number; failed: number; bytesMoved: string }>(
    `SELECT count(*) FILTER (WHERE outcome = 'moved')::int AS moved, count(*) FILTER (WHERE outcome = 'skipped')::int AS skipped,
            count(*) FILTER (WHERE outcome = 'failed')::int AS failed, coalesce(sum(bytes), 0) AS "bytesMoved"
       FROM storage_migration_items WHERE migration_id = $1`,
    [id],
  );
  const failures = await db.query<{ uploadId: string; reason: string | null }>(
    `SELECT upload_id AS "uploadId", reason FROM storage_migration_items WHERE migration_id = $1 AND outcome = 'failed' ORDER BY upload_id LIMIT 100`,
    [id],
  );
  const c = counts.rows[0]!;
  return { moved: c.moved, skipped: c.skipped, failed: c.failed, bytesMoved: Number(c.bytesMoved), failures: failures.rows };
}

/** What a move copies: the upload's object and whether it is counted (content dedupe). */
export async function moveSource(
  db: Queryable,
  uploadId: string,
): Promise<
  | {
      tenant_id: string;
      storage_key: string;
      sha256: string;
      bytes: string;
      content_type: string;
      deleted: boolean;
      /** Its object is counted (content dedupe): the destination may hold these bytes already. */
      counted: boolean;
      /** Under a legal hold (its objects stay where they are). */
      held: boolean;
      /** Whether it has renditions or variants. */
      derived: boolean;
    }
  | undefined
> {
  const res = await db.query(
    `SELECT u.tenant_id, u.storage_key, u.sha256, u.bytes, u.content_type, u.deleted_at IS NOT NULL OR u.object_released AS deleted,
            EXISTS (SELECT 1 FROM stored_objects o WHERE o.storage_key = u.storage_key) AS counted,
            u.hold_reason IS NOT NULL AS held,
            EXISTS (SELECT 1 FROM renditions r WHERE r.upload_id = u.id) OR EXISTS (SELECT 1 FROM image_variants v WHERE v.upload_id = u.id) AS derived
       FROM uploads u WHERE u.id = $1`,
    [uploadId],
  );
  return res.rows[0];
}

/**
 * `merged`: switched onto the object with the same bytes the destination already counted
 * (content dedupe), so the copy of the original at `to` is not the upload's.
 * `destination_changed`: the original was not copied (the destination counted its bytes) and
 * that object is gone since; nothing switched.
 */
export type SwitchOutcome = 'switched' | 'merged' | 'already' | 'deleted' | 'changed' | 'renditions_changed' | 'destination_changed';

/**
 * Switches the upload to the copies, in one transaction under the row's lock: its object,
 * then every rendition and variant row under `fromPrefix` to the same key under `toPrefix`.
 * A counted (deduped) object's count moves with the upload: onto the destination's object with
 * the same bytes when there is one, else onto the copy. Refused when the row moved on (another
 * move, a deletion) or a rendition was recorded that was not copied.
 */
export async function switchUploadAddress(
  pool: Pool,
  s: { uploadId: string; from: string; to: string; fromPrefix: string; toPrefix: string; copied: string[]; originalCopied: boolean },
): Promise<SwitchOutcome> {
  return withTransaction(pool, async (tx) => {
    const row = (
      await tx.query<{ tenant_id: string; storage_key: string; gone: boolean }>(
        'SELECT tenant_id, storage_key, deleted_at IS NOT NULL OR object_released AS gone FROM uploads WHERE id = $1 FOR UPDATE',
        [s.uploadId],
      )
    ).rows[0];
    if (!row || row.gone) return 'deleted';
    if (row.storage_key === s.to) return 'already';
    if (row.storage_key !== s.from) return 'changed';
    const derived = await tx.query<{ storage_key: string }>(
      `SELECT storage_key FROM renditions WHERE upload_id = $1 UNION ALL SELECT storage_key FROM image_variants WHERE upload_id = $1`,
      [s.uploadId],
    );
    const copied = new Set(s.copied);
    if (derived.rows.some((r) => !copied.has(r.storage_key))) return 'renditions_changed';
    const moved = (table: string) =>
      tx.query(
        `UPDATE ${table} SET storage_key = $3 || substr(storage_key, length($2) + 1) WHERE upload_id = $1 AND starts_with(storage_key, $2)`,
        [s.uploadId, s.fromPrefix, s.toPrefix],
      );
    const object = await moveCount(tx, row.tenant_id, s.from, s.to, s.originalCopied);
    if (!object) return 'destination_changed';
    await tx.query('UPDATE uploads SET storage_key = $2 WHERE id = $1', [s.uploadId, object]);
    // Derived rows (none for most uploads) follow their objects; the upload's lock keeps new ones out meanwhile.
    if (derived.rows.length > 0) {
      await moved('renditions');
      await moved('image_variants');
    }
    return object === s.to ? 'switched' : 'merged';
  });
}

/**
 * Moves one upload's count from the object at `from` (if it is counted: content dedupe) to the
 * destination: onto the counted object there with the same bytes, else onto `to` (undefined,
 * changing nothing, when `to` was not copied). The object the upload names afterwards.
 */
async function moveCount(tx: Queryable, tenantId: string, from: string, to: string, toCopied: boolean): Promise<string | undefined> {
  const counted = (
    await tx.query<{ sha256: string; bytes: string; refs: number }>(
      'SELECT sha256, bytes, refs FROM stored_objects WHERE storage_key = $1 FOR UPDATE',
      [from],
    )
  ).rows[0];
  if (!counted) return toCopied ? to : undefined;
  const there = (
    await tx.query<{ storage_key: string }>(
      `SELECT storage_key FROM stored_objects
        WHERE tenant_id = $1 AND sha256 = $2 AND bytes = $3 AND storage_key <> $5
          AND storage_target IS NOT DISTINCT FROM (CASE WHEN $4::text LIKE 'targets/%' THEN substring($4::text FROM 9 FOR 36)::uuid END)
        FOR UPDATE`,
      [tenantId, counted.sha256, counted.bytes, to, from],
    )
  ).rows[0];
  if (!there && !toCopied) return undefined;
  if (there) await tx.query('UPDATE stored_objects SET refs = refs + 1 WHERE storage_key = $1', [there.storage_key]);
  if (counted.refs > 1) await tx.query('UPDATE stored_objects SET refs = refs - 1 WHERE storage_key = $1', [from]);
  else if (there) await tx.query('DELETE FROM stored_objects WHERE storage_key = $1', [from]);
  else await tx.query('UPDATE stored_objects SET storage_key = $2 WHERE storage_key = $1', [from, to]);
  if (counted.refs > 1 && !there)
    await tx.query('INSERT INTO stored_objects (tenant_id, sha256, bytes, storage_key, refs) VALUES ($1, $2, $3, $4, 1)', [
      tenantId,
      counted.sha256,
      counted.bytes,
      to,
    ]);
  return there?.storage_key ?? to;
}

/** Whether any row names this address (such an object is never deleted as a moved source). */
export async function addressReferenced(db: Queryable, address: string): Promise<boolean> {
  const res = await db.query(
    `SELECT 1 FROM uploads WHERE storage_key = $1 AND NOT object_released
     UNION ALL SELECT 1 FROM stored_objects WHERE storage_key = $1
     UNION ALL SELECT 1 FROM renditions WHERE storage_key = $1
     UNION ALL SELECT 1 FROM image_variants WHERE storage_key = $1
     UNION ALL SELECT 1 FROM resumable_sessions WHERE storage_key = $1 LIMIT 1`,
    [address],
  );
  return (res.rowCount ?? 0) > 0;
}

/** The next moved uploads of a migration after `after` (by id), with the address each was moved from. */
export async function movedSources(
  db: Queryable,
  migrationId: string,
  after: string | null,
  limit: number,
): Promise<{ upload_id: string; tenant_id: string; source: string; derived: boolean }[]> {
  const res = await db.query<{ upload_id: string; tenant_id: string; source: string; derived: boolean }>(
    `SELECT i.upload_id, m.tenant_id, i.source, i.derived FROM storage_migration_items i JOIN storage_migrations m ON m.id = i.migration_id
      WHERE i.migration_id = $1 AND i.outcome = 'moved' AND i.source IS NOT NULL AND ($2::uuid IS NULL OR i.upload_id > $2::uuid)
      ORDER BY i.upload_id LIMIT $3`,
    [migrationId, after, limit],
  );
  return res.rows;
}
