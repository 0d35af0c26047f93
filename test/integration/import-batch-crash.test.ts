// A 1,000-item import batch whose worker and API are SIGKILLed mid-way and started again:
// the batch goes on where it was, the repeated request answers the same batch, and each item
// is imported exactly once (one upload and one object per item), the audit clean.
import { randomBytes, randomUUID } from 'node:crypto';
import path from 'node:path';
import { serverPort } from '../support/ports';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { audit } from '../../src/audit';
import type { ManagedProcess } from '../../src/devstack/process';
import { startApiProcess } from '../helpers/api-process';
import { eventually, listKeys } from '../helpers/inspect';
import { stackEnv } from '../helpers/stack';
import { stackWithWorkerProcess } from '../helpers/worker-process';
import { startFileOrigin, type FileOrigin } from '../support/file-origin';

const ITEMS = 1000;
let env: Awaited<ReturnType<typeof stackWithWorkerProcess>>;
let origin: FileOrigin;
let api: ManagedProcess | undefined;
let apiEnv: Record<string, string>;
let apiUrl = '';
const apiLog = () => path.join(inject('stack').tmpDir, `${env.stack.name}-api.log`);

beforeAll(async () => {
  env = await stackWithWorkerProcess('batch_crash');
  apiEnv = { ...stackEnv(env.stack.name, env.stack.dbUrl), S3_BUCKET: env.stack.config.S3_BUCKET };
  const port = await serverPort();
  apiUrl = `http://127.0.0.1:${port}`;
  api = await startApiProcess(apiEnv, port, apiLog());
  origin = await startFileOrigin(randomBytes(64 * 1024));
});
afterAll(async () => {
  await api?.stop('SIGKILL');
  await origin?.close();
  await env?.stop();
});

it('imports each of 1,000 items once though its worker and its API are killed mid-way', async () => {
  const { stack } = env;
  const tenant = await stack.createTenant();
  const key = `batch-crash-${randomUUID()}`;
  const items = Array.from({ length: ITEMS }, (_, i) => ({ url: `${origin.base}/items/${i + 1}.bin` }));
  const post = () =>
    fetch(`${apiUrl}/v1/import-batches`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.apiKey}`, 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify({ items, concurrency: 16 }),
    });
  const started = await post();
  expect(started.status).toBe(202);
  const { id } = (await started.json()) as { id: string };
  const progress = async () => {
    const r = await fetch(`${apiUrl}/v1/import-batches/${id}`, { headers: { authorization: `Bearer ${tenant.apiKey}` } });
    return (await r.json()) as { state: string; done: number; failed: number; skipped: number };
  };

  await eventually(async () => (await progress()).done >= ITEMS / 5, 180_000);
  await env.kill();
  await api!.stop('SIGKILL');
  const port = Number(new URL(apiUrl).port);
  api = await startApiProcess(apiEnv, port, apiLog());
  await env.start();
  // The same request again answers the same batch.
  const repeated = await post();
  expect(repeated.headers.get('idempotent-replayed')).toBe('true');
  expect(((await repeated.json()) as { id: string }).id).toBe(id);

  const end = await eventually(async () => {
    const p = await progress();
    return p.state === 'completed' ? p : undefined;
  }, 300_000);
  expect(end).toMatchObject({ done: ITEMS, failed: 0, skipped: 0 });
  const uploads = await stack.runtime.pool.query<{ n: string; keys: string }>(
    `SELECT count(*) AS n, count(DISTINCT idempotency_key) AS keys FROM uploads WHERE tenant_id = $1 AND idempotency_key LIKE $2`,
    [tenant.tenantId, `import-batch/${id}/%`],
  );
  expect(uploads.rows[0]).toEqual({ n: String(ITEMS), keys: String(ITEMS) });
  expect(await listKeys(stack.runtime.store, `tenants/${tenant.tenantId}/`)).toHaveLength(ITEMS);
  expect((await stack.runtime.pool.query(`SELECT count(*) AS n FROM imports WHERE tenant_id = $1`, [tenant.tenantId])).rows[0].n).toBe('0');
  expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toEqual([]);
}, 600_000);
