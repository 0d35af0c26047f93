// A worker SIGKILLed after the object commit and before the records transaction: after a
// restart the upload completes once — one row, one key row, one object, one execution.
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { audit } from '../../src/audit';
import { TcpProxy } from '../../src/devstack/tcp-proxy';
import type { ManagedProcess } from '../../src/devstack/process';
import { keyStoragePrefix, uploadWorkflowId } from '../../src/temporal/ids';
import { startTestStack, stackEnv, type TestStack } from '../helpers/stack';
import { getJson, postUpload, sha256 } from '../helpers/http';
import { eventually, listKeys, rowsForKey } from '../helpers/inspect';
import { startWorkerProcess } from '../helpers/worker-process';

let stack: TestStack;
let dbProxy: TcpProxy;
let worker: ManagedProcess | undefined;

beforeAll(async () => {
  stack = await startTestStack('crash', { role: 'api' });
  dbProxy = await new TcpProxy({ host: '127.0.0.1', port: 5432 }).start();
});

afterAll(async () => {
  await worker?.stop('SIGKILL');
  await stack?.stop();
  await dbProxy?.stop();
});

it('completes exactly once after the worker dies between commitObject and commitRecords', async () => {
  const tenant = await stack.createTenant();
  const workerEnv = { ...stackEnv(stack.name, stack.dbUrl.replace(':5432/', `:${dbProxy.port}/`)), S3_BUCKET: stack.config.S3_BUCKET };
  const logFile = path.join(inject('stack').tmpDir, `${stack.name}-worker.log`);
  worker = await startWorkerProcess(workerEnv, logFile);

  // The worker loses its database: commitObject (S3 only) succeeds, commitRecords cannot.
  dbProxy.setMode('refuse');
  const key = `crash-${randomUUID()}`;
  const file = Buffer.from('bytes that must survive a worker crash');
  const accepted = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: file, prefer: 'respond-async' });
  expect(accepted.status).toBe(202);

  const handle = stack.temporal.workflow.getHandle(uploadWorkflowId(tenant.tenantId, key));
  await eventually(async () => {
    const events = (await handle.fetchHistory()).events ?? [];
    const scheduled = events.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'commitObject');
    const completed = scheduled && events.some((e) => String(e.activityTaskCompletedEventAttributes?.scheduledEventId) === String(scheduled.eventId));
    const desc = await handle.describe();
    const pending = desc.raw.pendingActivities?.find((a) => a.activityType?.name === 'commitRecords');
    return completed && pending && (pending.attempt ?? 0) >= 2;
  }, 60_000);
  expect((await rowsForKey(stack.runtime.pool, tenant.tenantId, key)).uploads).toHaveLength(0);

  await worker.stop('SIGKILL');
  dbProxy.setMode('forward');
  worker = await startWorkerProcess(workerEnv, logFile);

  const done = await eventually(async () => {
    const r = await getJson(`${stack.url}/v1/idempotency-keys/${encodeURIComponent(key)}`, tenant.apiKey);
    return r.json?.state === 'completed' ? r.json : undefined;
  }, 90_000);
  expect(done.status).toBe(201);
  expect(done.response.sha256).toBe(sha256(file));

  const replay = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: file });
  expect(replay.status).toBe(201);
  expect(replay.json).toEqual(done.response);

  const rows = await rowsForKey(stack.runtime.pool, tenant.tenantId, key);
  expect(rows.uploads).toHaveLength(1);
  expect(rows.keys).toHaveLength(1);
  expect(await listKeys(stack.s3, keyStoragePrefix(tenant.tenantId, key))).toEqual([done.response.storageKey]);
  const runs: string[] = [];
  for await (const wf of stack.temporal.workflow.list({ query: `WorkflowId = '${uploadWorkflowId(tenant.tenantId, key)}'` })) runs.push(wf.runId);
  expect(runs).toHaveLength(1);
  const report = await audit(stack.runtime.pool, stack.s3);
  expect(report.violations).toEqual([]);
  expect(report.objectsVerified).toBe(report.uploads);
}, 240_000);
