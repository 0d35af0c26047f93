// Cancelling an import batch on both stores while its items are in every state an item can
// be in: importing (their imports cancelled, 410 import_canceled, no object or part upload
// kept), turned away by the tenant's imports in flight and waiting to ask again (never
// started: skipped with no error, nothing under its key), and not started at all. And the
// step the batch runs for an item whose attempt failed as the cancel reached it (Temporal does
// not retry such an attempt; the workflow's side: import-batch-workflow.test.ts), run as the
// worker runs it: an import the attempt had created is cancelled and its outcome recorded
// once it ends; an item that never started is left pending for the batch's end to skip.
import { randomBytes, randomUUID } from 'node:crypto';
import { temporal } from '@temporalio/proto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createImportActivities } from '../../activities/imports/import-activities';
import { audit } from '../../src/audit';
import { loadSecretBox } from '../../src/secret-box';
import { createServices } from '../../src/services';
import { ANY_AGE } from '../../src/storage/store';
import { keyStoragePrefix } from '../../src/temporal/ids';

import { jsonCaller } from '../helpers/http';
import { eventually, listKeys, rowsForKey } from '../helpers/inspect';
import { startStackOnStore, type TestStack } from '../helpers/stack';
import { startFileOrigin, type FileOrigin } from '../support/file-origin';
import { importWorkflowIds } from '../../src/imports/contract';

const file = randomBytes(64 * 1024);

describe.each(['local', 's3'] as const)('cancelling an import batch on the %s store', (kind) => {
  let stack: TestStack;
  let tenant: { tenantId: string; apiKey: string };
  let slow: FileOrigin;

  beforeAll(async () => {
    stack = await startStackOnStore(kind, `batch_cancel_${kind}`, {
      // Its warnings (an activity's failures and retries) are kept: a failure only load brings
      // out is then explained by its log.
      env: { TENANT_MAX_IMPORTS_IN_FLIGHT: '3', LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'warn' },
    });
    tenant = await stack.createTenant();
    // 64 KiB at 512 B/s per connection: a read that went on would take two minutes.
    slow = await startFileOrigin(file);
    slow.throttle(512);
  });
  afterAll(async () => {
    await slow?.close();
    await stack?.stop();
  });

  const call = jsonCaller(() => ({ base: stack.url, apiKey: tenant.apiKey }));

  it('cancels the items importing, and skips those turned away by the quota and those never started; nothing is kept', async () => {
    // Four at once against three imports in flight: one item is turned away and asks again.
    const items = Array.from({ length: 5 }, (_, i) => ({ url: `${slow.base}/under-way/${i}.bin` }));
    const started = await call('POST', '/v1/import-batches', { items, concurrency: 4 }, `batch-${randomUUID()}`);
    expect(started.status).toBe(202);
    const id = started.json.id as string;
    const itemKey = (n: number) => `import-batch/${id}/${n}`;
    const importing = async () =>
      (
        await stack.runtime.pool.query(
          `SELECT idempotency_key FROM imports WHERE tenant_id = $1 AND idempotency_key LIKE $2 AND state = 'importing'`,
          [tenant.tenantId, `import-batch/${id}/%`],
        )
      ).rows.map((r: { idempotency_key: string }) => r.idempotency_key);
    const batchRun = stack.temporal.workflow.getHandle(importWorkflowIds.importBatch(id));
    await eventually(async () => (await importing()).length === 3, 60_000);
    // The fourth item was refused for the quota and is between its attempts.
    await eventually(async () => (await batchRun.describe()).raw.pendingActivities?.some((a) => (a.attempt ?? 0) >= 2), 60_000);
    // Longer than an item's heartbeat timeout (20 s): an item waiting on its import keeps heartbeating.
    await new Promise((r) => setTimeout(r, 25_000));
    const underWay = await importing();
    expect(underWay).toHaveLength(3);
    const servedBefore = slow.served;
    const cancelledAt = Date.now();

    expect((await call('POST', `/v1/import-batches/${id}/cancel`)).status).toBe(202);
    const batch = await eventually(async () => {
      const b = await call('GET', `/v1/import-batches/${id}`);
      return b.json.state === 'cancelled' ? b.json : undefined;
    }, 120_000);
    expect(Date.now() - cancelledAt).toBeLessThan(55_000);
    expect(batch).toMatchObject({ total: 5, done: 0, failed: 0, skipped: 5, pending: 0 });
    const listed = (await call('GET', `/v1/import-batches/${id}/items`)).json.items as {
      n: number;
      state: string;
      error?: { error: string };
    }[];
    expect(listed.map((i) => i.state)).toEqual(Array(5).fill('skipped'));
    for (const item of listed) {
      const key = itemKey(item.n);
      const rows = await rowsForKey(stack.runtime.pool, tenant.tenantId, key);
      expect(rows.uploads).toEqual([]);
      expect(await listKeys(stack.runtime.store, keyStoragePrefix(tenant.tenantId, key))).toEqual([]);
      if (underWay.includes(key)) {
        // Its import was cancelled, and its key answers so.
        expect(item.error?.error).toBe('import_canceled');
        expect(rows.keys.map((k: { response_status: number }) => k.response_status)).toEqual([410]);
      } else {
        // Turned away by the quota or never started: no import, nothing under its key.
        expect(item.error ?? null).toBeNull();
        expect(rows.keys).toEqual([]);
      }
    }
    expect(await importing()).toEqual([]);
    const timedOut = temporal.api.enums.v1.EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT;
    expect((await stack.history(importWorkflowIds.importBatch(id))).events!.filter((e) => e.eventType === timedOut)).toEqual([]);
    // The origin stopped being read well short of the files, and no part upload was left open.
    expect(slow.served - servedBefore).toBeLessThan(2 * file.length);
    expect(await stack.runtime.store.abortStaleMultipartUploads(ANY_AGE)).toBe(0);
    expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toEqual([]);
  }, 180_000);

  /** The batch activities as a worker of this stack builds them, over the stack's own client. */
  async function batchActivities() {
    const { config, pool, store } = stack.runtime;
    const box = await loadSecretBox(config.SECRETS_KEY, config.DATA_DIR);
    return createImportActivities({
      pool,
      store,
      secrets: box,
      imports: { allowPrivateNetworks: true, maxRedirects: 0, connectMs: 5_000, idleMs: 30_000, partBytes: 5 * 1024 * 1024 },
      wiringFor: (client) => ({ ...createServices({ config, pool, store, temporal: client, box }), config, pool, temporal: client, box }),
    });
  }

  it("cancels the import an item's failed attempt had created and records it skipped; leaves an item never started pending", async () => {
    // One at a time: the first item reads the slow file, the second waits its turn.
    const items = [{ url: `${slow.base}/reading.bin` }, { url: `${slow.base}/waiting.bin` }];
    const started = await call('POST', '/v1/import-batches', { items, concurrency: 1 }, `batch-${randomUUID()}`);
    expect(started.status, started.text).toBe(202);
    const id = started.json.id as string;
    const listItems = async () =>
      (await call('GET', `/v1/import-batches/${id}/items`)).json.items as { n: number; state: string; error?: { error: string } }[];
    const [reading, waiting] = (await listItems()).map((i) => i.n) as [number, number];
    const itemKey = (n: number) => `import-batch/${id}/${n}`;
    const importState = async (n: number) =>
      (
        await stack.runtime.pool.query<{ state: string }>('SELECT state FROM imports WHERE tenant_id = $1 AND idempotency_key = $2', [
          tenant.tenantId,
          itemKey(n),
        ])
      ).rows.map((r) => r.state);
    await eventually(async () => (await importState(reading))[0] === 'importing', 60_000);

    const activities = await batchActivities();
    const env = new MockActivityEnvironment(undefined, { client: stack.temporal });

    // Never started: nothing to cancel, nothing recorded, nothing under its key.
    await env.run(activities.cancelImportBatchItem, { batchId: id, n: waiting });
    expect((await listItems()).find((i) => i.n === waiting)).toMatchObject({ state: 'pending' });
    expect(await importState(waiting)).toEqual([]);
    expect((await rowsForKey(stack.runtime.pool, tenant.tenantId, itemKey(waiting))).keys).toEqual([]);

    // Importing: cancelled, and the step returns once the import has ended and its outcome is recorded.
    const servedBefore = slow.served;
    await env.run(activities.cancelImportBatchItem, { batchId: id, n: reading });
    const item = (await listItems()).find((i) => i.n === reading)!;
    expect(item.state).toBe('skipped');
    expect(item.error?.error).toBe('import_canceled');
    const rows = await rowsForKey(stack.runtime.pool, tenant.tenantId, itemKey(reading));
    expect(rows.uploads).toEqual([]);
    expect(rows.keys.map((k: { response_status: number }) => k.response_status)).toEqual([410]);
    expect(await importState(reading)).not.toContain('importing');
    expect(await listKeys(stack.runtime.store, keyStoragePrefix(tenant.tenantId, itemKey(reading)))).toEqual([]);
    expect(slow.served - servedBefore).toBeLessThan(file.length);
    // Run again (a retry of the step after its worker died): the item has its outcome, nothing changes.
    await env.run(activities.cancelImportBatchItem, { batchId: id, n: reading });
    expect((await listItems()).find((i) => i.n === reading)).toMatchObject({ state: 'skipped' });

    // The batch itself is cancelled as a caller would: it ends with both items skipped.
    expect((await call('POST', `/v1/import-batches/${id}/cancel`)).status).toBe(202);
    const batch = await eventually(async () => {
      const b = await call('GET', `/v1/import-batches/${id}`);
      return b.json.state === 'cancelled' ? b.json : undefined;
    }, 120_000);
    expect(batch).toMatchObject({ total: 2, done: 0, failed: 0, skipped: 2, pending: 0 });
    expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toEqual([]);
  }, 240_000);
});
