// SIGTERM during 20 in-flight uploads: the API stops accepting, finishes what it can within
// the grace period, the worker drains. Every upload was either acknowledged (and is stored
// whole) or never acknowledged (and a retry with the same key stores it once).
// SIGTERM with keep-alive clients uploading in a loop: they are let go from the signal on,
// and the stop takes the drain and the longest request, not the grace period.
import { randomBytes, randomUUID } from 'node:crypto';
import path from 'node:path';
import { serverPort } from '../support/ports';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { Client, errors as undiciErrors } from 'undici';
import { audit } from '../../src/audit';
import { keyRequests } from '../../src/db/queries/key-requests';
import { nodeTs, startProcess, waitUntil, type ManagedProcess } from '../../src/devstack/process';
import { startTestStack, stackEnv, type TestStack } from '../helpers/stack';
import { postUpload, sha256 } from '../helpers/http';
import { eventually, rowsForKey } from '../helpers/inspect';
import { startWorkerProcess } from '../helpers/worker-process';

const root = path.resolve(import.meta.dirname, '../..');
let stack: TestStack;
const procs: ManagedProcess[] = [];

beforeAll(async () => {
  // In-process: only the database and bucket; the process under test runs API + worker.
  stack = await startTestStack('sigterm', { role: 'api' });
});
afterAll(async () => {
  for (const p of procs) await p.stop('SIGKILL');
  await stack?.stop();
});

/** The environment of a role process on this stack, serving on `port`. */
function roleEnv(port: number, settings: Record<string, string>) {
  return {
    ...process.env,
    ...stackEnv(stack.name, stack.dbUrl),
    S3_BUCKET: stack.config.S3_BUCKET,
    PORT: String(port),
    LOG_LEVEL: 'info',
    WORKFLOW_BUNDLE_PATH: inject('stack').workflowBundlePath,
    ...settings,
  };
}

it('loses nothing acknowledged and duplicates nothing across a SIGTERM', async () => {
  const tenant = await stack.createTenant();
  const port = await serverPort();
  const env = roleEnv(port, { SHUTDOWN_GRACE_SECONDS: '20' });
  const logFile = path.join(inject('stack').tmpDir, `${stack.name}-all.log`);
  const app = startProcess(...nodeTs(path.join(root, 'src/main.ts'), 'all'), { logFile, env, cwd: root });
  procs.push(app);
  const url = `http://127.0.0.1:${port}`;
  await waitUntil('oncely', async () => (await fetch(`${url}/readyz`)).ok, { proc: app, timeoutMs: 60_000 });

  const uploads = Array.from({ length: 20 }, () => ({ key: `sigterm-${randomUUID()}`, body: randomBytes(1024 * 1024) }));
  const answers = uploads.map((u) =>
    postUpload(url, { apiKey: tenant.apiKey, key: u.key, body: u.body }).then(
      (r) => r,
      (err: Error) => ({ status: 0, error: err.message, json: undefined as any }),
    ),
  );
  await new Promise((r) => setTimeout(r, 150));
  const stopped = app.stop('SIGTERM', 60_000);
  const results = await Promise.all(answers);
  await stopped;
  const { readFileSync } = await import('node:fs');
  expect(
    app.child.exitCode,
    readFileSync(logFile, 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .slice(-8)
      .join('\n'),
  ).toBe(0);

  const acknowledged = results.map((r, i) => ({ r, u: uploads[i]! })).filter(({ r }) => r.status === 201);
  // Requests already being answered when SIGTERM came are finished, not dropped.
  expect(acknowledged.length).toBeGreaterThan(0);
  expect(results.every((r) => [201, 0].includes(r.status))).toBe(true);
  for (const { r, u } of acknowledged) expect(r.json.sha256).toBe(sha256(u.body));
  // Nothing acknowledged is lost: each 201 names a stored, whole object.
  for (const { r } of acknowledged) expect((await stack.s3.head(r.json.storageKey))?.bytes).toBe(1024 * 1024);
  // The key request log's last batch is written as the process stops: every acknowledged answer is in it.
  for (const { r, u } of acknowledged) {
    const logged = await keyRequests(stack.runtime.pool, tenant.tenantId, u.key);
    expect(logged.items.map((i) => [i.status, i.request_id])).toEqual([[201, (r as { headers: Headers }).headers.get('x-request-id')]]);
  }

  // A fresh worker finishes anything that was mid-flight; clients retry what was not acknowledged.
  procs.push(
    await startWorkerProcess(
      { ...stackEnv(stack.name, stack.dbUrl), S3_BUCKET: stack.config.S3_BUCKET },
      path.join(inject('stack').tmpDir, `${stack.name}-worker.log`),
    ),
  );
  for (const [i, r] of results.entries()) {
    if (r.status === 201) continue;
    const u = uploads[i]!;
    const retry = await eventually(async () => {
      const again = await postUpload(stack.url, { apiKey: tenant.apiKey, key: u.key, body: u.body });
      return again.status === 201 ? again : undefined;
    }, 60_000);
    expect(retry.json.sha256).toBe(sha256(u.body));
  }
  for (const u of uploads) expect((await rowsForKey(stack.runtime.pool, tenant.tenantId, u.key)).uploads).toHaveLength(1);
  const report = await audit(stack.runtime.pool, stack.s3);
  expect(report.violations).toEqual([]);
  expect(report.uploads).toBe(20);
  console.log(
    `SIGTERM test: ${acknowledged.length}/20 acknowledged before shutdown; answers ${JSON.stringify(results.map((r) => r.status || (r as { error?: string }).error))}`,
  );
}, 240_000);

it('lets keep-alive clients go from the signal on and stops after the drain and the longest request', async () => {
  const tenant = await stack.createTenant();
  const port = await serverPort();
  const env = roleEnv(port, {
    SHUTDOWN_DRAIN_SECONDS: '2',
    // Far longer than the test waits: a stop that lasts the grace period fails it.
    SHUTDOWN_GRACE_SECONDS: '90',
  });
  const tmp = inject('stack').tmpDir;
  procs.push(
    await startWorkerProcess(
      { ...stackEnv(stack.name, stack.dbUrl), S3_BUCKET: stack.config.S3_BUCKET },
      path.join(tmp, `${stack.name}-drain-worker.log`),
    ),
  );
  const api = startProcess(...nodeTs(path.join(root, 'src/main.ts'), 'api'), {
    logFile: path.join(tmp, `${stack.name}-drain-api.log`),
    env,
    cwd: root,
  });
  procs.push(api);
  const url = `http://127.0.0.1:${port}`;
  await waitUntil('oncely api', async () => (await fetch(`${url}/readyz`)).ok, { proc: api, timeoutMs: 60_000 });

  interface Outcome {
    key: string;
    startedAt: number;
    status?: number;
    connection?: string;
    error?: string;
  }
  const outcomes: Outcome[] = [];
  let signalAt = Infinity;
  let readyzDownAt = Infinity;
  let stop = false;
  // Six clients, each one keep-alive connection (undici reconnects when the server closes it).
  const clients = Array.from({ length: 6 }, () => new Client(url, { pipelining: 1, keepAliveTimeout: 60_000 }));
  const loops = clients.map(async (client) => {
    const deadline = Date.now() + 60_000;
    while (!stop && Date.now() < deadline) {
      const body = randomBytes(64 * 1024);
      const o: Outcome = { key: `keepalive-${randomUUID()}`, startedAt: Date.now() };
      outcomes.push(o);
      try {
        const res = await client.request({
          path: '/v1/uploads',
          method: 'POST',
          headers: {
            authorization: `Bearer ${tenant.apiKey}`,
            'idempotency-key': o.key,
            'content-type': 'application/octet-stream',
            'x-file-sha256': sha256(body),
          },
          body,
        });
        o.status = res.statusCode;
        o.connection = String(res.headers.connection ?? '');
        await res.body.text();
        if (res.statusCode === 503) break;
      } catch (err) {
        o.error = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
        // The listener is closed: this client is done.
        if ((err as NodeJS.ErrnoException).code === 'ECONNREFUSED' || err instanceof undiciErrors.ClientDestroyedError) break;
      }
    }
  });
  await eventually(async () => (outcomes.filter((o) => o.status === 201).length >= 12 ? true : undefined), 60_000);

  signalAt = Date.now();
  const exited = api.stop('SIGTERM', 120_000);
  // /readyz on fresh connections: once it answers 503 the process has taken the signal.
  await eventually(async () => {
    const r = await fetch(`${url}/readyz`).catch(() => undefined);
    if (r?.status === 503 || !r) readyzDownAt = Date.now();
    return readyzDownAt < Infinity ? true : undefined;
  }, 30_000);
  await exited;
  const stoppedMs = Date.now() - signalAt;
  stop = true;
  await Promise.all(loops);
  for (const c of clients) await c.close().catch(() => {});
  expect(api.child.exitCode).toBe(0);

  const afterSignal = outcomes.filter((o) => o.startedAt >= readyzDownAt);
  // Every answer to a request begun after the signal closes its connection.
  for (const o of afterSignal.filter((o) => o.status !== undefined)) expect(o.connection, JSON.stringify(o)).toBe('close');
  // Well after the drain ended (2 s, plus 3 s of slack) no request is taken: refused at connect, or 503 shutting_down.
  const late = outcomes.filter((o) => o.startedAt >= readyzDownAt + 5_000);
  for (const o of late) expect(o.status === 503 || o.error === 'ECONNREFUSED', JSON.stringify(o)).toBe(true);
  // The stop took the drain and the longest request, nowhere near the 90 s grace period.
  expect(stoppedMs).toBeLessThan(30_000);
  // No socket cut an answer: an error is only a refused connection.
  const socketErrors = outcomes.filter((o) => o.error && o.error !== 'ECONNREFUSED');
  expect(socketErrors).toEqual([]);
  // Each 201 names a committed upload; what was refused stored nothing.
  for (const o of outcomes.filter((o) => o.status === 201))
    expect((await rowsForKey(stack.runtime.pool, tenant.tenantId, o.key)).uploads).toHaveLength(1);
  for (const o of outcomes.filter((o) => o.status === 503 || o.error))
    expect((await rowsForKey(stack.runtime.pool, tenant.tenantId, o.key)).uploads).toHaveLength(0);
  console.log(
    `keep-alive drain: ${outcomes.length} requests, ${afterSignal.filter((o) => o.status === 201).length} begun after the signal answered 201, ` +
      `${outcomes.filter((o) => o.status === 503).length} refused 503, ${outcomes.filter((o) => o.error === 'ECONNREFUSED').length} refused at connect, ` +
      `${socketErrors.length} socket errors; stopped ${stoppedMs} ms after SIGTERM (drain 2 s, grace 90 s)`,
  );
}, 240_000);
