// The LISTEN side of `GET /v1/uploads/{id}?wait` against real PostgreSQL: a committed move
// to 'processed' wakes exactly that upload's waiters, a rolled-back one wakes nobody, and a
// listener whose connection is killed comes back and hears the next commit. The ?wait loop
// finds an upload or an import in flight through one lookup, and follows an import to its upload.
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withTransaction, type Pool } from '../../src/db/pool';
import { insertUploadIfAbsent } from '../../src/db/queries/uploads';
import { pollingOnly, UploadProcessedListener } from '../../src/db/upload-processed';
import { awaitProcessed } from '../../src/upload/await-processed';
import { endImport, findUploadOrImport, insertImportOrGet, type UploadOrImport } from '../../src/db/queries/imports';
import { createTenant } from '../../src/tenants';
import { startTenantDatabase, type TenantDatabase } from '../helpers/stack';
import { eventually } from '../helpers/inspect';

let pool: Pool;
let listener: UploadProcessedListener;
let tenantId: string;
let db: TenantDatabase | undefined;

beforeAll(async () => {
  db = await startTenantDatabase('notify');
  ({ pool, tenantId } = db);
  listener = await UploadProcessedListener.start(db.url, pino({ level: 'silent' }));
});

afterAll(async () => {
  await listener?.close();
  await db?.drop();
});

/** A committed upload's row under `id`. */
const uploadRow = (id: string) => ({
  id,
  tenant_id: tenantId,
  idempotency_key: `k-${id}`,
  workflow_id: `upload/${tenantId}/k-${id}`,
  storage_key: `objects/${id}`,
  sha256: '0'.repeat(64),
  content_type: 'text/plain',
  file_name: null,
  bytes: 1,
});

async function newUpload(): Promise<string> {
  const id = randomUUID();
  await insertUploadIfAbsent(pool, uploadRow(id));
  return id;
}

/** An import not yet committed under `id`. */
const newImport = (id: string) =>
  insertImportOrGet(
    pool,
    { id, tenant_id: tenantId, idempotency_key: `k-${id}`, fingerprint: 'f', origin: 'https://files.example', token_id: null },
    100,
  );

/** An upload's status, or an import's state. */
const statusOf = (f: UploadOrImport | undefined) => (f?.kind === 'upload' ? f.row.status : f?.row.state);

const markProcessed = (id: string) => pool.query(`UPDATE uploads SET status = 'processed', processed_at = now() WHERE id = $1`, [id]);

it('wakes the waiters of the upload whose move to processed commits, and nobody else', async () => {
  expect(listener.isListening).toBe(true);
  const [a, b] = [await newUpload(), await newUpload()];
  const waitA = listener.subscribe(a, 60_000);
  const waitA2 = listener.subscribe(a, 60_000);
  const waitB = listener.subscribe(b, 1_500);
  await markProcessed(a);
  expect(await waitA.outcome).toBe('processed');
  expect(await waitA2.outcome).toBe('processed');
  expect(await waitB.outcome).toBe('timeout');
});

it('wakes nobody for a rolled-back update or one that leaves the status as it was', async () => {
  const id = await newUpload();
  const rolledBack = listener.subscribe(id, 1_500);
  await withTransaction(pool, async (tx) => {
    await tx.query(`UPDATE uploads SET status = 'processed' WHERE id = $1`, [id]);
    throw new Error('roll back');
  }).catch(() => {});
  expect(await rolledBack.outcome).toBe('timeout');

  const first = listener.subscribe(id, 60_000);
  await markProcessed(id);
  expect(await first.outcome).toBe('processed'); // its notification is out of the way
  const again = listener.subscribe(id, 1_500);
  await markProcessed(id); // already processed: the trigger's WHEN skips it
  expect(await again.outcome).toBe('timeout');
});

it('reconnects after its connection is killed and hears the next commit', async () => {
  const killed = await pool.query(
    `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query ILIKE 'LISTEN%'`,
  );
  expect(killed.rowCount).toBe(1);
  await eventually(async () => !listener.isListening, 10_000);
  expect(listener.pollMs).toBeLessThan(1_000); // waiters poll quickly while it is down
  await eventually(async () => listener.isListening, 30_000);
  const id = await newUpload();
  const wait = listener.subscribe(id, 60_000);
  await markProcessed(id);
  expect(await wait.outcome).toBe('processed');
});

it('a cancelled subscription neither resolves nor keeps its upload registered', async () => {
  const id = await newUpload();
  const sub = listener.subscribe(id, 60_000);
  sub.cancel();
  const later = listener.subscribe(id, 60_000);
  await markProcessed(id);
  expect(await later.outcome).toBe('processed');
  const settled = await Promise.race([sub.outcome, new Promise((r) => setTimeout(() => r('pending'), 500))]);
  expect(settled).toBe('pending');
});

describe('awaitProcessed (the ?wait loop)', () => {
  const deps = () => ({ pool, signal: pollingOnly(100) });

  it('returns the row once processed with no notifications at all (UPLOAD_WAIT_LISTEN=false)', async () => {
    const id = await newUpload();
    const waiting = awaitProcessed(deps(), tenantId, id, 30_000);
    await markProcessed(id);
    expect(statusOf(await waiting)).toBe('processed');
  });

  it('returns the row as it is when the wait runs out, and nothing for an unknown or foreign id', async () => {
    const id = await newUpload();
    expect(statusOf(await awaitProcessed(deps(), tenantId, id, 300))).toBe('committed');
    expect(statusOf(await awaitProcessed(deps(), tenantId, id, 0))).toBe('committed');
    expect(await awaitProcessed(deps(), tenantId, randomUUID(), 300)).toBeUndefined();
    const other = (await createTenant(pool, 'other')).tenantId;
    expect(await awaitProcessed(deps(), other, id, 300)).toBeUndefined();
  });

  it('answers on the notification with the listener, without waiting out its poll interval', async () => {
    const id = await newUpload();
    const slowPoll = await UploadProcessedListener.start(pool.options.connectionString!, pino({ level: 'silent' }), { pollMs: 120_000 });
    try {
      const waiting = awaitProcessed({ pool, signal: slowPoll }, tenantId, id, 60_000);
      await eventually(
        async () =>
          (await pool.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND query ILIKE 'LISTEN%'`)).rowCount === 2,
        10_000,
      );
      await markProcessed(id);
      expect(statusOf(await waiting)).toBe('processed');
    } finally {
      await slowPoll.close();
    }
  }, 30_000);

  it('finds an import in flight through the same lookup, waits on it, and follows its commit to the upload', async () => {
    const id = randomUUID();
    await newImport(id);
    expect(await findUploadOrImport(pool, tenantId, id)).toMatchObject({ kind: 'import', row: { id, state: 'importing' } });
    expect(await findUploadOrImport(pool, (await createTenant(pool, 'other-import')).tenantId, id)).toBeUndefined();
    // Still importing when the wait runs out: the import as it is.
    expect(await awaitProcessed(deps(), tenantId, id, 300)).toMatchObject({ kind: 'import', row: { state: 'importing' } });
    // Committed while a wait is on it (the commit deletes the import and inserts the upload in
    // one transaction): the wait goes on with the upload and returns it once processed.
    const waiting = awaitProcessed(deps(), tenantId, id, 30_000);
    await withTransaction(pool, async (tx) => {
      await endImport(tx, id, 'committed');
      await insertUploadIfAbsent(tx, uploadRow(id));
    });
    expect(await findUploadOrImport(pool, tenantId, id)).toMatchObject({ kind: 'upload', row: { id, status: 'committed' } });
    await markProcessed(id);
    expect(statusOf(await waiting)).toBe('processed');
  });

  it('returns a failed import at once, whatever the wait', async () => {
    const id = randomUUID();
    await newImport(id);
    await endImport(pool, id, 'failed');
    const started = Date.now();
    expect(await awaitProcessed(deps(), tenantId, id, 30_000)).toMatchObject({ kind: 'import', row: { state: 'failed' } });
    expect(Date.now() - started).toBeLessThan(20_000);
  });
});
