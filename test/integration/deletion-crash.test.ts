// The worker SIGKILLed in the middle of deletions, then restarted: each deletion finishes
// from where it stopped — bytes, renditions and personal metadata gone, one upload.deleted
// event id (a copy cut off mid-delivery is sent again with the same id), audit clean.
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { audit } from '../../src/audit';
import type { ManagedProcess } from '../../src/devstack/process';
import { startTestStack, stackEnv, type TestStack } from '../helpers/stack';
import { postUpload } from '../helpers/http';
import { eventually, listKeys } from '../helpers/inspect';
import { audio, png } from '../helpers/media';
import { WebhookReceiver } from '../support/webhook-receiver';
import { startWorkerProcess } from '../helpers/worker-process';

let stack: TestStack;
let worker: ManagedProcess | undefined;
let receiver: WebhookReceiver;
let workerEnv: Record<string, string>;
let logFile: string;
let tenant: { tenantId: string; apiKey: string };

beforeAll(async () => {
  stack = await startTestStack('delcrash', { role: 'api', env: { WEBHOOK_TIMEOUT_SECONDS: '10' } });
  receiver = await new WebhookReceiver().start();
  workerEnv = { ...stackEnv(stack.name, stack.dbUrl), S3_BUCKET: stack.config.S3_BUCKET, WEBHOOK_TIMEOUT_SECONDS: '10' };
  logFile = path.join(inject('stack').tmpDir, `${stack.name}-worker.log`);
  worker = await startWorkerProcess(workerEnv, logFile);
  tenant = await stack.createTenant();
  const res = await fetch(`${stack.url}/v1/webhook-endpoints`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tenant.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url: receiver.url }),
  });
  receiver.secret = ((await res.json()) as { secret: string }).secret;
});

afterAll(async () => {
  await worker?.stop('SIGKILL');
  await stack?.stop();
  await receiver?.stop();
});

const auth = () => ({ authorization: `Bearer ${tenant.apiKey}` });
const detail = async (id: string) => (await (await fetch(`${stack.url}/v1/uploads/${id}`, { headers: auth() })).json()) as any;
const startDelete = async (id: string) => {
  const res = await fetch(`${stack.url}/v1/uploads/${id}`, { method: 'DELETE', headers: { ...auth(), prefer: 'wait=0' } });
  expect([200, 202]).toContain(res.status);
};
const restart = async () => {
  await worker!.stop('SIGKILL');
  worker = await startWorkerProcess(workerEnv, logFile);
};

async function expectErased(uploadId: string, storageKey: string) {
  await eventually(async () => (await detail(uploadId)).erasedAt !== null, 90_000);
  const d = await detail(uploadId);
  expect(d).toMatchObject({ status: 'deleted', fileName: null, renditions: [] });
  expect(await stack.runtime.store.head(storageKey)).toBeUndefined();
  expect(await listKeys(stack.runtime.store, `tenants/${tenant.tenantId}/renditions/${uploadId}/`)).toEqual([]);
  const deletedId = `evt_${uploadId.replaceAll('-', '')}_deleted`;
  await eventually(async () => receiver.received.some((r) => r.id === deletedId && r.answered === 200), 60_000);
  expect(
    new Set(receiver.received.filter((r) => r.json.type === 'upload.deleted' && r.json.data.uploadId === uploadId).map((r) => r.id)),
  ).toEqual(new Set([deletedId]));
  const run = stack.temporal.workflow.getHandle(`delete/${uploadId}`);
  await eventually(async () => (await run.describe()).status.name === 'COMPLETED', 60_000);
}

it('killed right after the tombstone, while the deletion waits for a cancelled transcode: the restart finishes it', async () => {
  const up = await postUpload(stack.url, {
    apiKey: tenant.apiKey,
    key: `delcrash-${randomUUID()}`,
    body: await audio(300),
    contentType: 'audio/wav',
    fileName: 'long.wav',
  });
  expect(up.status).toBe(201);
  const id = up.json.uploadId as string;
  const child = stack.temporal.workflow.getHandle(`downstream/${id}`);
  await eventually(async () => (await child.describe()).raw.pendingActivities?.some((a) => a.activityType?.name === 'runStep'), 60_000);
  await startDelete(id);
  await eventually(
    async () => (await stack.runtime.pool.query('SELECT 1 FROM uploads WHERE id = $1 AND deleted_at IS NOT NULL', [id])).rowCount === 1,
    30_000,
  );
  expect((await stack.temporal.workflow.getHandle(`delete/${id}`).describe()).status.name).toBe('RUNNING');
  await restart();
  await expectErased(id, up.json.storageKey);
  expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toEqual([]);
}, 180_000);

it('killed between the rendition deletes and the release of the original: the restart finishes it', async () => {
  const up = await postUpload(stack.url, {
    apiKey: tenant.apiKey,
    key: `delcrash-${randomUUID()}`,
    body: await png(320, 200),
    contentType: 'image/png',
    fileName: 'between.png',
  });
  const id = up.json.uploadId as string;
  await eventually(async () => (await detail(id)).status === 'processed', 60_000);
  const prefix = `tenants/${tenant.tenantId}/renditions/${id}/`;
  expect((await listKeys(stack.runtime.store, prefix)).length).toBeGreaterThan(0);
  // The rendition step deletes the objects, then their rows: a lock held on the rows stops
  // the worker exactly there, with the original not yet released.
  const blocker = await stack.runtime.pool.connect();
  try {
    await blocker.query('BEGIN');
    await blocker.query('SELECT 1 FROM renditions WHERE upload_id = $1 FOR UPDATE', [id]);
    await startDelete(id);
    await eventually(
      async () =>
        (
          await stack.runtime.pool.query(
            `SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'DELETE FROM renditions%'`,
          )
        ).rowCount === 1,
      60_000,
    );
    expect(await listKeys(stack.runtime.store, prefix)).toEqual([]);
    expect(await stack.runtime.store.head(up.json.storageKey)).toBeDefined();
    expect((await stack.runtime.pool.query('SELECT object_released FROM uploads WHERE id = $1', [id])).rows[0]).toEqual({
      object_released: false,
    });
    await worker!.stop('SIGKILL');
  } finally {
    await blocker.query('ROLLBACK');
    blocker.release();
  }
  worker = await startWorkerProcess(workerEnv, logFile);
  await expectErased(id, up.json.storageKey);
  expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toEqual([]);
}, 180_000);

it('killed while upload.deleted is being delivered (after the erasure): the restart sends it again with the same id', async () => {
  const up = await postUpload(stack.url, {
    apiKey: tenant.apiKey,
    key: `delcrash-${randomUUID()}`,
    body: await png(300, 200),
    contentType: 'image/png',
    fileName: 'p.png',
  });
  const id = up.json.uploadId as string;
  await eventually(async () => (await detail(id)).status === 'processed', 60_000);
  expect((await detail(id)).renditions.length).toBeGreaterThan(0);
  receiver.delayMs = 4_000;
  const deletedId = `evt_${id.replaceAll('-', '')}_deleted`;
  await startDelete(id);
  await eventually(async () => receiver.received.some((r) => r.id === deletedId), 60_000);
  receiver.delayMs = 0;
  await restart();
  await expectErased(id, up.json.storageKey);
  expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toEqual([]);
}, 180_000);
