// Byte quotas and usage (migration 040). A new upload's reservation is made under the tenant's
// row lock (the count quotas' lock) when the tenant has a quota, so concurrent admissions are counted one after
// another; the records transaction turns it into usage, once (`chargeCommit`); erasure
// releases stored bytes (`releaseStored`). Usage is counted per hour by those transactions.
import type { Pool, Queryable } from '../pool';
import { withTransaction } from '../pool';

export interface ByteQuotas {
  maxStoredBytes: number | null;
  maxIngressBytesPerMonth: number | null;
  maxUploadsPerMonth: number | null;
}

export type ByteQuotaName = keyof ByteQuotas;

/** What counts against each quota now: committed usage and open reservations. */
export interface QuotaStanding {
  storedBytes: number;
  ingressBytesThisMonth: number;
  uploadsThisMonth: number;
  reservedBytes: number;
  reservedUploads: number;
}

/** An upload that would pass a byte quota: nothing was reserved or charged. */
export class ByteQuotaExceeded extends Error {
  constructor(
    readonly quota: ByteQuotaName,
    readonly limit: number,
    /** What is left under it (never negative). */
    readonly remaining: number,
    readonly requested: number,
  ) {
    super(`${quota} is ${limit}; ${remaining} left, ${requested} asked`);
    this.name = 'ByteQuotaExceeded';
  }
}

const LIMIT_COLUMNS = `max_stored_bytes::float8 AS "maxStoredBytes", max_ingress_bytes_per_month::float8 AS "maxIngressBytesPerMonth",
  max_uploads_per_month::float8 AS "maxUploadsPerMonth"`;
const UNLIMITED = 'max_stored_bytes IS NULL AND max_ingress_bytes_per_month IS NULL AND max_uploads_per_month IS NULL';
const THIS_MONTH = "date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'";
const THIS_HOUR = "date_trunc('hour', now())";
/** A reservation `q` no open session and no import in flight holds. */
const UNHELD = `NOT EXISTS (SELECT 1 FROM resumable_sessions s
                   WHERE s.tenant_id = q.tenant_id AND s.idempotency_key = q.idempotency_key AND s.state <> 'committed')
  AND NOT EXISTS (SELECT 1 FROM imports i WHERE i.tenant_id = q.tenant_id AND i.idempotency_key = q.idempotency_key AND i.state = 'importing')`;

export async function findByteQuotas(db: Queryable, tenantId: string): Promise<ByteQuotas | undefined> {
  return (await db.query<ByteQuotas>(`SELECT ${LIMIT_COLUMNS} FROM tenants WHERE id = $1`, [tenantId])).rows[0];
}

function isLimited(q: ByteQuotas | undefined): boolean {
  return !!q && (q.maxStoredBytes !== null || q.maxIngressBytesPerMonth !== null || q.maxUploadsPerMonth !== null);
}

/** The tenant's quotas, its row locked for the transaction (the count quotas' lock, `lockTenant`). */
async function lockedQuotas(tx: Queryable, tenantId: string): Promise<ByteQuotas> {
  const res = await tx.query<ByteQuotas>(`SELECT ${LIMIT_COLUMNS} FROM tenants WHERE id = $1 FOR UPDATE`, [tenantId]);
  return res.rows[0] ?? NO_QUOTAS;
}

/** Changes the quotas given (null: unlimited; absent: kept); undefined for no live tenant. */
export async function setByteQuotas(db: Queryable, tenantId: string, q: Partial<ByteQuotas>): Promise<ByteQuotas | undefined> {
  const res = await db.query<ByteQuotas>(
    `UPDATE tenants SET
       max_stored_bytes = CASE WHEN $2 THEN $3::bigint ELSE max_stored_bytes END,
       max_ingress_bytes_per_month = CASE WHEN $4 THEN $5::bigint ELSE max_ingress_bytes_per_month END,
       max_uploads_per_month = CASE WHEN $6 THEN $7::bigint ELSE max_uploads_per_month END
     WHERE id = $1 AND closed_at IS NULL RETURNING ${LIMIT_COLUMNS}`,
    [
      tenantId,
      q.maxStoredBytes !== undefined,
      q.maxStoredBytes ?? null,
      q.maxIngressBytesPerMonth !== undefined,
      q.maxIngressBytesPerMonth ?? null,
      q.maxUploadsPerMonth !== undefined,
      q.maxUploadsPerMonth ?? null,
    ],
  );
  return res.rows[0];
}

/** The tenant's usage and reservations now; `exceptKey`'s own reservation is left out (it is being replaced). */
export async function quotaStanding(db: Queryable, tenantId: string, exceptKey = ''): Promise<QuotaStanding> {
  const res = await db.query<QuotaStanding>(
    `SELECT coalesce((SELECT stored_bytes FROM tenant_usage WHERE tenant_id = $1), 0)::float8 AS "storedBytes",
            (SELECT coalesce(sum(ingress_bytes), 0) FROM usage_hours WHERE tenant_id = $1 AND hour >= ${THIS_MONTH})::float8 AS "ingressBytesThisMonth",
            (SELECT coalesce(sum(uploads), 0) FROM usage_hours WHERE tenant_id = $1 AND hour >= ${THIS_MONTH})::float8 AS "uploadsThisMonth",
            coalesce(sum(r.bytes), 0)::float8 AS "reservedBytes", count(r.*)::float8 AS "reservedUploads"
       FROM quota_reservations r WHERE r.tenant_id = $1 AND r.idempotency_key <> $2`,
    [tenantId, exceptKey],
  );
  return res.rows[0]!;
}

export const NO_QUOTAS: ByteQuotas = { maxStoredBytes: null, maxIngressBytesPerMonth: null, maxUploadsPerMonth: null };

/** What counts against each quota: usage and open reservations. */
function usedUnder(s: QuotaStanding): Record<ByteQuotaName, number> {
  return {
    maxStoredBytes: s.storedBytes + s.reservedBytes,
    maxIngressBytesPerMonth: s.ingressBytesThisMonth + s.reservedBytes,
    maxUploadsPerMonth: s.uploadsThisMonth + s.reservedUploads,
  };
}

/** What is left under each quota (null: unlimited; never negative). */
export function remainingUnder(q: ByteQuotas, s: QuotaStanding): Record<ByteQuotaName, number | null> {
  const used = usedUnder(s);
  const left = (name: ByteQuotaName) => (q[name] === null ? null : Math.max(0, q[name] - used[name]));
  return {
    maxStoredBytes: left('maxStoredBytes'),
    maxIngressBytesPerMonth: left('maxIngressBytesPerMonth'),
    maxUploadsPerMonth: left('maxUploadsPerMonth'),
  };
}

/** The first quota `bytes` more (and one upload more) would pass, or undefined. */
export function firstExceeded(q: ByteQuotas, s: QuotaStanding, bytes: number): ByteQuotaExceeded | undefined {
  const used = usedUnder(s);
  const checks: [ByteQuotaName, number, number][] = [
    ['maxStoredBytes', used.maxStoredBytes, bytes],
    ['maxIngressBytesPerMonth', used.maxIngressBytesPerMonth, bytes],
    ['maxUploadsPerMonth', used.maxUploadsPerMonth, 1],
  ];
  for (const [name, usedNow, more] of checks) {
    const limit = q[name];
    if (limit !== null && usedNow + more > limit) return new ByteQuotaExceeded(name, limit, Math.max(0, limit - usedNow), more);
  }
  return undefined;
}

/**
 * Reserves `bytes` (null: not declared) for the key until `ttlSeconds` from now. A tenant
 * without quotas is one statement; with one, the reservation is made under the tenant's lock
 * after the check, or ByteQuotaExceeded is thrown and nothing is reserved. A key already
 * holding a reservation keeps it as it is.
 */
export async function reserveBytes(
  pool: Pool,
  r: { tenantId: string; key: string; bytes: number | null; ttlSeconds: number },
): Promise<void> {
  // One reservation per key, however many requests are admitted under it: the first.
  const onConflict = 'ON CONFLICT (tenant_id, idempotency_key) DO NOTHING';
  const args = [r.tenantId, r.key, r.bytes, r.ttlSeconds];
  const quick = await pool.query<{ unlimited: boolean; inserted: number }>(
    `WITH t AS (SELECT (${UNLIMITED}) AS unlimited FROM tenants WHERE id = $1),
          ins AS (INSERT INTO quota_reservations (tenant_id, idempotency_key, bytes, expires_at)
                  SELECT $1::uuid, $2::text, $3::bigint, now() + make_interval(secs => $4::float8) FROM t
                   WHERE t.unlimited AND NOT EXISTS (SELECT 1 FROM uploads WHERE tenant_id = $1 AND idempotency_key = $2)
                  ${onConflict} RETURNING 1)
     SELECT t.unlimited, (SELECT count(*) FROM ins)::int AS inserted FROM t`,
    args,
  );
  const row = quick.rows[0];
  let inserted = (row?.inserted ?? 0) > 0;
  if (row && !row.unlimited)
    inserted = await withTransaction(pool, async (tx) => {
      const quotas = await lockedQuotas(tx, r.tenantId);
      // A retry under a key that already made its upload is answered from it: nothing to reserve, never refused.
      if (await keyHasUpload(tx, r.tenantId, r.key)) return false;
      // Read after the lock: what the admissions before this one reserved is counted.
      const over = firstExceeded(quotas, await quotaStanding(tx, r.tenantId, r.key), r.bytes ?? 0);
      if (over) throw over;
      const made = await tx.query(
        `INSERT INTO quota_reservations (tenant_id, idempotency_key, bytes, expires_at)
         VALUES ($1, $2, $3, now() + make_interval(secs => $4)) ${onConflict} RETURNING 1`,
        args,
      );
      return (made.rowCount ?? 0) > 0;
    });
  // An insert that waited on the key's commit (which deleted its earlier reservation) checked for
  // the upload before that commit: a statement after it sees the upload, and the reservation goes.
  if (inserted)
    await pool.query(
      `DELETE FROM quota_reservations WHERE tenant_id = $1 AND idempotency_key = $2
          AND EXISTS (SELECT 1 FROM uploads WHERE tenant_id = $1 AND idempotency_key = $2)`,
      [r.tenantId, r.key],
    );
}

async function keyHasUpload(db: Queryable, tenantId: string, key: string): Promise<boolean> {
  const res = await db.query('SELECT 1 FROM uploads WHERE tenant_id = $1 AND idempotency_key = $2', [tenantId, key]);
  return (res.rowCount ?? 0) > 0;
}

/**
 * Whether `bytes` more (and one upload) could be reserved now, without reserving or locking:
 * ByteQuotaExceeded when not. For a refusal before anything is read; the reservation itself
 * is made later, under the lock, and decides.
 */
export async function checkBytes(db: Queryable, r: { tenantId: string; key: string; bytes: number }): Promise<void> {
  const quotas = await findByteQuotas(db, r.tenantId);
  if (!quotas || !isLimited(quotas) || (await keyHasUpload(db, r.tenantId, r.key))) return;
  const over = firstExceeded(quotas, await quotaStanding(db, r.tenantId, r.key), r.bytes);
  if (over) throw over;
}

/**
 * Reserves an import's bytes once read (its key is its import row's), as `reserveBytes` does:
 * the reservation its admission made without a size is replaced by one of the size read, so
 * its commit is covered.
 */
export async function reserveImportedBytes(pool: Pool, importId: string, bytes: number, ttlSeconds: number): Promise<void> {
  const row = (
    await pool.query<{ tenant_id: string; idempotency_key: string }>(
      `WITH i AS (SELECT tenant_id, idempotency_key FROM imports WHERE id = $1),
            unsized AS (DELETE FROM quota_reservations q USING i
                         WHERE q.tenant_id = i.tenant_id AND q.idempotency_key = i.idempotency_key AND q.bytes IS NULL)
       SELECT tenant_id, idempotency_key FROM i`,
      [importId],
    )
  ).rows[0];
  if (row) await reserveBytes(pool, { tenantId: row.tenant_id, key: row.idempotency_key, bytes, ttlSeconds });
}

/**
 * Drops the key's reservation (its upload will not commit from this attempt), unless a
 * session or an import in flight holds the key: a request refused under another door's key
 * leaves that upload's reservation alone.
 */
export async function releaseReservation(db: Queryable, tenantId: string, key: string): Promise<void> {
  await db.query(`DELETE FROM quota_reservations q WHERE q.tenant_id = $1 AND q.idempotency_key = $2 AND ${UNHELD}`, [tenantId, key]);
}

/**
 * Inside the records transaction: the key's reservation ends, and — for an upload row this
 * transaction wrote — its stored size is charged. A size its reservation did not cover
 * (length not declared, or the reservation expired) is checked under the tenant's lock first:
 * ByteQuotaExceeded rolls the commit back.
 */
export async function chargeCommit(
  tx: Queryable,
  c: { tenantId: string; key: string; /** Absent: a recorded rejection, nothing to charge. */ bytes?: number; imported?: boolean },
): Promise<void> {
  const gone = await tx.query<{ bytes: string | null }>(
    'DELETE FROM quota_reservations WHERE tenant_id = $1 AND idempotency_key = $2 RETURNING bytes',
    [c.tenantId, c.key],
  );
  if (c.bytes === undefined) return;
  const reserved = gone.rows[0]?.bytes;
  // A tenant without quotas is not locked: its commits never wait on one another here.
  if ((reserved === undefined || reserved === null || Number(reserved) < c.bytes) && isLimited(await findByteQuotas(tx, c.tenantId))) {
    const quotas = await lockedQuotas(tx, c.tenantId);
    const over = firstExceeded(quotas, await quotaStanding(tx, c.tenantId, c.key), c.bytes);
    if (over) throw over;
  }
  await tx.query(
    `WITH stored AS (
       INSERT INTO tenant_usage AS u (tenant_id, stored_bytes) VALUES ($1, $2)
       ON CONFLICT (tenant_id) DO UPDATE SET stored_bytes = u.stored_bytes + EXCLUDED.stored_bytes)
     INSERT INTO usage_hours AS h (tenant_id, hour, uploads, ingress_bytes, import_bytes, stored_added)
     VALUES ($1, ${THIS_HOUR}, 1, $2, $3, $2)
     ON CONFLICT (tenant_id, hour) DO UPDATE SET uploads = h.uploads + 1, ingress_bytes = h.ingress_bytes + EXCLUDED.ingress_bytes,
       import_bytes = h.import_bytes + EXCLUDED.import_bytes, stored_added = h.stored_added + EXCLUDED.stored_added`,
    [c.tenantId, c.bytes, c.imported === true ? c.bytes : 0],
  );
}

/**
 * Inside the transaction that records a rendition or an image variant of `uploadId`, before
 * its row: ByteQuotaExceeded when `bytes` more would pass the tenant's maxStoredBytes (open
 * reservations count: they are promised to uploads in flight). The tenant is locked only when
 * it has that quota, so concurrent renders are checked and charged one after another.
 */
export async function checkDerivedBytes(tx: Queryable, uploadId: string, bytes: number): Promise<void> {
  const owner = await tx.query<{ tenant_id: string }>(
    'SELECT u.tenant_id FROM uploads u JOIN tenants t ON t.id = u.tenant_id WHERE u.id = $1 AND t.max_stored_bytes IS NOT NULL',
    [uploadId],
  );
  const tenantId = owner.rows[0]?.tenant_id;
  if (!tenantId) return;
  const { maxStoredBytes } = await lockedQuotas(tx, tenantId);
  const over = firstExceeded({ ...NO_QUOTAS, maxStoredBytes }, await quotaStanding(tx, tenantId), bytes);
  if (over) throw over;
}

/**
 * Inside the transaction that first marks an upload erased: its bytes no longer count as
 * stored (a rejected upload's were released at its rejection).
 */
export async function releaseStored(tx: Queryable, uploadId: string): Promise<void> {
  const up = await tx.query<{ tenant_id: string; bytes: string }>(
    "SELECT tenant_id, bytes FROM uploads WHERE id = $1 AND availability <> 'rejected'",
    [uploadId],
  );
  if (up.rows[0]) await releaseStoredBytes(tx, up.rows[0].tenant_id, Number(up.rows[0].bytes));
}

/** `bytes` of the tenant's no longer count as stored, from this hour. */
export async function releaseStoredBytes(tx: Queryable, tenantId: string, bytes: number): Promise<void> {
  await tx.query(
    `WITH stored AS (UPDATE tenant_usage SET stored_bytes = greatest(0, stored_bytes - $2) WHERE tenant_id = $1)
     INSERT INTO usage_hours AS h (tenant_id, hour, stored_released) VALUES ($1, ${THIS_HOUR}, $2)
     ON CONFLICT (tenant_id, hour) DO UPDATE SET stored_released = h.stored_released + EXCLUDED.stored_released`,
    [tenantId, bytes],
  );
}

/** Counts bytes served by Oncely (downloads, variants) in the current hour. */
export async function countEgress(db: Queryable, tenantId: string, bytes: number): Promise<void> {
  await db.query(
    `INSERT INTO usage_hours AS h (tenant_id, hour, egress_bytes) VALUES ($1, ${THIS_HOUR}, $2)
     ON CONFLICT (tenant_id, hour) DO UPDATE SET egress_bytes = h.egress_bytes + EXCLUDED.egress_bytes`,
    [tenantId, bytes],
  );
}

/** Inside the transaction that records an image variant: one render for its upload's tenant, this hour. */
export async function countRender(tx: Queryable, uploadId: string): Promise<void> {
  await tx.query(
    `INSERT INTO usage_hours AS h (tenant_id, hour, renders) SELECT tenant_id, ${THIS_HOUR}, 1 FROM uploads WHERE id = $1
     ON CONFLICT (tenant_id, hour) DO UPDATE SET renders = h.renders + 1`,
    [uploadId],
  );
}

/**
 * Drops reservations past their expiry whose key no session or import still holds (a request
 * that ended without a word: the API killed mid-body); returns how many.
 */
export async function sweepReservations(db: Queryable, batch = 1000): Promise<number> {
  const res = await db.query(
    `DELETE FROM quota_reservations r
      WHERE (r.tenant_id, r.idempotency_key) IN (
        SELECT q.tenant_id, q.idempotency_key FROM quota_reservations q
         WHERE q.expires_at <= now()
           AND ${UNHELD}
         LIMIT $1)`,
    [batch],
  );
  return res.rowCount ?? 0;
}

export type Granularity = 'hour' | 'day';

export interface UsageBucket {
  at: Date;
  uploads: number;
  ingressBytes: number;
  importBytes: number;
  egressBytes: number;
  renders: number;
  storedAdded: number;
  storedReleased: number;
  /** Stored bytes at the bucket's end. */
  storedBytes: number;
}

/**
 * Usage per bucket in [from, to) for one tenant (or all, `tenantId` null), every bucket
 * present (zeros included). The stored level at a bucket's end is the level now less what
 * was added and released since.
 */
export async function usageSeries(
  db: Queryable,
  q: { tenantId: string | null; from: Date; to: Date; granularity: Granularity },
): Promise<UsageBucket[]> {
  const tenant = (column: string) => `AND ($1::uuid IS NULL OR ${column} = $1)`;
  const rows = await db.query<Omit<UsageBucket, 'storedBytes'>>(
    `SELECT b.at, coalesce(sum(h.uploads), 0)::float8 AS uploads, coalesce(sum(h.ingress_bytes), 0)::float8 AS "ingressBytes",
            coalesce(sum(h.import_bytes), 0)::float8 AS "importBytes", coalesce(sum(h.egress_bytes), 0)::float8 AS "egressBytes",
            coalesce(sum(h.renders), 0)::float8 AS renders, coalesce(sum(h.stored_added), 0)::float8 AS "storedAdded",
            coalesce(sum(h.stored_released), 0)::float8 AS "storedReleased"
       FROM generate_series($2::timestamptz, $3::timestamptz - make_interval(secs => 1), ('1 ' || $4)::interval) AS b(at)
       LEFT JOIN usage_hours h ON h.hour >= b.at AND h.hour < b.at + ('1 ' || $4)::interval ${tenant('h.tenant_id')}
      GROUP BY b.at ORDER BY b.at`,
    [q.tenantId, q.from, q.to, q.granularity],
  );
  const level = await db.query<{ now: number; since: number }>(
    `SELECT (SELECT coalesce(sum(stored_bytes), 0) FROM tenant_usage WHERE true ${tenant('tenant_id')})::float8 AS now,
            (SELECT coalesce(sum(stored_added - stored_released), 0) FROM usage_hours WHERE hour >= $2 ${tenant('tenant_id')})::float8 AS since`,
    [q.tenantId, q.to],
  );
  let stored = level.rows[0]!.now - level.rows[0]!.since;
  const out: UsageBucket[] = [];
  for (let i = rows.rows.length - 1; i >= 0; i--) {
    const b = rows.rows[i]!;
    out.unshift({ ...b, storedBytes: stored });
    stored -= b.storedAdded - b.storedReleased;
  }
  return out;
}
