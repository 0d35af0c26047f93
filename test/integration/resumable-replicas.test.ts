// tus-js-client through a round-robin balancer in front of two API processes: creation,
// PATCHes and HEADs land on both replicas in turn; the session state in Postgres (offset,
// parts, tail) carries the upload across them, the SHA-256 is read back from the assembled
// object (neither replica saw every append), and it commits once.
import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { serverPort } from '../support/ports';
import * as tus from 'tus-js-client';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import type { ManagedProcess } from '../../src/devstack/process';
import { TcpProxy } from '../support/tcp-proxy';
import { getJson, sha256 } from '../helpers/http';
import { startApiProcess } from '../helpers/api-process';
import { startTestStack, stackEnv, type TestStack } from '../helpers/stack';

const MiB = 1024 * 1024;
let stack: TestStack;
const replicas: ManagedProcess[] = [];
let balancer: TcpProxy;
let ports: number[] = [];

/** Completions whose SHA-256 the replicas read back from the store, summed over both. */
async function hashReadBacks(): Promise<number> {
  let n = 0;
  for (const port of ports) {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    n += Number(/^oncely_resumable_hash_read_back_total (\d+)/m.exec(text)?.[1] ?? 0);
  }
  return n;
}

beforeAll(async () => {
  stack = await startTestStack('tus_replicas', { role: 'worker', env: { RESUMABLE_PART_MIB: '5' } });
  const env = { ...stackEnv(stack.name, stack.dbUrl), S3_BUCKET: stack.config.S3_BUCKET, RESUMABLE_PART_MIB: '5' };
  ports = [await serverPort(), await serverPort()];
  for (const [i, port] of ports.entries())
    replicas.push(await startApiProcess(env, port, path.join(inject('stack').tmpDir, `${stack.name}-api-${i}.log`)));
  balancer = await new TcpProxy(ports.map((port) => ({ host: '127.0.0.1', port }))).start();
}, 120_000);
afterAll(async () => {
  await balancer?.stop();
  for (const r of replicas) await r.stop('SIGKILL');
  await stack?.stop();
});

it('uploads with tus-js-client across two replicas (alternate requests on each), committed once with the right SHA-256', async () => {
  const tenant = await stack.createTenant('replicas');
  const file = randomBytes(13 * MiB + 333);
  const key = `tus-replicas-${randomUUID()}`;
  const before = [...balancer.perTarget];
  const readBacksBefore = await hashReadBacks();
  const upload = await new Promise<tus.Upload>((resolve, reject) => {
    const u: tus.Upload = new tus.Upload(file, {
      endpoint: `http://127.0.0.1:${balancer.port}/v1/tus`,
      headers: { authorization: `Bearer ${tenant.apiKey}`, 'idempotency-key': key },
      metadata: { filename: 'replicas.bin', filetype: 'application/octet-stream' },
      chunkSize: 2 * MiB + 5,
      retryDelays: [200, 1000, 3000],
      // A connection per request, so the balancer's turns alternate the replicas.
      httpStack: new tus.DefaultHttpStack({ agent: new http.Agent({ keepAlive: false }) }),
      onSuccess: () => resolve(u),
      onError: reject,
    });
    u.start();
  });
  const served = balancer.perTarget.map((n, i) => n - before[i]!);
  expect(Math.min(...served)).toBeGreaterThanOrEqual(3); // 1 creation + 7 PATCHes, in turn
  const answer = await getJson(`http://127.0.0.1:${balancer.port}/v1/idempotency-keys/${key}`, tenant.apiKey);
  expect(answer.json).toMatchObject({
    state: 'completed',
    status: 201,
    response: { bytes: file.length, sha256: sha256(file), fileName: 'replicas.bin' },
  });
  expect(await hashReadBacks()).toBe(readBacksBefore + 1);
  const rows = await stack.runtime.pool.query('SELECT count(*)::int AS n FROM uploads WHERE tenant_id = $1 AND idempotency_key = $2', [
    tenant.tenantId,
    key,
  ]);
  expect(rows.rows[0].n).toBe(1);
  expect(upload.url).toMatch(/\/v1\/tus\/[0-9a-f-]{36}$/);
}, 120_000);

it('uploads with tus-js-client speaking the IETF draft (interop 6) across the two replicas, committed once', async () => {
  const tenant = await stack.createTenant('replicas-rufh');
  const file = randomBytes(11 * MiB + 21);
  const key = `rufh-replicas-${randomUUID()}`;
  const before = [...balancer.perTarget];
  await new Promise<void>((resolve, reject) => {
    const u: tus.Upload = new tus.Upload(file, {
      endpoint: `http://127.0.0.1:${balancer.port}/v1/uploads`,
      // `protocol` is in tus-js-client 4 but not in its type declarations.
      ...({ protocol: 'ietf-draft-05' } as Partial<tus.UploadOptions>),
      headers: { authorization: `Bearer ${tenant.apiKey}`, 'idempotency-key': key },
      metadata: { filename: 'replicas-draft.bin', filetype: 'application/octet-stream' },
      chunkSize: 2 * MiB + 5,
      retryDelays: [200, 1000, 3000],
      httpStack: new tus.DefaultHttpStack({ agent: new http.Agent({ keepAlive: false }) }),
      onSuccess: () => resolve(),
      onError: reject,
    });
    u.start();
  });
  const served = balancer.perTarget.map((n, i) => n - before[i]!);
  expect(Math.min(...served)).toBeGreaterThanOrEqual(3); // 1 creation + 6 appends, in turn
  const answer = await getJson(`http://127.0.0.1:${balancer.port}/v1/idempotency-keys/${key}`, tenant.apiKey);
  expect(answer.json).toMatchObject({
    state: 'completed',
    status: 201,
    response: { bytes: file.length, sha256: sha256(file), fileName: 'replicas-draft.bin' },
  });
  const rows = await stack.runtime.pool.query('SELECT count(*)::int AS n FROM uploads WHERE tenant_id = $1 AND idempotency_key = $2', [
    tenant.tenantId,
    key,
  ]);
  expect(rows.rows[0].n).toBe(1);
}, 120_000);
