// The client against the real server behind a fault-injecting loopback proxy: a response
// lost after the server committed, a connection reset mid-body, and the CLI killed
// mid-upload then run again. Each ends with exactly one upload for the key.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileOutbox, openFileBody, pendingFromFile } from '../../src/client/node';
import { sendThroughOutbox } from '../../src/client/outbox-runner';
import { UploadClient } from '../../src/client/upload-client';
import { nodeTs, startProcess } from '../../src/devstack/process';
import { TcpProxy } from '../support/tcp-proxy';
import { startTestStack, type TestStack } from '../helpers/stack';
import { eventually, rowsForKey } from '../helpers/inspect';
import { sha256 } from '../helpers/http';

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, '../..');
let stack: TestStack;
let proxy: TcpProxy;
let tenant: { tenantId: string; apiKey: string };
let dir: string;

beforeAll(async () => {
  stack = await startTestStack('client');
  tenant = await stack.createTenant();
  const { port } = new URL(stack.url);
  proxy = await new TcpProxy({ host: '127.0.0.1', port: Number(port) }).start();
  dir = mkdtempSync(path.join(os.tmpdir(), 'oncely-client-'));
});
afterAll(async () => {
  await proxy?.stop();
  await stack?.stop();
  rmSync(dir, { recursive: true, force: true });
});

function file(name: string, bytes: number): string {
  const p = path.join(dir, name);
  writeFileSync(p, randomBytes(bytes));
  return p;
}

function client() {
  return new UploadClient({
    baseUrl: `http://127.0.0.1:${proxy.port}`,
    token: tenant.apiKey,
    openBody: openFileBody,
    backoff: { baseMs: 50, capMs: 500 },
    maxAttempts: 10,
  });
}

describe('client through faults', () => {
  it('retries after the response was dropped post-commit and gets the replay; one upload', async () => {
    const p = await pendingFromFile(file('dropped.bin', 200_000));
    const outbox = new FileOutbox(path.join(dir, 'outbox-drop.json'));
    proxy.setMode('drop-response');
    proxy.faultBudget = 1;
    const attempts: string[] = [];
    const result = await sendThroughOutbox(client(), outbox, p, { onAttempt: (_n, outcome) => attempts.push(outcome) });
    proxy.mode = 'forward';
    // The first attempt's answer was lost; a retry (or, under load, a second one after a
    // transient 409/503) got the original answer back.
    expect(attempts[0]).toMatch(/fetch failed/);
    expect(result).toMatchObject({ status: 201, replayed: true });
    expect(result.attempts).toBe(attempts.length + 1);
    expect(result.body.sha256).toBe(p.sha256);
    const rows = await rowsForKey(stack.runtime.pool, tenant.tenantId, p.idempotencyKey);
    expect(rows.uploads).toHaveLength(1);
    expect(await outbox.list()).toEqual([]);
  });

  it('retries after a connection reset mid-body and completes; one upload', async () => {
    const p = await pendingFromFile(file('reset.bin', 1_000_000));
    proxy.setMode('reset-mid-body');
    proxy.resetAfterBytes = 128 * 1024;
    proxy.faultBudget = 1;
    const result = await client().send(p);
    proxy.mode = 'forward';
    expect(result).toMatchObject({ status: 201, attempts: 2 });
    expect(result.body.sha256).toBe(sha256(readFileSync(p.source)));
    expect((await rowsForKey(stack.runtime.pool, tenant.tenantId, p.idempotencyKey)).uploads).toHaveLength(1);
  });
});

describe('oncely upload (CLI)', () => {
  it('resumes with the same key after being killed mid-upload; one upload row', async () => {
    const big = file('big.bin', 4 * 1024 * 1024);
    const outboxFile = path.join(dir, 'cli-outbox.json');
    const env = { ...process.env, ONCELY_URL: `http://127.0.0.1:${proxy.port}`, ONCELY_TOKEN: tenant.apiKey };
    proxy.setMode('throttle');
    proxy.bytesPerSecond = 512 * 1024;
    proxy.faultBudget = Infinity;
    const cli = startProcess(...nodeTs(path.join(root, 'src/cli.ts'), 'upload', big, '--json', '--outbox', outboxFile), {
      logFile: path.join(dir, 'cli-1.log'),
      env,
      cwd: root,
    });
    // Killed once the key is persisted and bytes are flowing.
    const persisted = await eventually(
      async () => (existsSync(outboxFile) ? (JSON.parse(readFileSync(outboxFile, 'utf8')) as { idempotencyKey: string }[])[0] : undefined),
      30_000,
    );
    await new Promise((r) => setTimeout(r, 1500));
    await cli.stop('SIGKILL');
    expect((await rowsForKey(stack.runtime.pool, tenant.tenantId, persisted.idempotencyKey)).uploads).toHaveLength(0);

    proxy.mode = 'forward';
    // Run again without naming the file: --resume drains what the killed run left.
    const [cmd, args] = nodeTs(path.join(root, 'src/cli.ts'), 'upload', '--resume', '--json', '--outbox', outboxFile);
    const { stdout } = await run(cmd, args, { env, cwd: root });
    const [result] = JSON.parse(stdout);
    expect(result).toMatchObject({ idempotencyKey: persisted.idempotencyKey, status: 201 });
    expect(result.body.sha256).toBe(sha256(readFileSync(big)));
    expect((await rowsForKey(stack.runtime.pool, tenant.tenantId, persisted.idempotencyKey)).uploads).toHaveLength(1);
    expect(JSON.parse(readFileSync(outboxFile, 'utf8'))).toEqual([]);

    // A second run for the same file is a new logical upload (new key); a rejected file is reported, exit code 1.
    const [cmd2, args2] = nodeTs(
      path.join(root, 'src/cli.ts'),
      'upload',
      big,
      '--json',
      '--outbox',
      outboxFile,
      '--content-type',
      'image/png',
    );
    const bad = await run(cmd2, args2, { env, cwd: root }).catch((e) => e);
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.stdout)[0]).toMatchObject({ status: 415 });
  }, 120_000);

  it('sends a large file resumably (tus) and, killed mid-upload, continues from the server offset on the next run', async () => {
    const big = file('resumable.bin', 12 * 1024 * 1024);
    const outboxFile = path.join(dir, 'cli-tus-outbox.json');
    const env = { ...process.env, ONCELY_URL: `http://127.0.0.1:${proxy.port}`, ONCELY_TOKEN: tenant.apiKey };
    proxy.setMode('throttle');
    proxy.bytesPerSecond = 3 * 1024 * 1024;
    proxy.faultBudget = Infinity;
    const cli = startProcess(
      ...nodeTs(path.join(root, 'src/cli.ts'), 'upload', big, '--json', '--outbox', outboxFile, '--resumable-from', '1MiB'),
      { logFile: path.join(dir, 'cli-tus-1.log'), env, cwd: root },
    );
    // The upload URL is in the outbox before the bytes go, and the server acknowledges a part.
    const persisted = await eventually(async () => {
      const items = existsSync(outboxFile)
        ? (JSON.parse(readFileSync(outboxFile, 'utf8')) as { idempotencyKey: string; uploadUrl?: string }[])
        : [];
      return items[0]?.uploadUrl ? items[0] : undefined;
    }, 30_000);
    const offsetOf = async () =>
      Number(
        (
          await stack.runtime.pool.query('SELECT upload_offset FROM resumable_sessions WHERE tenant_id = $1 AND idempotency_key = $2', [
            tenant.tenantId,
            persisted.idempotencyKey,
          ])
        ).rows[0]?.upload_offset ?? 0,
      );
    await eventually(async () => (await offsetOf()) > 0, 30_000);
    await cli.stop('SIGKILL');
    const acknowledged = await offsetOf();
    expect(acknowledged).toBeGreaterThan(0);
    expect(acknowledged).toBeLessThan(12 * 1024 * 1024);
    expect((await rowsForKey(stack.runtime.pool, tenant.tenantId, persisted.idempotencyKey)).uploads).toHaveLength(0);

    proxy.mode = 'forward';
    const [cmd, args] = nodeTs(
      path.join(root, 'src/cli.ts'),
      'upload',
      '--resume',
      '--json',
      '--outbox',
      outboxFile,
      '--resumable-from',
      '1MiB',
    );
    const { stdout } = await run(cmd, args, { env, cwd: root }).catch((e: { code: number; stdout: string; stderr: string }) => {
      throw new Error(`exit ${e.code}: ${e.stdout} ${e.stderr}`);
    });
    const [result] = JSON.parse(stdout);
    expect(result).toMatchObject({ idempotencyKey: persisted.idempotencyKey, status: 201 });
    expect(result.body.sha256).toBe(sha256(readFileSync(big)));
    expect((await rowsForKey(stack.runtime.pool, tenant.tenantId, persisted.idempotencyKey)).uploads).toHaveLength(1);
    // The session is the one the first run created: the second run resumed it.
    const sessions = await stack.runtime.pool.query('SELECT id FROM resumable_sessions WHERE tenant_id = $1 AND idempotency_key = $2', [
      tenant.tenantId,
      persisted.idempotencyKey,
    ]);
    expect(persisted.uploadUrl).toContain(sessions.rows[0].id);
  }, 120_000);

  it('explains a missing token with exit code 2', async () => {
    const [cmd, args] = nodeTs(path.join(root, 'src/cli.ts'), 'upload', 'nothing.bin');
    const res = await run(cmd, args, { env: { ...process.env, ONCELY_TOKEN: '' }, cwd: root }).catch((e) => e);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/API key or upload token is needed/);
  });
});
