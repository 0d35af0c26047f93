// Postgres, the object store or Temporal unreachable: the API answers 503 + Retry-After,
// records nothing, and the same key succeeds once the dependency is back. Each dependency
// is reached through a loopback TCP proxy whose link the test cuts and restores.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { TcpProxy } from '../support/tcp-proxy';
import { startTestStack, type TestStack } from '../helpers/stack';
import { postUpload, sha256 } from '../helpers/http';
import { eventually, rowsForKey, totals } from '../helpers/inspect';

let stack: TestStack;
let tenant: { tenantId: string; apiKey: string };
const proxies: Record<'postgres' | 's3' | 'temporal', TcpProxy> = {} as never;

beforeAll(async () => {
  const shared = inject('stack');
  const s3 = new URL(shared.s3.endpoint);
  const [tHost, tPort] = shared.temporalAddress.split(':');
  proxies.postgres = await new TcpProxy({ host: '127.0.0.1', port: 5432 }).start();
  proxies.s3 = await new TcpProxy({ host: s3.hostname, port: Number(s3.port) }).start();
  proxies.temporal = await new TcpProxy({ host: tHost!, port: Number(tPort) }).start();
  stack = await startTestStack('outage', {
    env: {
      S3_ENDPOINT: `http://127.0.0.1:${proxies.s3.port}`,
      TEMPORAL_ADDRESS: `127.0.0.1:${proxies.temporal.port}`,
      DEFAULT_WAIT_SECONDS: '30',
    },
    databaseVia: (url) => {
      const u = new URL(url);
      u.port = String(proxies.postgres.port);
      return u.toString();
    },
  });
  tenant = await stack.createTenant();
});

afterAll(async () => {
  for (const p of Object.values(proxies)) p.setMode('forward');
  await stack?.stop();
  for (const p of Object.values(proxies)) await p.stop();
});

describe.each([
  ['postgres', 'database_unavailable'],
  ['s3', 'storage_unavailable'],
  ['temporal', 'temporal_unavailable'],
] as const)('%s unreachable', (dependency, error) => {
  it(`answers 503 ${error} with Retry-After, records nothing, and the key works once it is back`, async () => {
    // Warm the auth cache so the request reaches the dependency under test.
    expect((await postUpload(stack.url, { apiKey: tenant.apiKey, key: `warm-${randomUUID()}`, body: Buffer.from('warm') })).status).toBe(
      201,
    );
    const before = await totals(stack.runtime.pool, stack.s3);
    const key = `outage-${dependency}-${randomUUID()}`;
    const file = Buffer.from(`file sent while ${dependency} is down`);

    proxies[dependency].setMode('refuse');
    let res;
    let ready: Response | undefined;
    try {
      res = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: file });
      ready = await fetch(`${stack.url}/readyz`);
    } finally {
      proxies[dependency].setMode('forward');
    }
    expect(res.status).toBe(503);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(res.json.error).toBe(error);
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(ready!.status).toBe(503);
    const checks = ((await ready!.json()) as { checks: Record<string, string> }).checks;
    const name = { postgres: 'postgres', s3: 'objectStore', temporal: 'temporal' }[dependency];
    expect(checks[name]).not.toBe('ok');
    expect((await fetch(`${stack.url}/healthz`)).status).toBe(200);

    const rows = await rowsForKey(stack.runtime.pool, tenant.tenantId, key);
    expect(rows.uploads).toHaveLength(0);
    expect(rows.keys).toHaveLength(0);
    await eventually(async () => JSON.stringify(await totals(stack.runtime.pool, stack.s3)) === JSON.stringify(before));

    // While the client reconnects, an attempt may reach Temporal and commit yet answer 503, or
    // 409 once Temporal says the key's run has ended (its outcome unknown within the offer's
    // bound); the next attempt then replays that commit.
    const retried: number[] = [];
    const retry = await eventually(async () => {
      const r = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: file });
      retried.push(r.status);
      return r.status === 201 ? r : undefined;
    }, 60_000);
    expect(retry.json.sha256).toBe(sha256(file));
    if (retry.headers.get('idempotent-replayed') !== null)
      expect(retried.slice(0, -1).some((status) => status === 503 || status === 409)).toBe(true);
    const after = await rowsForKey(stack.runtime.pool, tenant.tenantId, key);
    expect(after.uploads).toHaveLength(1);
    expect(after.keys).toHaveLength(1);
    expect((await fetch(`${stack.url}/readyz`)).status).toBe(200);
  }, 120_000);
});

describe('after the upload, with a dependency down', () => {
  const auth = () => ({ authorization: `Bearer ${tenant.apiKey}` });
  const stored = async () => {
    const up = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key: `after-${randomUUID()}`,
      body: Buffer.from(`kept ${randomUUID()}`),
    });
    expect(up.status).toBe(201);
    return up.json as { uploadId: string; storageKey: string };
  };
  const row = async (id: string) =>
    (await stack.runtime.pool.query('SELECT deleted_at, erased_at, object_released FROM uploads WHERE id = $1', [id])).rows[0];

  it('the store down: content is 503, a signed URL is still signed (it needs no call) and works once it is back, a delete waits for it', async () => {
    const up = await stored();
    const doomed = await stored();
    proxies.s3.setMode('refuse');
    try {
      const content = await fetch(`${stack.url}/v1/uploads/${up.uploadId}/content`, { headers: auth() });
      expect(content.status).toBe(503);
      expect(((await content.json()) as { error: string }).error).toBe('storage_unavailable');
      expect(Number(content.headers.get('retry-after'))).toBeGreaterThan(0);
      const link = await fetch(`${stack.url}/v1/uploads/${up.uploadId}/download-urls`, {
        method: 'POST',
        headers: { ...auth(), 'content-type': 'application/json' },
        body: JSON.stringify({ expiresInSeconds: 600, disposition: 'attachment' }),
      });
      expect(link.status).toBe(201);
      const { url } = (await link.json()) as { url: string };
      await expect(fetch(new URL(url, stack.url))).rejects.toThrow();
      // The delete: tombstoned at once, the erasure retried until the store answers.
      const del = await fetch(`${stack.url}/v1/uploads/${doomed.uploadId}`, { method: 'DELETE', headers: { ...auth(), prefer: 'wait=2' } });
      expect(del.status).toBe(202);
      expect((await row(doomed.uploadId)).deleted_at).not.toBeNull();
      expect((await row(doomed.uploadId)).erased_at).toBeNull();
      expect((await fetch(`${stack.url}/v1/uploads/${doomed.uploadId}/content`, { headers: auth() })).status).toBe(410);
      proxies.s3.setMode('forward');
      expect(await (await fetch(new URL(url, stack.url))).text()).toMatch(/^kept /);
      await eventually(async () => (await row(doomed.uploadId)).erased_at !== null, 60_000);
      expect(await stack.runtime.store.head(doomed.storageKey)).toBeUndefined();
    } finally {
      proxies.s3.setMode('forward');
    }
  }, 120_000);

  it('Temporal down: a delete is 503 temporal_unavailable and tombstones nothing; the same delete works once it is back', async () => {
    const up = await stored();
    proxies.temporal.setMode('refuse');
    let del: Response;
    try {
      del = await fetch(`${stack.url}/v1/uploads/${up.uploadId}`, { method: 'DELETE', headers: { ...auth(), prefer: 'wait=5' } });
    } finally {
      proxies.temporal.setMode('forward');
    }
    expect(del.status).toBe(503);
    expect(((await del.json()) as { error: string }).error).toBe('temporal_unavailable');
    expect((await row(up.uploadId)).deleted_at).toBeNull();
    expect((await fetch(`${stack.url}/v1/uploads/${up.uploadId}/content`, { headers: auth() })).status).toBe(200);
    const again = await eventually(async () => {
      const r = await fetch(`${stack.url}/v1/uploads/${up.uploadId}`, { method: 'DELETE', headers: { ...auth(), prefer: 'wait=30' } });
      return r.status === 200 ? r : undefined;
    }, 60_000);
    expect(((await again.json()) as { status: string }).status).toBe('deleted');
  }, 120_000);

  it('Postgres down: the list, an upload and a delete are 503 database_unavailable', async () => {
    const up = await stored();
    proxies.postgres.setMode('refuse');
    try {
      for (const [method, p] of [
        ['GET', '/v1/uploads'],
        ['GET', `/v1/uploads/${up.uploadId}`],
        ['DELETE', `/v1/uploads/${up.uploadId}`],
      ] as const) {
        const res = await fetch(`${stack.url}${p}`, { method, headers: auth() });
        expect(res.status, `${method} ${p}`).toBe(503);
        expect(((await res.json()) as { error: string }).error).toBe('database_unavailable');
      }
    } finally {
      proxies.postgres.setMode('forward');
    }
    expect((await row(up.uploadId)).deleted_at).toBeNull();
  }, 120_000);
});
