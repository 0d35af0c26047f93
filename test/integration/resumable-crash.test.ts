// Resumable sessions survive their API process and their idle timer ends them: an API
// SIGKILLed mid-PATCH loses only what it had not acknowledged (HEAD from a new process tells
// the truth, the rest is sent and committed once with the right SHA-256); a session idle past
// RESUMABLE_EXPIRY_HOURS is aborted by its workflow and its key is free again.
import { randomBytes, randomUUID } from 'node:crypto';
import path from 'node:path';
import { serverPort } from '../support/ports';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { ManagedProcess } from '../../src/devstack/process';
import { getJson, openRequest, sha256 } from '../helpers/http';
import { startApiProcess } from '../helpers/api-process';
import { exchange, send } from '../helpers/rufh';
import { startTestStack, stackEnv, type TestStack } from '../helpers/stack';

const MiB = 1024 * 1024;
const EXPIRY_HOURS = 0.0015; // 5.4 s

let stack: TestStack;
let api: ManagedProcess | undefined;
let tenant: { tenantId: string; apiKey: string };

beforeAll(async () => {
  // The in-process runtime is the worker; the API runs as a process of its own.
  stack = await startTestStack('tus_crash', {
    role: 'worker',
    env: { RESUMABLE_PART_MIB: '5', RESUMABLE_EXPIRY_HOURS: String(EXPIRY_HOURS) },
  });
  tenant = await stack.createTenant('tus-crash');
});
afterAll(async () => {
  await api?.stop('SIGKILL');
  await stack?.stop();
});

const apiEnv = () => ({
  ...stackEnv(stack.name, stack.dbUrl),
  S3_BUCKET: stack.config.S3_BUCKET,
  RESUMABLE_PART_MIB: '5',
  RESUMABLE_EXPIRY_HOURS: String(EXPIRY_HOURS),
});
const logFile = (n: string) => path.join(inject('stack').tmpDir, `${stack.name}-api-${n}.log`);
const tusHeaders = () => ({ authorization: `Bearer ${tenant.apiKey}`, 'tus-resumable': '1.0.0' });

describe('resumable sessions across process death and idleness', () => {
  it('an API killed mid-PATCH loses only the unacknowledged bytes; a new process resumes and commits once', async () => {
    const port = await serverPort();
    const base = `http://127.0.0.1:${port}`;
    api = await startApiProcess(apiEnv(), port, logFile('1'));
    const file = randomBytes(12 * MiB);
    const key = `tus-kill-${randomUUID()}`;
    const created = await fetch(`${base}/v1/tus`, {
      method: 'POST',
      headers: { ...tusHeaders(), 'idempotency-key': key, 'upload-length': String(file.length) },
    });
    expect(created.status).toBe(201);
    const location = created.headers.get('location')!;

    // One PATCH for the whole file; 7 MiB arrive (one whole part is acknowledged), then the API dies.
    const patch = openRequest(
      base,
      `PATCH ${location} HTTP/1.1\nHost: x\nAuthorization: Bearer ${tenant.apiKey}\nTus-Resumable: 1.0.0\nContent-Type: application/offset+octet-stream\nUpload-Offset: 0\nContent-Length: ${file.length}\n\n`,
    );
    await patch.send(file.subarray(0, 7 * MiB));
    const sessionId = location.split('/').pop();
    await expect
      .poll(
        async () =>
          Number(
            (await stack.runtime.pool.query('SELECT upload_offset FROM resumable_sessions WHERE id = $1', [sessionId])).rows[0]
              .upload_offset,
          ),
        { timeout: 30_000 },
      )
      .toBe(5 * MiB);
    await api.stop('SIGKILL');
    patch.close();

    api = await startApiProcess(apiEnv(), port, logFile('2'));
    const head = await fetch(`${base}${location}`, { method: 'HEAD', headers: tusHeaders() });
    expect(head.status).toBe(200);
    const offset = Number(head.headers.get('upload-offset'));
    expect(offset).toBe(5 * MiB); // what was acknowledged, nothing more
    // The dead PATCH's lease is taken over once it has made no progress for a few seconds.
    let resumed: Response | undefined;
    await expect
      .poll(
        async () => {
          resumed = await fetch(`${base}${location}`, {
            method: 'PATCH',
            headers: { ...tusHeaders(), 'content-type': 'application/offset+octet-stream', 'upload-offset': String(offset) },
            body: file.subarray(offset),
          });
          return resumed.status;
        },
        { timeout: 30_000, interval: 1_000 },
      )
      .toBe(204);
    expect(resumed!.headers.get('upload-offset')).toBe(String(file.length));
    const upload = await getJson(`${base}${resumed!.headers.get('location')}`, tenant.apiKey);
    expect(upload.json).toMatchObject({ bytes: file.length, sha256: sha256(file) });
    const rows = await stack.runtime.pool.query('SELECT count(*)::int AS n FROM uploads WHERE tenant_id = $1 AND idempotency_key = $2', [
      tenant.tenantId,
      key,
    ]);
    expect(rows.rows[0].n).toBe(1);
  }, 120_000);

  it('RUFH: an API killed mid-creation keeps what its 104s reported; HEAD on a new process tells the truth and the rest commits once', async () => {
    const port = await serverPort();
    const base = `http://127.0.0.1:${port}`;
    await api?.stop('SIGKILL');
    api = await startApiProcess(apiEnv(), port, logFile('rufh-1'));
    const file = randomBytes(12 * MiB + 9);
    const key = `rufh-kill-${randomUUID()}`;
    const draft = { authorization: `Bearer ${tenant.apiKey}`, 'upload-draft-interop-version': '8' };
    const creation = exchange(`${base}/v1/uploads`, 'POST', {
      ...draft,
      'idempotency-key': key,
      'upload-complete': '?1',
      'content-length': String(file.length),
    });
    const location = (await creation.interim((i) => i.headers.location !== undefined)).headers.location!;
    await creation.write(file.subarray(0, 7 * MiB));
    const progress = await creation.interim((i) => i.headers['upload-offset'] !== undefined);
    expect(progress.headers['upload-offset']).toBe(String(5 * MiB));
    await api.stop('SIGKILL');
    creation.cut();
    expect(await creation.response).toBeUndefined();

    api = await startApiProcess(apiEnv(), port, logFile('rufh-2'));
    const head = await send(location, 'HEAD', draft);
    expect(head.status).toBe(204);
    expect(head.headers).toMatchObject({ 'upload-offset': String(5 * MiB), 'upload-complete': '?0' });
    let resumed: Awaited<ReturnType<typeof send>> | undefined;
    await expect
      .poll(
        async () => {
          resumed = await send(
            location,
            'PATCH',
            { ...draft, 'content-type': 'application/partial-upload', 'upload-offset': String(5 * MiB), 'upload-complete': '?1' },
            file.subarray(5 * MiB),
          );
          return resumed.status;
        },
        { timeout: 30_000, interval: 1_000 },
      )
      .toBe(201);
    expect(resumed!.headers['upload-complete']).toBe('?1');
    expect(resumed!.json).toMatchObject({ bytes: file.length, sha256: sha256(file) });
    const rows = await stack.runtime.pool.query('SELECT count(*)::int AS n FROM uploads WHERE tenant_id = $1 AND idempotency_key = $2', [
      tenant.tenantId,
      key,
    ]);
    expect(rows.rows[0].n).toBe(1);
  }, 120_000);

  it('a session idle past its expiry is aborted by its workflow: 404, its parts gone, its key free', async () => {
    const port = await serverPort();
    const base = `http://127.0.0.1:${port}`;
    await api?.stop('SIGKILL');
    api = await startApiProcess(apiEnv(), port, logFile('3'));
    const key = `tus-idle-${randomUUID()}`;
    const created = await fetch(`${base}/v1/tus`, {
      method: 'POST',
      headers: { ...tusHeaders(), 'idempotency-key': key, 'upload-length': '100' },
    });
    const location = created.headers.get('location')!;
    expect(Date.parse(created.headers.get('upload-expires')!)).toBeGreaterThan(Date.now());
    const first = await fetch(`${base}${location}`, {
      method: 'PATCH',
      headers: { ...tusHeaders(), 'content-type': 'application/offset+octet-stream', 'upload-offset': '0' },
      body: Buffer.alloc(10, 1),
    });
    expect(first.status).toBe(204);
    const storageKey = (await stack.runtime.pool.query('SELECT storage_key FROM resumable_sessions WHERE idempotency_key = $1', [key]))
      .rows[0].storage_key as string;
    await expect
      .poll(async () => (await fetch(`${base}${location}`, { method: 'HEAD', headers: tusHeaders() })).status, {
        timeout: 60_000,
        interval: 500,
      })
      .toBe(404);
    // The workflow's expiry step removes the row first, then the session's objects.
    const tails = async () => {
      const left: string[] = [];
      for await (const o of stack.s3.list(`${storageKey}.tail.`)) left.push(o.key);
      return left;
    };
    await expect.poll(tails, { timeout: 30_000, interval: 250 }).toEqual([]);
    // The key is free once the run has ended, right after its expiry step (until then another
    // request under it is 422): another upload under it is welcome.
    let again: Response | undefined;
    await expect
      .poll(
        async () => {
          again = await fetch(`${base}/v1/tus`, {
            method: 'POST',
            headers: { ...tusHeaders(), 'idempotency-key': key, 'upload-length': '5' },
          });
          return again.status;
        },
        { timeout: 30_000, interval: 250 },
      )
      .toBe(201);
    expect(again!.headers.get('idempotent-replayed')).toBeNull();
  }, 120_000);
});
