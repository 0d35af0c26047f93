// The requests each Idempotency-Key saw (migration 046): appended a batch at a time, read per
// key, removed once the key's row is gone and the key has been quiet a while.
import type { Queryable } from '../pool';

export interface KeyRequest {
  tenantId: string;
  idempotencyKey: string;
  at: Date;
  requestId: string;
  method: string;
  route: string;
  status: number;
  outcome: string;
}

/**
 * Appends a batch in one statement: each key's tally counts every request; its first `keep`
 * are kept whole, numbered in the order they came (a tally's row lock orders two writers).
 */
export async function appendKeyRequests(db: Queryable, batch: KeyRequest[], keep: number): Promise<void> {
  if (batch.length === 0) return;
  const col = <K extends keyof KeyRequest>(k: K) => batch.map((r) => r[k]);
  await db.query(
    `WITH incoming AS (
       SELECT t.*, row_number() OVER (PARTITION BY tenant_id, idempotency_key ORDER BY at, request_id) AS rn,
              count(*) OVER (PARTITION BY tenant_id, idempotency_key) AS added
         FROM unnest($1::uuid[], $2::text[], $3::timestamptz[], $4::text[], $5::text[], $6::text[], $7::int[], $8::text[])
           AS t(tenant_id, idempotency_key, at, request_id, method, route, status, outcome)),
     tally AS (
       INSERT INTO key_request_tallies AS k (tenant_id, idempotency_key, requests, first_at, last_at)
       SELECT tenant_id, idempotency_key, count(*), min(at), max(at) FROM incoming GROUP BY tenant_id, idempotency_key
       ON CONFLICT (tenant_id, idempotency_key) DO UPDATE
         SET requests = k.requests + EXCLUDED.requests, last_at = greatest(k.last_at, EXCLUDED.last_at)
       RETURNING tenant_id, idempotency_key, requests)
     INSERT INTO key_requests (tenant_id, idempotency_key, n, at, request_id, method, route, status, outcome)
     SELECT i.tenant_id, i.idempotency_key, t.requests - i.added + i.rn, i.at, i.request_id, i.method, i.route, i.status, i.outcome
       FROM incoming i JOIN tally t USING (tenant_id, idempotency_key)
      WHERE t.requests - i.added + i.rn <= $9
     ON CONFLICT DO NOTHING`,
    [col('tenantId'), col('idempotencyKey'), col('at'), col('requestId'), col('method'), col('route'), col('status'), col('outcome'), keep],
  );
}

export interface KeyRequestRow {
  n: string;
  at: Date;
  request_id: string;
  method: string;
  route: string;
  status: number;
  outcome: string;
}

/** The key's kept requests in order, and how many it saw in all (0: none recorded). */
export async function keyRequests(db: Queryable, tenantId: string, key: string): Promise<{ total: number; items: KeyRequestRow[] }> {
  const tally = await db.query<{ requests: string }>(
    'SELECT requests FROM key_request_tallies WHERE tenant_id = $1 AND idempotency_key = $2',
    [tenantId, key],
  );
  const items = await db.query<KeyRequestRow>(
    `SELECT n, at, request_id, method, route, status, outcome FROM key_requests
      WHERE tenant_id = $1 AND idempotency_key = $2 ORDER BY n`,
    [tenantId, key],
  );
  return { total: Number(tally.rows[0]?.requests ?? 0), items: items.rows };
}

/** Removes (up to 1,000 at a time) the logs of keys whose row is gone and that have been quiet for `quietSeconds`; how many keys. */
export async function expireKeyRequests(db: Queryable, quietSeconds: number): Promise<number> {
  const res = await db.query<{ n: number }>(
    `WITH gone AS (
       DELETE FROM key_request_tallies
        WHERE (tenant_id, idempotency_key) IN (
          SELECT t.tenant_id, t.idempotency_key FROM key_request_tallies t
           WHERE t.last_at < now() - make_interval(secs => $1)
             AND NOT EXISTS (SELECT 1 FROM idempotency_keys k WHERE k.tenant_id = t.tenant_id AND k.key = t.idempotency_key)
           LIMIT 1000)
        RETURNING tenant_id, idempotency_key),
     kept AS (DELETE FROM key_requests r USING gone g WHERE r.tenant_id = g.tenant_id AND r.idempotency_key = g.idempotency_key)
     SELECT count(*)::int AS n FROM gone`,
    [quietSeconds],
  );
  return res.rows[0]!.n;
}
