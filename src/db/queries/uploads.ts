// Upload rows: one per logical upload, keyed by id and unique per (tenant, key).
import { statement, type Queryable } from '../pool';
import { pastPosition, positionColumn, type ListPosition } from './keyset';
import { metadataLabel, tagLabel } from './upload-record';

export interface UploadRow {
  id: string;
  tenant_id: string;
  idempotency_key: string;
  workflow_id: string;
  storage_key: string;
  /** The registered target its object is in (derived from storage_key; null: the instance's store). */
  storage_target: string | null;
  bytes: string; // bigint comes back as text from pg
  sha256: string;
  content_type: string;
  file_name: string | null;
  status: string;
  created_at: Date;
  processing_status: string;
  processing_reason: string | null;
  media: Record<string, unknown> | null;
  processed_at: Date | null;
  deleted_at: Date | null;
  object_released: boolean;
  erased_at: Date | null;
  expires_at: Date | null;
  token_id: string | null;
  subject: string | null;
  token_metadata: Record<string, string> | null;
  /** The pipeline version it was committed with (NULL: before pipelines, the built-in default). */
  pipeline: string | null;
  pipeline_version: number | null;
  availability: 'available' | 'gated' | 'rejected';
  /** The committing step's W3C traceparent (tracing on). */
  traceparent: string | null;
  rejection_reason: string | null;
  /** The door it came through (src/modes.ts); NULL before it was recorded. */
  arrival: string | null;
  /** Its own metadata and tags (the record), at `record_version`. */
  metadata: Record<string, unknown> | null;
  tags: string[];
  record_version: number;
  /** Its legal hold (null: not held) and how many times the hold changed. */
  hold_reason: string | null;
  held_at: Date | null;
  held_by: string | null;
  hold_changes: number;
  /** While a deletion's restore window is open: until when it can be restored. */
  restorable_until: Date | null;
  restores: number;
}

export type NewUpload = Pick<
  UploadRow,
  'id' | 'tenant_id' | 'idempotency_key' | 'workflow_id' | 'storage_key' | 'sha256' | 'content_type' | 'file_name'
> & {
  bytes: number;
  expires_at?: string | null;
  token_id?: string | null;
  subject?: string | null;
  token_metadata?: Record<string, string> | null;
  pipeline?: string;
  pipeline_version?: number;
  /** `gated`: held until the pipeline's gates pass. */
  availability?: 'available' | 'gated';
  /** The committing step's W3C traceparent (tracing on): later work on the upload links to it. */
  traceparent?: string | null;
  arrival?: string | null;
  metadata?: Record<string, unknown> | null;
  tags?: string[];
};

/** Inserts the row unless one conflicts; the inserted row's id and creation time, or undefined after a conflict. */
export async function insertUploadIfAbsent(db: Queryable, u: NewUpload): Promise<{ id: string; created_at: Date } | undefined> {
  const res = await db.query<{ id: string; created_at: Date }>(
    `INSERT INTO uploads (id, tenant_id, idempotency_key, workflow_id, storage_key, bytes, sha256, content_type, file_name, expires_at,
                          token_id, subject, token_metadata, pipeline, pipeline_version, availability, traceparent, arrival,
                          metadata, tags)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)
     ON CONFLICT DO NOTHING
     RETURNING id, created_at`,
    [
      u.id,
      u.tenant_id,
      u.idempotency_key,
      u.workflow_id,
      u.storage_key,
      u.bytes,
      u.sha256,
      u.content_type,
      u.file_name,
      u.expires_at ?? null,
      u.token_id ?? null,
      u.subject ?? null,
      u.token_metadata ?? null,
      u.pipeline ?? null,
      u.pipeline_version ?? null,
      u.availability ?? 'available',
      u.traceparent ?? null,
      u.arrival ?? null,
      u.metadata ?? null,
      u.tags ?? [],
    ],
  );
  return res.rows[0];
}

export async function findUpload(db: Queryable, tenantId: string, id: string): Promise<UploadRow | undefined> {
  const res = await db.query<UploadRow>(statement('find_upload', 'SELECT * FROM uploads WHERE tenant_id = $1 AND id = $2', [tenantId, id]));
  return res.rows[0];
}

export async function findUploadByKey(db: Queryable, tenantId: string, key: string): Promise<UploadRow | undefined> {
  const res = await db.query<UploadRow>('SELECT * FROM uploads WHERE tenant_id = $1 AND idempotency_key = $2', [tenantId, key]);
  return res.rows[0];
}

/** An upload by id alone (a signed download URL names no tenant; the row says whose it is). */
export async function findUploadById(db: Queryable, id: string): Promise<UploadRow | undefined> {
  const res = await db.query<UploadRow>(statement('find_upload_by_id', 'SELECT * FROM uploads WHERE id = $1', [id]));
  return res.rows[0];
}

/** The states the uploads list filters by: the `status` each upload shows (deleted_pending within a restore window). */
export const UPLOAD_STATUSES = ['committed', 'processed', 'deleted_pending', 'deleted'] as const;

export interface UploadFilter {
  status?: (typeof UPLOAD_STATUSES)[number];
  /** `type/subtype`, or `type/*` for every subtype. */
  contentType?: string;
  createdAfter?: Date;
  createdBefore?: Date;
  idempotencyKey?: string;
  /** Uploads made with an upload token naming this subject. */
  subject?: string;
  /** Keys starting with this (uploads_key_prefix_idx). */
  keyPrefix?: string;
  /** File names starting with this, ignoring case (uploads_file_name_prefix_idx). */
  fileNamePrefix?: string;
  /** Uploads carrying every one of these tags (upload_labels). */
  tags?: string[];
  /** Uploads whose metadata has each of these top-level `key` = `value` (upload_labels: strings as they are, numbers and booleans as JSON). */
  metadata?: [string, string][];
  /** Uploads stored in this target (null: the instance's store). */
  storageTarget?: string | null;
  /** Uploads stored in a target with this residency label. */
  residency?: string;
  /** With `residency`: whether the instance's store has that label (STORAGE_RESIDENCY). */
  residencyIsDefault?: boolean;
}

/**
 * One page of a tenant's uploads, newest first, strictly after `after` (keyset pagination on
 * uploads_tenant_created_idx: rows inserted meanwhile land before the position, so none is
 * skipped or repeated). Each row carries its position, the next page's cursor.
 */
function likeEscaped(text: string): string {
  return text.replace(/[\\%_]/g, (ch) => `\\${ch}`);
}

/** The tenant's uploads per hour over the last `hours`, oldest hour first (the console's sparkline). */
export async function uploadsPerHour(db: Queryable, tenantId: string, hours = 24): Promise<number[]> {
  const res = await db.query<{ hour: number; n: string }>(
    `SELECT floor(extract(epoch FROM (now() - created_at)) / 3600)::int AS hour, count(*) AS n FROM uploads
      WHERE tenant_id = $1 AND created_at > now() - make_interval(hours => $2)
      GROUP BY 1`,
    [tenantId, hours],
  );
  const counts = new Array<number>(hours).fill(0);
  for (const r of res.rows) if (r.hour >= 0 && r.hour < hours) counts[hours - 1 - r.hour] = Number(r.n);
  return counts;
}

export async function listUploads(
  db: Queryable,
  tenantId: string,
  filter: UploadFilter,
  after: ListPosition | undefined,
  limit: number,
): Promise<(UploadRow & { position: ListPosition })[]> {
  const values: unknown[] = [tenantId];
  const add = (sql: (n: string) => string, value: unknown) => {
    values.push(value);
    where.push(sql(`$${values.length}`));
  };
  // A label filter walks the rarest label's index range in creation order; the others are
  // checked per row. Without one, the tenant's uploads in creation order.
  const labels = [...(filter.tags ?? []).map(tagLabel), ...(filter.metadata ?? []).map(([k, v]) => metadataLabel(k, v))];
  const [driving, ...checked] = labels.length > 1 ? await rarestFirst(db, tenantId, labels) : labels;
  const where = driving === undefined ? ['u.tenant_id = $1'] : ['l.tenant_id = $1'];
  const [from, order] =
    driving === undefined
      ? ['uploads u', 'u.created_at DESC, u.id DESC']
      : ['upload_labels l JOIN uploads u ON u.id = l.upload_id', 'l.created_at DESC, l.upload_id DESC'];
  if (driving !== undefined) add((n) => `l.label = ${n}`, driving);
  if (after) where.push(driving === undefined ? pastPosition(values, after, '<', 'uuid', 'u.') : labelPastPosition(values, after));
  for (const label of checked)
    add((n) => `EXISTS (SELECT 1 FROM upload_labels c WHERE c.tenant_id = $1 AND c.label = ${n} AND c.upload_id = u.id)`, label);
  // An upload within its restore window shows deleted_pending, whatever its row's status.
  if (filter.status === 'deleted_pending') where.push('u.restorable_until IS NOT NULL');
  else if (filter.status) {
    add((n) => `u.status = ${n}`, filter.status);
    where.push('u.restorable_until IS NULL');
  }
  if (filter.contentType?.endsWith('/*')) add((n) => `starts_with(u.content_type, ${n})`, filter.contentType.slice(0, -1));
  else if (filter.contentType) add((n) => `u.content_type = ${n}`, filter.contentType);
  if (filter.createdAfter) add((n) => `u.created_at > ${n}`, filter.createdAfter);
  if (filter.createdBefore) add((n) => `u.created_at < ${n}`, filter.createdBefore);
  if (filter.idempotencyKey) add((n) => `u.idempotency_key = ${n}`, filter.idempotencyKey);
  if (filter.subject) add((n) => `u.subject = ${n}`, filter.subject);
  // LIKE with the pattern's wildcards escaped, in the form the text_pattern_ops indexes serve.
  if (filter.keyPrefix) add((n) => `u.idempotency_key LIKE ${n}`, `${likeEscaped(filter.keyPrefix)}%`);
  if (filter.storageTarget === null) where.push('u.storage_target IS NULL');
  else if (filter.storageTarget) add((n) => `u.storage_target = ${n}`, filter.storageTarget);
  if (filter.residency)
    add(
      (n) =>
        `(u.storage_target IN (SELECT t.id FROM storage_targets t WHERE t.tenant_id = $1 AND t.residency = ${n})${filter.residencyIsDefault ? ' OR u.storage_target IS NULL' : ''})`,
      filter.residency,
    );
  if (filter.fileNamePrefix) add((n) => `lower(u.file_name) LIKE ${n}`, `${likeEscaped(filter.fileNamePrefix.toLowerCase())}%`);
  values.push(limit);
  const res = await db.query<UploadRow & { created_micros: string }>(
    `SELECT u.*, ${positionColumn('u.')} FROM ${from}
      WHERE ${where.join(' AND ')}
      ORDER BY ${order}
      LIMIT $${values.length}`,
    values,
  );
  return res.rows.map(({ created_micros, ...row }) => ({ ...row, position: { createdMicros: created_micros, id: row.id } }));
}

/** The labels, the one on fewest uploads first (each counted up to RAREST_CAP, on the index alone). */
const RAREST_CAP = 20_000;
async function rarestFirst(db: Queryable, tenantId: string, labels: string[]): Promise<string[]> {
  const res = await db.query<{ label: string; n: number }>(
    `SELECT x AS label, (SELECT count(*)::int FROM (SELECT 1 FROM upload_labels WHERE tenant_id = $1 AND label = x LIMIT $3) s) AS n
       FROM unnest($2::text[]) AS x`,
    [tenantId, labels, RAREST_CAP],
  );
  return res.rows.sort((a, b) => a.n - b.n).map((r) => r.label);
}

/** "Past `after`" on the label index (its creation time and upload id are the upload's). */
function labelPastPosition(values: unknown[], after: ListPosition): string {
  values.push(after.createdMicros, after.id);
  const [micros, id] = [values.length - 1, values.length];
  return `(l.created_at, l.upload_id) < (timestamptz 'epoch' + $${micros}::bigint * interval '1 microsecond', $${id}::uuid)`;
}
