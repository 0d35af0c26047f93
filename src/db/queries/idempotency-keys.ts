// The stored answer per (tenant, key). Read on every request (the fast path); written
// only inside the records transaction (src/db/queries/records.ts).
import { statement, type Queryable } from '../pool';

/** The route recorded on upload key rows (every arrival mode of an upload shares it). */
export const UPLOAD_ROUTE = '/v1/uploads';

export interface KeyRow {
  tenant_id: string;
  key: string;
  /** The route whose request holds the key (UPLOAD_ROUTE for every upload). */
  route: string;
  fingerprint: string;
  workflow_id: string;
  upload_id: string | null;
  response_status: number;
  response_body: string;
  created_at: Date;
  completed_at: Date;
  expires_at: Date;
  /** The committing step's W3C traceparent (tracing on), for a replay's span link. */
  traceparent: string | null;
}

export async function findKey(db: Queryable, tenantId: string, key: string): Promise<KeyRow | undefined> {
  const res = await db.query<KeyRow>(
    statement(
      'find_idempotency_key',
      `SELECT tenant_id, key, route, fingerprint, workflow_id, upload_id, response_status, response_body,
                  created_at, completed_at, expires_at, traceparent
             FROM idempotency_keys
            WHERE tenant_id = $1 AND key = $2 AND expires_at > now()`,
      [tenantId, key],
    ),
  );
  return res.rows[0];
}

/** Inserts the key row unless (tenant, key) is held; the inserted row as its holder, or undefined when it was held. */
export async function insertKeyIfAbsent(
  db: Queryable,
  row: Omit<KeyRow, 'completed_at' | 'expires_at' | 'traceparent'> & { ttlSeconds: number; traceparent?: string | null },
): Promise<KeyHolder | undefined> {
  const res = await db.query<KeyHolder>(
    `INSERT INTO idempotency_keys
       (tenant_id, key, fingerprint, route, workflow_id, upload_id, response_status, response_body, created_at, expires_at, traceparent)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, now() + make_interval(secs => $10), $11)
     ON CONFLICT (tenant_id, key) DO NOTHING
     RETURNING route, fingerprint, upload_id, response_status, response_body`,
    [
      row.tenant_id,
      row.key,
      row.fingerprint,
      row.route,
      row.workflow_id,
      row.upload_id,
      row.response_status,
      row.response_body,
      row.created_at,
      row.ttlSeconds,
      row.traceparent ?? null,
    ],
  );
  return res.rows[0];
}

/** Whoever holds (tenant, key) in the key table, answered or still claimed, live or expired. */
export interface KeyHolder {
  route: string;
  fingerprint: string;
  upload_id: string | null;
  response_status: number | null;
  response_body: string | null;
}

export async function findKeyHolder(db: Queryable, tenantId: string, key: string): Promise<KeyHolder | undefined> {
  const res = await db.query<KeyHolder>(
    statement(
      'find_idempotency_key_holder',
      'SELECT route, fingerprint, upload_id, response_status, response_body FROM idempotency_keys WHERE tenant_id = $1 AND key = $2',
      [tenantId, key],
    ),
  );
  return res.rows[0];
}

/** A key's stored answer while it lives; `ttl_seconds` is how long it still does. */
export type LiveKeyAnswer = Pick<KeyRow, 'fingerprint' | 'upload_id' | 'response_status' | 'response_body'> & {
  expired: false;
  ttl_seconds: number;
  traceparent?: string | null;
};

export type KeyAnswer = LiveKeyAnswer | { expired: true; fingerprint: string | null; upload_id: string | null };

/**
 * The replay path's read, one statement (one round trip, one snapshot): the key row (its
 * live answer, or the fact that its TTL passed); or, once it is gone, the tombstone or the
 * upload that still holds the key (an expired key).
 */
const KEY_ANSWER = `SELECT fingerprint, upload_id, response_status, response_body, expires_at <= now() AS expired,
         extract(epoch FROM expires_at - now())::float8 AS ttl_seconds, traceparent, 0 AS rank
    FROM idempotency_keys WHERE tenant_id = $1 AND key = $2
  UNION ALL
  SELECT fingerprint, upload_id, NULL, NULL, true, NULL, NULL, 1 FROM idempotency_tombstones WHERE tenant_id = $1 AND key = $2
  UNION ALL
  SELECT NULL, id, NULL, NULL, true, NULL, NULL, 2 FROM uploads WHERE tenant_id = $1 AND idempotency_key = $2
  ORDER BY rank LIMIT 1`;

export async function findKeyAnswer(db: Queryable, tenantId: string, key: string): Promise<KeyAnswer | undefined> {
  const res = await db.query<KeyAnswer>(statement('find_idempotency_key_answer', KEY_ANSWER, [tenantId, key]));
  return res.rows[0];
}

/** A new run's payload data key, made and wrapped by the caller (src/codec/payload-codec.ts). */
export interface DraftedRunKey {
  id: string;
  scope: string;
  wrapped: string;
}

/**
 * The replay path's read before a new run may start: when the key has nothing to answer,
 * the run's data key is recorded in the same statement (the run's start then seals with it
 * without a round trip of its own). `recorded` is false when the key answers, or when the
 * scope already has a live key (another request's, or one left by a request that never
 * started its run): the run's start then finds that one.
 */
export async function findKeyAnswerRecordingRunKey(
  db: Queryable,
  tenantId: string,
  key: string,
  runKey: DraftedRunKey,
): Promise<{ answer: KeyAnswer | undefined; recorded: boolean }> {
  const res = await db.query<(KeyAnswer & { recorded: false }) | { recorded: true }>(
    statement(
      'find_idempotency_key_answer_recording_run_key',
      `WITH answer AS (${KEY_ANSWER}),
       made AS (
         INSERT INTO payload_keys (id, scope, tenant_id, wrapped)
         SELECT $3, $4, $1, $5 WHERE NOT EXISTS (SELECT 1 FROM answer)
         ON CONFLICT (scope) WHERE destroyed_at IS NULL DO NOTHING
         RETURNING id)
       SELECT fingerprint, upload_id, response_status, response_body, expired, ttl_seconds, traceparent, false AS recorded FROM answer
       UNION ALL
       SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, true FROM made`,
      [tenantId, key, runKey.id, runKey.scope, runKey.wrapped],
    ),
  );
  let answer: KeyAnswer | undefined;
  let recorded = false;
  for (const { recorded: made, ...row } of res.rows) {
    if (made) recorded = true;
    else answer = row as KeyAnswer;
  }
  return { answer, recorded };
}

/**
 * Replaces the stored answer of the upload's key (an erased upload answers 410, a rejected one
 * 409): a replay of the original request then gets that, never the 201 with its Location.
 */
export async function replaceUploadAnswer(db: Queryable, uploadId: string, answer: { status: number; body: string }): Promise<void> {
  await db.query('UPDATE idempotency_keys SET response_status = $2, response_body = $3 WHERE upload_id = $1', [
    uploadId,
    answer.status,
    answer.body,
  ]);
}
