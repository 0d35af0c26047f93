// Sessions of every resumable or signed mode (tus, direct, Uppy), in the resumable_sessions
// table. Every write is one statement guarded by the writer's lease and the offset it
// started from, so two replicas never both advance a session.
import type { SessionMode } from '../../modes';
import type { UploadGrant } from '../../tokens/grant';
import type { UploadLabels } from '../../upload/types';
import { statement, type Pool, type Queryable } from '../pool';
import { insertWithinQuota } from './quotas';

export interface SessionPart {
  partNumber: number;
  etag: string;
  bytes: number;
}

export interface SessionRow {
  id: string;
  tenant_id: string;
  idempotency_key: string;
  fingerprint: string;
  upload_length: string; // bigint
  upload_metadata: string;
  content_type: string;
  file_name: string | null;
  declared_sha256: string | null;
  storage_key: string;
  multipart_id: string;
  upload_offset: string; // bigint
  parts: SessionPart[];
  tail_key: string | null;
  tail_bytes: string; // bigint
  /** Written as HASH_HELD_IN_PROCESS (src/sessions/running-hash.ts); older builds saved hash-wasm states here. */
  sha256_state: Buffer | null;
  head: Buffer | null;
  state: 'open' | 'completing' | 'committed';
  mode: SessionMode;
  part_bytes: string | null; // bigint
  expires_at: Date | null;
  /** The pipeline the upload names; null: the tenant's default. */
  pipeline: string | null;
  /** The upload token it was created with, as of then. */
  upload_grant: UploadGrant | null;
  /** The metadata and tags it was created with. */
  labels: UploadLabels | null;
  lease_owner: string | null;
  updated_at: Date;
  created_at: Date;
}

const COLUMN_NAMES = [
  'id',
  'tenant_id',
  'idempotency_key',
  'fingerprint',
  'upload_length',
  'upload_metadata',
  'content_type',
  'file_name',
  'declared_sha256',
  'storage_key',
  'multipart_id',
  'upload_offset',
  'parts',
  'tail_key',
  'tail_bytes',
  'sha256_state',
  'head',
  'state',
  'lease_owner',
  'updated_at',
  'created_at',
  'mode',
  'part_bytes',
  'expires_at',
  'upload_grant',
  'pipeline',
  'labels',
];
const COLUMNS = COLUMN_NAMES.join(', ');

export type NewSession = Pick<
  SessionRow,
  | 'id'
  | 'tenant_id'
  | 'idempotency_key'
  | 'fingerprint'
  | 'upload_metadata'
  | 'content_type'
  | 'file_name'
  | 'declared_sha256'
  | 'storage_key'
  | 'multipart_id'
> & {
  upload_length: number;
  mode?: SessionMode;
  part_bytes?: number | null;
  expires_at?: string | null;
  upload_grant?: UploadGrant | null;
  pipeline?: string | null;
  labels?: UploadLabels | null;
  /** The creating request's W3C traceparent (tracing on). */
  traceparent?: string | null;
};

/**
 * Inserts the session unless the key already has one (returned instead), while the tenant
 * has fewer than `maxOpen` sessions not yet committed (else QuotaReached, nothing written).
 */
export async function insertSessionOrGet(pool: Pool, s: NewSession, maxOpen: number): Promise<{ row: SessionRow; created: boolean }> {
  return insertWithinQuota<{ row: SessionRow; created: boolean }>(
    pool,
    s.tenant_id,
    'open_sessions',
    maxOpen,
    async (tx) => {
      const inserted = await tx.query<SessionRow>(
        `INSERT INTO resumable_sessions (id, tenant_id, idempotency_key, fingerprint, upload_length, upload_metadata, content_type, file_name, declared_sha256, storage_key, multipart_id, mode, part_bytes, expires_at, upload_grant, pipeline, traceparent, labels)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18) RETURNING ${COLUMNS}`,
        [
          s.id,
          s.tenant_id,
          s.idempotency_key,
          s.fingerprint,
          s.upload_length,
          s.upload_metadata,
          s.content_type,
          s.file_name,
          s.declared_sha256,
          s.storage_key,
          s.multipart_id,
          s.mode ?? 'tus',
          s.part_bytes ?? null,
          s.expires_at ?? null,
          s.upload_grant ?? null,
          s.pipeline ?? null,
          s.traceparent ?? null,
          s.labels ?? null,
        ],
      );
      return { row: inserted.rows[0]!, created: true };
    },
    async (tx) => {
      const row = await findSessionByKey(tx, s.tenant_id, s.idempotency_key);
      return row && { row, created: false };
    },
  );
}

export async function findSessionByKey(db: Queryable, tenantId: string, key: string): Promise<SessionRow | undefined> {
  return (
    await db.query<SessionRow>(`SELECT ${COLUMNS} FROM resumable_sessions WHERE tenant_id = $1 AND idempotency_key = $2`, [tenantId, key])
  ).rows[0];
}

export async function sessionExists(db: Queryable, id: string): Promise<boolean> {
  return ((await db.query('SELECT 1 FROM resumable_sessions WHERE id = $1', [id])).rowCount ?? 0) > 0;
}

export async function findSession(db: Queryable, tenantId: string, id: string, mode: SessionMode = 'tus'): Promise<SessionRow | undefined> {
  return (
    await db.query<SessionRow>(
      statement('find_resumable_session', `SELECT ${COLUMNS} FROM resumable_sessions WHERE id = $1 AND tenant_id = $2 AND mode = $3`, [
        id,
        tenantId,
        mode,
      ]),
    )
  ).rows[0];
}

/** A tenant's session by its store upload id (the id @uppy/aws-s3 knows it by). */
export async function findSessionByUploadId(
  db: Queryable,
  tenantId: string,
  uploadId: string,
  mode: SessionMode,
): Promise<SessionRow | undefined> {
  return (
    await db.query<SessionRow>(`SELECT ${COLUMNS} FROM resumable_sessions WHERE tenant_id = $1 AND multipart_id = $2 AND mode = $3`, [
      tenantId,
      uploadId,
      mode,
    ])
  ).rows[0];
}

/** A session by id alone: for requests that carry a signature over the id instead of an API key. */
export async function findSessionById(db: Queryable, id: string, mode: SessionMode): Promise<SessionRow | undefined> {
  return (await db.query<SessionRow>(`SELECT ${COLUMNS} FROM resumable_sessions WHERE id = $1 AND mode = $2`, [id, mode])).rows[0];
}

/**
 * Takes the write lease; undefined while another PATCH holds it and is making progress
 * (a holder stalled for `stallSeconds`, or whose lease ran out, is taken over).
 */
export async function takeLease(
  db: Queryable,
  tenantId: string,
  id: string,
  owner: string,
  seconds: number,
  stallSeconds: number,
): Promise<SessionRow | undefined> {
  const res = await db.query<SessionRow>(
    `UPDATE resumable_sessions SET lease_owner = $3, lease_until = now() + make_interval(secs => $4), progress_at = now()
      WHERE id = $1 AND tenant_id = $2
        AND (lease_owner IS NULL OR lease_until < now() OR progress_at < now() - make_interval(secs => $5))
      RETURNING ${COLUMNS}`,
    [id, tenantId, owner, seconds, stallSeconds],
  );
  return res.rows[0];
}

/** Extends the lease (and marks progress when there was some); false once it was taken over. */
export async function renewLease(db: Queryable, id: string, owner: string, seconds: number, progressed: boolean): Promise<boolean> {
  const res = await db.query(
    `UPDATE resumable_sessions SET lease_until = now() + make_interval(secs => $3), progress_at = CASE WHEN $4 THEN now() ELSE progress_at END
      WHERE id = $1 AND lease_owner = $2`,
    [id, owner, seconds, progressed],
  );
  return res.rowCount === 1;
}

export async function releaseLease(db: Queryable, id: string, owner: string): Promise<void> {
  await db.query('UPDATE resumable_sessions SET lease_owner = NULL, lease_until = NULL WHERE id = $1 AND lease_owner = $2', [id, owner]);
}

export interface Acknowledgement {
  id: string;
  owner: string;
  fromOffset: number;
  toOffset: number;
  parts: SessionPart[];
  tailKey: string | null;
  tailBytes: number;
  sha256State: Uint8Array;
  head: Buffer | null;
  leaseSeconds: number;
}

/** Records acknowledged bytes; false when the lease or the offset moved (nothing written). */
export async function acknowledge(db: Queryable, a: Acknowledgement): Promise<boolean> {
  const res = await db.query(
    `UPDATE resumable_sessions
        SET upload_offset = $4, parts = $5, tail_key = $6, tail_bytes = $7, sha256_state = $8, head = COALESCE(head, $9),
            updated_at = now(), lease_until = now() + make_interval(secs => $10), progress_at = now()
      WHERE id = $1 AND lease_owner = $2 AND upload_offset = $3 AND state = 'open'`,
    [
      a.id,
      a.owner,
      a.fromOffset,
      a.toOffset,
      JSON.stringify(a.parts),
      a.tailKey,
      a.tailBytes,
      Buffer.from(a.sha256State),
      a.head,
      a.leaseSeconds,
    ],
  );
  return res.rowCount === 1;
}

/** Moves a session between states; false when it was not in `from`. */
export async function moveSession(db: Queryable, id: string, from: SessionRow['state'][], to: SessionRow['state']): Promise<boolean> {
  const res = await db.query('UPDATE resumable_sessions SET state = $3, updated_at = now() WHERE id = $1 AND state = ANY($2)', [
    id,
    from,
    to,
  ]);
  return res.rowCount === 1;
}

export async function deleteSession(db: Queryable, id: string): Promise<SessionRow | undefined> {
  // Its reservation under the byte quotas goes with it (a committed session's already went at the commit).
  const res = await db.query<SessionRow>(
    `WITH gone AS (DELETE FROM resumable_sessions WHERE id = $1 RETURNING ${COLUMNS}),
          freed AS (DELETE FROM quota_reservations r USING gone WHERE r.tenant_id = gone.tenant_id AND r.idempotency_key = gone.idempotency_key)
     SELECT * FROM gone`,
    [id],
  );
  return res.rows[0];
}

/** When a session idle since its last change expires: the rule expireIfIdle applies in SQL. */
export function idleExpiry(s: Pick<SessionRow, 'updated_at'>, idleSeconds: number): Date {
  return new Date(s.updated_at.getTime() + idleSeconds * 1000);
}

/**
 * The idle check behind a session's expiry: seconds until it may expire, or, when it has
 * been idle (no acknowledged write, no lease) for `idleSeconds`, its row deleted and returned.
 */
export async function expireIfIdle(db: Queryable, id: string, idleSeconds: number): Promise<{ secondsLeft: number; expired?: SessionRow }> {
  const res = await db.query<SessionRow & { seconds_left: number }>(
    `WITH s AS (
       SELECT id, state, greatest(extract(epoch FROM updated_at + make_interval(secs => $2) - now()),
                                  coalesce(extract(epoch FROM lease_until - now()), 0))::float8 AS seconds_left
         FROM resumable_sessions WHERE id = $1)
     , gone AS (
       DELETE FROM resumable_sessions r USING s
        WHERE r.id = s.id AND s.seconds_left <= 0 AND r.state = 'open'
        RETURNING ${COLUMN_NAMES.map((c) => `r.${c}`).join(', ')}, 0::float8 AS seconds_left)
     , freed AS (DELETE FROM quota_reservations q USING gone WHERE q.tenant_id = gone.tenant_id AND q.idempotency_key = gone.idempotency_key)
     SELECT * FROM gone`,
    [id, idleSeconds],
  );
  if (res.rows[0]) return { secondsLeft: 0, expired: res.rows[0] };
  const left = await db.query<{ seconds_left: number; state: string }>(
    `SELECT state, greatest(extract(epoch FROM updated_at + make_interval(secs => $2) - now()), 1)::float8 AS seconds_left FROM resumable_sessions WHERE id = $1`,
    [id, idleSeconds],
  );
  // Gone already (terminated, or committed and cleaned): nothing left to wait for.
  if (!left.rows[0]) return { secondsLeft: 0 };
  return { secondsLeft: Math.max(1, Math.ceil(left.rows[0].seconds_left)) };
}

/** The traceparent a session was created under (null: tracing was off, or no such session). */
export async function findSessionTraceparent(db: Queryable, id: string): Promise<string | null> {
  const res = await db.query<{ traceparent: string | null }>(
    statement('find_session_traceparent', 'SELECT traceparent FROM resumable_sessions WHERE id = $1', [id]),
  );
  return res.rows[0]?.traceparent ?? null;
}

/** A tenant's sessions not yet committed (its deletion ends them), a page at a time. */
export async function openSessionsOf(db: Queryable, tenantId: string, limit: number): Promise<SessionRow[]> {
  const res = await db.query<SessionRow>(
    `SELECT ${COLUMNS} FROM resumable_sessions WHERE tenant_id = $1 AND state <> 'committed' ORDER BY created_at LIMIT $2`,
    [tenantId, limit],
  );
  return res.rows;
}
