// Byte quotas across a killed API: a reservation made by a request whose API process is
// SIGKILLed mid-body still counts (the quota is never passed meanwhile), lapses at its expiry
// through housekeeping's sweep, and the key's retry then commits once; usage counts that one
// commit and the audit finds nothing.
import { randomBytes, randomUUID } from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { audit } from '../../src/audit';
import { scheduleId } from '../../src/temporal/schedules';
import type { ManagedProcess } from '../../src/devstack/process';
import { startApiProcess } from '../helpers/api-process';
import { openRequest, postUpload, sha256 } from '../helpers/http';
import { startTestStack, stackEnv, type TestStack } from '../helpers/stack';
import { serverPort } from '../support/ports';

const RESERVATION_SECONDS = 3;
let stack: TestStack;
let api: ManagedProcess | undefined;
let tenant: { tenantId: string; apiKey: string };

beforeAll(async () => {
  // The in-process runtime is the worker (with housekeeping); the API runs as a process of its own.
  stack = await startTestStack('quota_crash', { role: 'worker', env: { QUOTA_RESERVATION_SECONDS: String(RESERVATION_SECONDS) } });
  tenant = await stack.createTenant('quota-crash');
  await stack.runtime.pool.query('UPDATE tenants SET max_stored_bytes = 1000000 WHERE id = $1', [tenant.tenantId]);
});
afterAll(async () => {
  await api?.stop('SIGKILL');
  await stack?.stop();
});

const apiEnv = () => ({
  ...stackEnv(stack.name, stack.dbUrl),
  S3_BUCKET: stack.config.S3_BUCKET,
  QUOTA_RESERVATION_SECONDS: String(RESERVATION_SECONDS),
});
const logFile = (n: string) => path.join(inject('stack').tmpDir, `${stack.name}-api-${n}.log`);
const reserved = async () =>
  (
    await stack.runtime.pool.query<{ n: number }>('SELECT coalesce(sum(bytes), 0)::int AS n FROM quota_reservations WHERE tenant_id = $1', [
      tenant.tenantId,
    ])
  ).rows[0]!.n;

describe('a reservation whose API died', () => {
  it('counts until it lapses, then housekeeping frees it and the retry commits once', async () => {
    const port = await serverPort();
    const base = `http://127.0.0.1:${port}`;
    api = await startApiProcess(apiEnv(), port, logFile('1'));
    const file = randomBytes(600_000);
    const key = `crash-${randomUUID()}`;
    const open = openRequest(
      base,
      `POST /v1/uploads HTTP/1.1\nHost: x\nAuthorization: Bearer ${tenant.apiKey}\nIdempotency-Key: ${key}\nContent-Type: application/octet-stream\nX-File-Sha256: ${sha256(file)}\nContent-Length: ${file.length}\n\n`,
    );
    await open.send(file.subarray(0, 200_000));
    await expect.poll(reserved, { timeout: 30_000 }).toBe(600_000);
    await api.stop('SIGKILL');
    open.close();

    api = await startApiProcess(apiEnv(), port, logFile('2'));
    // The dead request's bytes are still reserved: another upload past what is left is refused.
    const other = await postUpload(base, { apiKey: tenant.apiKey, key: `other-${randomUUID()}`, body: randomBytes(500_000) });
    expect(other.status, other.text).toBe(413);
    expect(other.json).toMatchObject({ error: 'byte_quota_exceeded', remaining: 400_000 });

    // Past its expiry, the key-expiry Schedule's sweep frees it (triggered here rather than awaited).
    await new Promise((r) => setTimeout(r, RESERVATION_SECONDS * 1000 + 500));
    const schedule = stack.temporal.schedule.getHandle(scheduleId(stack.config.TASK_QUEUE_UPLOADS, 'expire-keys'));
    await schedule.trigger();
    await expect.poll(reserved, { timeout: 60_000, interval: 500 }).toBe(0);

    const retried = await postUpload(base, { apiKey: tenant.apiKey, key, body: file });
    expect(retried.status, retried.text).toBe(201);
    const again = await postUpload(base, { apiKey: tenant.apiKey, key, body: file });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const quotas = (await (await fetch(`${base}/v1/quotas`, { headers: { authorization: `Bearer ${tenant.apiKey}` } })).json()) as any;
    expect(quotas.usage).toMatchObject({ storedBytes: 600_000, uploadsThisMonth: 1, reservedBytes: 0 });
    expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toEqual([]);
  });
});
