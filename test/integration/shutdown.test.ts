// SIGTERM during 20 in-flight uploads: the API stops accepting, finishes what it can within
// the grace period, the worker drains. Every upload was either acknowledged (and is stored
// whole) or never acknowledged (and a retry with the same key stores it once).
import { randomBytes, randomUUID } from 'node:crypto';
import path from 'node:path';
import { serverPort } from '../support/ports';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { audit } from '../../src/audit';
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

it('loses nothing acknowledged and duplicates nothing across a SIGTERM', async () => {
  const tenant = await stack.createTenant();
  const port = await serverPort();
  const env = {
    ...process.env,
    ...stackEnv(stack.name, stack.dbUrl),
    S3_BUCKET: stack.config.S3_BUCKET,
    PORT: String(port),
    SHUTDOWN_GRACE_SECONDS: '20',
    LOG_LEVEL: 'info',
    WORKFLOW_BUNDLE_PATH: inject('stack').workflowBundlePath,
  };
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
