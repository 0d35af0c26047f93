// Every role is observable and stops cleanly: a split worker answers /healthz, /readyz and
// /metrics on its own port (its commit counters included); an API told to stop answers
// /readyz 503 while it still serves uploads for SHUTDOWN_DRAIN_SECONDS, then exits;
// `oncely migrate` registers the search attributes a namespace lacks.
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import { serverPort } from '../support/ports';
import Long from 'long';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import type { ManagedProcess } from '../../src/devstack/process';
import { searchAttributes } from '../../src/temporal/names';
import { waitUntil } from '../../src/devstack/process';
import { startApiProcess } from '../helpers/api-process';
import { getJson, postUpload } from '../helpers/http';
import { startTestStack, stackEnv, type TestStack } from '../helpers/stack';
import { startWorkerProcess } from '../helpers/worker-process';

const root = path.resolve(import.meta.dirname, '../..');
let stack: TestStack;
const procs: ManagedProcess[] = [];

beforeAll(async () => {
  // In-process: the database, bucket and queue only; the roles under test run as processes.
  stack = await startTestStack('observe', { role: 'api' });
});
afterAll(async () => {
  for (const p of procs) await p.stop('SIGKILL');
  await stack?.stop();
});

const roleEnv = () => ({ ...stackEnv(stack.name, stack.dbUrl), S3_BUCKET: stack.config.S3_BUCKET });

/** A Prometheus sample's value (NaN when the series is missing, so comparisons fail). */
function sample(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : NaN;
}

it("a split worker serves its health, readiness and own counters on WORKER_HTTP_PORT; the API's /healthz names its build", async () => {
  const logFile = path.join(inject('stack').tmpDir, `${stack.name}-worker.log`);
  const worker = await startWorkerProcess(roleEnv(), logFile);
  procs.push(worker);
  const started = readFileSync(logFile, 'utf8')
    .split('\n')
    .filter((l) => l.includes('"oncely started"'))
    .map((l) => JSON.parse(l) as { ops?: string; role: string; version: string; commit: string })
    .at(-1)!;
  expect(started.role).toBe('worker');
  expect(started.ops).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  const ops = started.ops!;

  const health = await getJson(`${ops}/healthz`);
  expect(health.status).toBe(200);
  expect(health.json).toMatchObject({ status: 'ok', role: 'worker', version: expect.stringMatching(/^\d+\.\d+\.\d+/) });
  expect(health.json.commit).toBe(started.commit);
  const ready = await getJson(`${ops}/readyz`);
  expect(ready.status).toBe(200);
  expect(ready.json).toEqual({ status: 'ready', checks: { postgres: 'ok', temporal: 'ok', objectStore: 'ok', worker: 'ok' } });
  // The port serves nothing else.
  const other = await getJson(`${ops}/v1/uploads`);
  expect(other.status).toBe(404);
  expect(other.headers.get('content-type')).toContain('application/problem+json');

  const before = await (await fetch(`${ops}/metrics`)).text();
  expect(sample(before, `oncely_build_info{version="${health.json.version}",commit="${health.json.commit}"}`)).toBe(1);
  const committedBefore = sample(before, 'oncely_uploads_committed_total{result="created"}');
  const tenant = await stack.createTenant();
  const up = await postUpload(stack.url, { apiKey: tenant.apiKey, key: `observe-${randomUUID()}`, body: randomBytes(2048) });
  expect(up.status, up.text).toBe(201);
  const after = await (await fetch(`${ops}/metrics`)).text();
  // The commit ran in the worker process: its counter moved there (absent before: NaN → 0).
  expect(sample(after, 'oncely_uploads_committed_total{result="created"}')).toBe((Number.isNaN(committedBefore) ? 0 : committedBefore) + 1);

  const api = await getJson(`${stack.url}/healthz`);
  expect(api.json).toEqual({ status: 'ok', role: 'api', version: health.json.version, commit: health.json.commit });

  // Tracing off (no OTLP endpoint): the request still has its id, nothing carries a trace
  // header into the run, and nothing records a traceparent.
  expect(up.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  const row = await stack.runtime.pool.query(
    'SELECT u.traceparent, u.workflow_id, k.traceparent AS key_traceparent FROM uploads u JOIN idempotency_keys k ON k.upload_id = u.id WHERE u.id = $1',
    [up.json.uploadId],
  );
  expect(row.rows[0]).toMatchObject({ traceparent: null, key_traceparent: null });
  const events = await stack.history(row.rows[0].workflow_id);
  const headers = events.events!.flatMap((e) => [
    e.workflowExecutionStartedEventAttributes?.header?.fields,
    e.activityTaskScheduledEventAttributes?.header?.fields,
    e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.header?.fields,
  ]);
  expect(headers.filter((h) => h && '_tracer-data' in h)).toEqual([]);
}, 120_000);

it('an API told to stop answers /readyz 503 while it still serves uploads for the drain, then exits 0', async () => {
  const port = await serverPort();
  const url = `http://127.0.0.1:${port}`;
  const logFile = path.join(inject('stack').tmpDir, `${stack.name}-api.log`);
  const api = await startApiProcess({ ...roleEnv(), SHUTDOWN_DRAIN_SECONDS: '4' }, port, logFile);
  procs.push(api);
  const tenant = await stack.createTenant();
  const exited = new Promise<number | null>((resolve) => api.child.once('exit', (code) => resolve(code)));
  api.child.kill('SIGTERM');
  await waitUntil('readyz 503', async () => (await fetch(`${url}/readyz`)).status === 503, { proc: api, timeoutMs: 3_000 });
  const draining = await getJson(`${url}/readyz`);
  expect(draining.json).toEqual({ status: 'draining', checks: {} });
  expect(draining.headers.get('retry-after')).toBe('5');
  // Still serving: a load balancer that has not yet noticed loses nothing.
  const up = await postUpload(url, { apiKey: tenant.apiKey, key: `drain-${randomUUID()}`, body: randomBytes(1024) });
  expect(up.status, up.text).toBe(201);
  expect((await getJson(`${url}/healthz`)).status).toBe(200);
  expect(await exited).toBe(0);
}, 60_000);

it('oncely migrate registers the search attributes a namespace lacks, once', async () => {
  const address = inject('stack').temporalAddress;
  const namespace = `observe-${randomBytes(4).toString('hex')}`;
  const connection = await Connection.connect({ address });
  try {
    await connection.workflowService.registerNamespace({
      namespace,
      workflowExecutionRetentionPeriod: { seconds: Long.fromNumber(86_400) },
    });
    const custom = async () => Object.keys((await connection.operatorService.listSearchAttributes({ namespace })).customAttributes ?? {});
    // The operator service may not see a new namespace at once: listing throws until it does.
    await waitUntil('namespace visible', async () => Array.isArray(await custom()), { timeoutMs: 30_000 });
    expect(await custom()).not.toContain(searchAttributes.subject.name);
    const migrate = () =>
      promisify(execFile)(path.join(root, 'bin/oncely'), ['migrate'], {
        cwd: root,
        env: { ...process.env, ...roleEnv(), TEMPORAL_NAMESPACE: namespace },
        timeout: 60_000,
      });
    const first = await migrate();
    expect(first.stdout).toContain(`search attributes added on ${namespace}:`);
    for (const key of Object.values(searchAttributes)) expect(first.stdout).toContain(key.name);
    expect((await custom()).sort()).toEqual(expect.arrayContaining(Object.values(searchAttributes).map((k) => k.name)));
    const second = await migrate();
    expect(second.stdout).toContain(`search attributes on ${namespace}: up to date`);
  } finally {
    await connection.operatorService.deleteNamespace({ namespace }).catch(() => {});
    await connection.close();
  }
}, 120_000);
