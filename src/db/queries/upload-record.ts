// The upload's own record: its metadata and tags on the row, every version of them once it
// was first changed, and the label index (upload_labels) the list's tag and metadata
// filters walk in creation order.
import type { Queryable } from '../pool';

/** The longest label indexed: a longer metadata entry is kept, not filterable. */
export const LABEL_MAX = 512;

export interface RecordLabels {
  metadata?: Record<string, unknown> | null;
  tags?: readonly string[] | null;
}

export function tagLabel(tag: string): string {
  return `t:${tag}`;
}

/** A top-level metadata entry as the index holds it: strings as they are, numbers and booleans as JSON. */
export function metadataLabel(key: string, value: string): string {
  return `m:${key}=${value}`;
}

/** The index entries of a record: each tag, and each top-level metadata entry with a scalar value. */
export function labelKeys(r: RecordLabels): string[] {
  const keys = (r.tags ?? []).map(tagLabel);
  for (const [key, value] of Object.entries(r.metadata ?? {})) {
    if (typeof value === 'string') keys.push(metadataLabel(key, value));
    else if (typeof value === 'number' || typeof value === 'boolean') keys.push(metadataLabel(key, JSON.stringify(value)));
  }
  return keys.filter((k) => k.length <= LABEL_MAX);
}

/** Indexes the record's labels under the upload's own tenant and creation time (`replace`: dropping the ones it had). */
export async function writeLabels(tx: Queryable, uploadId: string, record: RecordLabels, replace = false): Promise<void> {
  if (replace) await tx.query('DELETE FROM upload_labels WHERE upload_id = $1', [uploadId]);
  const keys = labelKeys(record);
  if (keys.length === 0) return;
  await tx.query(
    `INSERT INTO upload_labels (tenant_id, label, created_at, upload_id)
     SELECT u.tenant_id, label, u.created_at, u.id FROM uploads u, unnest($2::text[]) AS label WHERE u.id = $1
     ON CONFLICT DO NOTHING`,
    [uploadId, keys],
  );
}

export interface VersionRow {
  upload_id: string;
  version: number;
  tenant_id: string;
  metadata: Record<string, unknown> | null;
  tags: string[];
  changed_by: string;
  changed_at: Date;
  request_hash: string | null;
}

/** What a change to the record reads of the upload. */
export interface RecordRow {
  id: string;
  created_at: Date;
  deleted_at: Date | null;
  metadata: Record<string, unknown> | null;
  tags: string[];
  record_version: number;
}

/** The upload's record, its row locked until the transaction ends: changes to one record are made one at a time. */
export async function lockRecord(tx: Queryable, tenantId: string, id: string): Promise<RecordRow | undefined> {
  const res = await tx.query<RecordRow>(
    'SELECT id, created_at, deleted_at, metadata, tags, record_version FROM uploads WHERE tenant_id = $1 AND id = $2 FOR UPDATE',
    [tenantId, id],
  );
  return res.rows[0];
}

export async function findVersion(db: Queryable, uploadId: string, version: number): Promise<VersionRow | undefined> {
  const res = await db.query<VersionRow>('SELECT * FROM upload_versions WHERE upload_id = $1 AND version = $2', [uploadId, version]);
  return res.rows[0];
}

/** Records a version unless it is there (version 1, the record as uploaded, is written with the first change). */
export async function insertVersion(tx: Queryable, v: Omit<VersionRow, 'changed_at'> & { changed_at?: Date }): Promise<VersionRow> {
  const res = await tx.query<VersionRow>(
    `INSERT INTO upload_versions (upload_id, version, tenant_id, metadata, tags, changed_by, changed_at, request_hash)
     VALUES ($1, $2, $3, $4, $5, $6, coalesce($7, now()), $8)
     ON CONFLICT (upload_id, version) DO UPDATE SET version = EXCLUDED.version
     RETURNING *`,
    [v.upload_id, v.version, v.tenant_id, v.metadata, v.tags, v.changed_by, v.changed_at ?? null, v.request_hash],
  );
  return res.rows[0]!;
}

/** The row takes the version's metadata and tags. */
export async function applyVersion(tx: Queryable, v: VersionRow): Promise<void> {
  await tx.query('UPDATE uploads SET metadata = $2, tags = $3, record_version = $4 WHERE id = $1', [
    v.upload_id,
    v.metadata,
    v.tags,
    v.version,
  ]);
}

/** The upload's versions, newest first, those below `before` (a version number) when given. */
export async function listVersions(
  db: Queryable,
  tenantId: string,
  uploadId: string,
  before: number | undefined,
  limit: number,
): Promise<VersionRow[]> {
  const res = await db.query<VersionRow>(
    `SELECT * FROM upload_versions WHERE tenant_id = $1 AND upload_id = $2 AND version < $3 ORDER BY version DESC LIMIT $4`,
    [tenantId, uploadId, before ?? 2_147_483_647, limit],
  );
  return res.rows;
}

/** Erasure: the record, its versions and its labels go with the upload's personal data. */
export async function eraseRecord(tx: Queryable, uploadId: string): Promise<void> {
  await tx.query(`UPDATE uploads SET metadata = NULL, tags = '{}' WHERE id = $1`, [uploadId]);
  await tx.query('DELETE FROM upload_versions WHERE upload_id = $1', [uploadId]);
  await tx.query('DELETE FROM upload_labels WHERE upload_id = $1', [uploadId]);
}
