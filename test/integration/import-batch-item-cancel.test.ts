// The step an import batch runs for an item whose attempt failed as the batch's cancel reached
// it (Temporal does not retry such an attempt; the workflow's side of it:
// import-batch-workflow.test.ts). Run here as the worker runs it, against a real stack: an
// import the attempt had created is cancelled and its outcome recorded once it ends; an item
// that never started is left pending for the batch's end to skip, with nothing under its key.
import { randomBytes, randomUUID } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createImportActivities } from '../../activities/import-activities';
import { audit } from '../../src/audit';
import { loadSecretBox } from '../../src/secret-box';
import { createServices } from '../../src/services';
import { keyStoragePrefix } from '../../src/temporal/ids';
import { jsonCaller } from '../helpers/http';
import { eventually, listKeys, rowsForKey } from '../helpers/inspect';
import { startStackOnStore, type TestStack } from '../helpers/stack';
import { startFileOrigin, type FileOrigin } from '../support/file-origin';

const file = randomBytes(64 * 1024);
let stack: TestStack;
let tenant: { tenantId: string; apiKey: string };
let slow: FileOrigin;

beforeAll(async () => {
  stack = await startStackOnStore('local', 'batch_item_cancel');
  tenant = await stack.createTenant();
  // 64 KiB at 512 B/s: a read that went on would take two minutes.
  slow = await startFileOrigin(file);
  slow.throttle(512);
});
afterAll(async () => {
  await slow?.close();
  await stack?.stop();
});

const call = jsonCaller(() => ({ base: stack.url, apiKey: tenant.apiKey }));

/** The batch activities as a worker of this stack builds them, over the stack's own client. */
async function batchActivities() {
  const { config, pool, store } = stack.runtime;
  const box = await loadSecretBox(config.SECRETS_KEY, config.DATA_DIR);
  return createImportActivities({
    pool,
    store,
    secrets: box,
    imports: { allowPrivateNetworks: true, maxRedirects: 0, connectMs: 5_000, idleMs: 30_000, partBytes: 5 * 1024 * 1024 },
    importerFor: (client) => createServices({ config, pool, store, temporal: client, box }).importer,
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
