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

    const retry = await eventually(async () => {
      const r = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: file });
      return r.status === 201 ? r : undefined;
    }, 60_000);
    expect(retry.json.sha256).toBe(sha256(file));
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    const after = await rowsForKey(stack.runtime.pool, tenant.tenantId, key);
    expect(after.uploads).toHaveLength(1);
    expect(after.keys).toHaveLength(1);
    expect((await fetch(`${stack.url}/readyz`)).status).toBe(200);
  }, 120_000);
});
