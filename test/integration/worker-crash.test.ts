// A worker SIGKILLed after the object commit and before the records transaction: after a
// restart the upload completes once — one row, one key row, one object, one execution.
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { serverPort } from '../support/ports';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { audit } from '../../src/audit';
import { TcpProxy } from '../support/tcp-proxy';
import type { ManagedProcess } from '../../src/devstack/process';
import { keyStoragePrefix, uploadWorkflowId } from '../../src/temporal/ids';
import { startTestStack, stackEnv, type TestStack } from '../helpers/stack';
import { getJson, postUpload, sha256 } from '../helpers/http';
import { eventually, listKeys, rowsForKey, commitRetrying, openHistory } from '../helpers/inspect';
import { startWorkerProcess } from '../helpers/worker-process';

let stack: TestStack;
let dbProxy: TcpProxy;
let worker: ManagedProcess | undefined;

beforeAll(async () => {
  // Payload encryption off: with it on, a worker cut off from PostgreSQL cannot open the run's
  // input (its data key is there) and never reaches the commit this test cuts.
  stack = await startTestStack('crash', { role: 'api', env: { PAYLOAD_ENCRYPTION: 'false' } });
  dbProxy = await new TcpProxy({ host: '127.0.0.1', port: 5432 }).start();
});

afterAll(async () => {
  await worker?.stop('SIGKILL');
  await stack?.stop();
  await dbProxy?.stop();
});

it('completes exactly once after the worker dies while the commit retries its records transaction', async () => {
  const tenant = await stack.createTenant();
  const workerEnv = {
    ...stackEnv(stack.name, stack.dbUrl.replace(':5432/', `:${dbProxy.port}/`)),
    S3_BUCKET: stack.config.S3_BUCKET,
    PAYLOAD_ENCRYPTION: 'false',
  };
  const logFile = path.join(inject('stack').tmpDir, `${stack.name}-worker.log`);
  const metricsPort = await serverPort();
  worker = await startWorkerProcess({ ...workerEnv, WORKER_METRICS_PORT: String(metricsPort) }, logFile);
  // The worker exports the SDK's own metrics for Prometheus.
  const sdkMetrics = await eventually(async () => {
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    return text.includes('temporal_') ? text : undefined;
  });
  expect(sdkMetrics).toMatch(/temporal_\w+/);

  // The worker loses its database: the commit verifies the object (S3 only) and cannot write the records.
  dbProxy.setMode('refuse');
  const key = `crash-${randomUUID()}`;
  const file = Buffer.from('bytes that must survive a worker crash');
  const accepted = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: file, prefer: 'respond-async' });
  expect(accepted.status).toBe(202);
  expect(accepted.headers.get('location')).toBe(`/v1/idempotency-keys/${encodeURIComponent(key)}`);

  const handle = stack.temporal.workflow.getHandle(uploadWorkflowId(tenant.tenantId, key));
  // The commit is a local activity: failing past the local retry threshold shows as its
  // backoff timer in the history, with no commit marker.
  await eventually(async () => {
    return commitRetrying((await openHistory(await handle.fetchHistory(), stack.runtime.payloadCodec)).events ?? []) ? true : undefined;
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
  for await (const wf of stack.temporal.workflow.list({ query: `WorkflowId = '${uploadWorkflowId(tenant.tenantId, key)}'` }))
    runs.push(wf.runId);
  expect(runs).toHaveLength(1);
  const report = await audit(stack.runtime.pool, stack.s3);
  expect(report.violations).toEqual([]);
  expect(report.objectsVerified).toBe(report.uploads);
}, 240_000);
