// The worker SIGKILLed in the middle of a transcode and in the middle of a webhook
// delivery, then restarted: still one rendition set and one distinct webhook id per event.
import { randomUUID } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { audit } from '../../src/audit';
import { eventId } from '../../src/downstream/events';
import type { ManagedProcess } from '../../src/devstack/process';
import { startTestStack, stackEnv, type TestStack } from '../helpers/stack';
import { getJson, postUpload } from '../helpers/http';
import { eventually, listKeys } from '../helpers/inspect';
import { audio } from '../helpers/media';
import { WebhookReceiver } from '../support/webhook-receiver';
import { startWorkerProcess } from '../helpers/worker-process';

let stack: TestStack;
let worker: ManagedProcess | undefined;
let receiver: WebhookReceiver;
let workerEnv: Record<string, string>;
let logFile: string;

beforeAll(async () => {
  stack = await startTestStack('dcrash', { role: 'api', env: { WEBHOOK_TIMEOUT_SECONDS: '3' } });
  receiver = await new WebhookReceiver().start();
  workerEnv = { ...stackEnv(stack.name, stack.dbUrl), S3_BUCKET: stack.config.S3_BUCKET, WEBHOOK_TIMEOUT_SECONDS: '3' };
  logFile = path.join(inject('stack').tmpDir, `${stack.name}-worker.log`);
  worker = await startWorkerProcess(workerEnv, logFile);
});

afterAll(async () => {
  await worker?.stop('SIGKILL');
  await stack?.stop();
  await receiver?.stop();
});

const scratchDirsOf = async (pid: number) => (await readdir(os.tmpdir())).filter((n) => n.startsWith(`oncely-transcode-${pid}-`));

/**
 * Kills the worker mid-transcode — once its scratch directory shows the transcode is running
 * in it — and checks the next worker removes the dead one's scratch directory.
 */
async function restartWorker() {
  const killed = worker!.child.pid!;
  await eventually(async () => (await scratchDirsOf(killed)).length === 1, 60_000);
  await worker!.stop('SIGKILL');
  worker = await startWorkerProcess(workerEnv, logFile);
  expect(await scratchDirsOf(killed)).toEqual([]);
}

it('keeps one rendition set and one event id per event across worker kills', async () => {
  const tenant = await stack.createTenant();
  const res = await fetch(`${stack.url}/v1/webhook-endpoints`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tenant.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url: receiver.url }),
  });
  receiver.secret = ((await res.json()) as { secret: string }).secret;
  // The first upload.completed delivery is held open long enough to kill the worker mid-request.
  receiver.delayMs = 2_500;

  const created = await postUpload(stack.url, {
    apiKey: tenant.apiKey,
    key: `dcrash-${randomUUID()}`,
    body: await audio(300),
    contentType: 'audio/wav',
  });
  expect(created.status).toBe(201);
  const uploadId = created.json.uploadId;
  const child = stack.temporal.workflow.getHandle(`downstream/${uploadId}`);

  // Kill 1: while the receiver holds the first delivery open (mid-webhook) and the long
  // transcode is running with heartbeats (mid-transcode).
  await eventually(async () => {
    const desc = await child.describe();
    const transcode = desc.raw.pendingActivities?.find((a) => a.activityType?.name === 'runStep');
    return receiver.received.length >= 1 && transcode?.lastHeartbeatTime ? true : undefined;
  }, 60_000);
  receiver.delayMs = 0;
  await restartWorker();

  // Kill 2: the transcode retried on the new worker, killed again mid-way.
  await eventually(async () => {
    const desc = await child.describe();
    const transcode = desc.raw.pendingActivities?.find((a) => a.activityType?.name === 'runStep');
    if (process.env.DEBUG_CRASH)
      console.log(
        JSON.stringify({
          status: desc.status.name,
          pending: desc.raw.pendingActivities?.map((a) => [
            a.activityType?.name,
            a.state,
            a.attempt,
            a.lastHeartbeatTime?.seconds?.toString(),
            a.lastFailure?.message,
          ]),
        }),
      );
    return (transcode?.attempt ?? 0) >= 2 && transcode?.lastHeartbeatTime ? true : undefined;
  }, 90_000);
  await restartWorker();

  const done = await eventually(async () => {
    const r = await getJson(`${stack.url}/v1/uploads/${uploadId}`, tenant.apiKey);
    return r.json.status === 'processed' && r.json.deliveries.length === 2 && r.json.deliveries.every((d: any) => d.deliveredAt)
      ? r.json
      : undefined;
  }, 150_000);
  expect(done.processing.status).toBe('ready');
  expect(done.renditions.map((r: any) => r.name)).toEqual(['audio']);
  expect(await listKeys(stack.s3, `tenants/${tenant.tenantId}/renditions/${uploadId}/`)).toEqual([done.renditions[0].storageKey]);
  const rows = await stack.runtime.pool.query('SELECT count(*)::int AS n FROM renditions WHERE upload_id = $1', [uploadId]);
  expect(rows.rows[0].n).toBe(1);

  expect([...receiver.distinctIds('upload.completed')]).toEqual([eventId(uploadId, 'upload.completed')]);
  expect([...receiver.distinctIds('upload.processed')]).toEqual([eventId(uploadId, 'upload.processed')]);
  expect(receiver.received.every((r) => r.verified)).toBe(true);
  expect(await child.result()).toMatchObject({ processing: 'ready', renditions: ['audio'] });

  const report = await audit(stack.runtime.pool, stack.s3);
  expect(report.violations).toEqual([]);
  expect(report.renditions).toBe(1);
}, 300_000);
