// A workflow task can run the records transaction (its local activities) and then be lost:
// worker killed, task timed out. The 10,000-upload chaos run on the real Temporal server
// found the two ways that ended with a committed, acknowledged upload whose transcode and
// webhooks never ran (no downstream child):
//   - the re-run of the task was never offered a copy again — the offer was lost with the
//     task, and the client's retry was answered from the key row — so the run waited for the
//     receive timeout (an hour) and would then have failed as abandoned;
//   - the re-run was offered a copy the API had already deleted (the committed answer named
//     another), so commitObject failed and so did the run.
// From workflow revision 3 the run adopts the committed answer in both cases. Here the lost
// task's commit is made by hand with the real records activity, as in lost-commit.test.ts.
// With RECORD_HISTORIES=1 both runs' histories become replay fixtures (replay.test.ts).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { mediaPresets } from '../../src/services';
import { loadConfig } from '../../src/config';
import { createUploadActivities } from '../../activities/upload-activities';
import { startRuntime, type Runtime } from '../../src/runtime';
import { keyStoragePrefix, uploadWorkflowId } from '../../src/temporal/ids';
import { fingerprint } from '../../src/upload/fingerprint';
import type { StagedCopy, UploadRequest } from '../../src/upload/types';
import { uploadWorkflow } from '../../workflows';
import { startTestStack, type TestStack } from '../helpers/stack';
import { stackReceiver } from '../helpers/receiver';
import { getJson, sha256 } from '../helpers/http';
import { png } from '../helpers/media';
import { Readable } from 'node:stream';
import { writeFileSync } from 'node:fs';
import path from 'node:path';

let stack: TestStack;
let worker: Runtime | undefined;
let tenant: { tenantId: string; apiKey: string };
let image: Buffer;

beforeAll(async () => {
  stack = await startTestStack('losttask', { role: 'api', env: { LOST_COMMIT_PROBE_SECONDS: '1' } });
  tenant = await stack.createTenant();
  image = await png(64, 48);
  worker = await startRuntime(stack.config, 'worker', { workflowBundlePath: inject('stack').workflowBundlePath });
});
afterAll(async () => {
  await worker?.shutdown();
  await stack?.stop();
});

const receiver = () =>
  stackReceiver(stack, {
    transcodeQueue: stack.config.TASK_QUEUE_TRANSCODE,
    webhookRetry: { attemptTimeoutSeconds: 10, initialSeconds: 1, coefficient: 2, maxIntervalSeconds: 5, maxAttempts: 3 },
  });

/** A PNG request under a fresh key, and the lost task's commit of one copy of it (in the store). */
async function committedByLostTask(key: string) {
  const sha = sha256(image);
  const req: UploadRequest = {
    tenantId: tenant.tenantId,
    idempotencyKey: key,
    fingerprint: fingerprint({
      method: 'POST',
      route: '/v1/uploads',
      tenantId: tenant.tenantId,
      contentLength: image.length,
      contentType: 'image/png',
      sha256: sha,
      fileName: null,
    }),
    contentType: 'image/png',
    fileName: null,
    declaredBytes: image.length,
    declaredSha256: sha,
  };
  const attemptId = randomUUID();
  const copy: StagedCopy = {
    attemptId,
    fingerprint: req.fingerprint,
    storageKey: `${keyStoragePrefix(tenant.tenantId, key)}${attemptId}`,
    bytes: image.length,
    sha256: sha,
    sniffedType: 'image/png',
  };
  await stack.s3.put(copy.storageKey, Readable.from([image]), { contentType: 'image/png', contentLength: image.length });
  const workflowId = uploadWorkflowId(tenant.tenantId, key);
  const records = createUploadActivities({
    pool: stack.runtime.pool,
    store: stack.s3,
    ttlSeconds: 3600,
    presets: mediaPresets(loadConfig({})),
  });
  const committed = await records.commitRecords({ request: req, workflowId, uploadId: randomUUID(), startedAtMs: Date.now(), copy });
  expect(committed.downstreamNeeded).toBe(true); // a PNG: renditions to make
  return { req, copy, workflowId, committed };
}

async function recordHistory(name: string, workflowId: string): Promise<void> {
  if (!process.env.RECORD_HISTORIES) return;
  const history = await stack.temporal.workflow.getHandle(workflowId).fetchHistory();
  writeFileSync(path.resolve(import.meta.dirname, `../fixtures/histories/upload-${name}.json`), JSON.stringify(history, null, 1));
}

/** The downstream steps ran once: the upload is processed, with its renditions. */
async function expectProcessedOnce(uploadId: string) {
  await expect
    .poll(async () => (await getJson(`${stack.url}/v1/uploads/${uploadId}`, tenant.apiKey)).json.status, { timeout: 60_000, interval: 500 })
    .toBe('processed');
  const upload = await getJson(`${stack.url}/v1/uploads/${uploadId}`, tenant.apiKey);
  expect(upload.json.processing.status).toBe('ready');
  const runs: string[] = [];
  for await (const w of stack.temporal.workflow.list({ query: `WorkflowId = "downstream/${uploadId}"` })) runs.push(w.status.name);
  expect(runs).toEqual(['COMPLETED']);
}

it('a run never offered a copy again adopts the committed answer within a probe, and fires the downstream steps', async () => {
  const key = `lost-task-${randomUUID()}`;
  const { req, workflowId, committed } = await committedByLostTask(key);
  // The re-run of the lost task: started, never offered anything.
  const handle = await stack.temporal.workflow.start(uploadWorkflow, receiver().startOptions(req, workflowId));
  // Completes with the committed answer long before the hour-long receive timeout.
  expect(await handle.result()).toMatchObject({ status: committed.status, body: committed.body, uploadId: committed.uploadId });
  await expectProcessedOnce(committed.uploadId!);
  await recordHistory('lost-commit-probe', workflowId);
}, 90_000);

it('a run offered a copy the API has since deleted adopts the committed answer instead of failing', async () => {
  const key = `lost-task-gone-${randomUUID()}`;
  const { req, copy, workflowId, committed } = await committedByLostTask(key);
  // Another attempt's copy, already deleted by its API (the answer names the first).
  const gone: StagedCopy = { ...copy, attemptId: randomUUID(), storageKey: `${keyStoragePrefix(tenant.tenantId, key)}${randomUUID()}` };
  const outcome = await receiver().deliver(req, gone, 30_000);
  expect(outcome).toMatchObject({ kind: 'answer', response: { status: 201, body: committed.body } });
  expect(JSON.parse(committed.body).storageKey).toBe(copy.storageKey);
  // The run completes (not fails) with that answer.
  expect(await stack.temporal.workflow.getHandle(workflowId).result()).toMatchObject({ body: committed.body });
  await expectProcessedOnce(committed.uploadId!);
  await recordHistory('lost-commit-offered-gone', workflowId);
}, 90_000);
