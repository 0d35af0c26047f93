// A storage migration whose worker is SIGKILLed while an upload's bytes are being copied: the
// next worker copies it again (the same keys) and switches once; the upload is read whole
// throughout, ends in the target exactly once, and its source is released.
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { audit } from '../../src/audit';
import { S3Store } from '../../src/storage/s3-store';
import { keyStoragePrefix } from '../../src/temporal/ids';

import { jsonCaller, postUpload, sha256 } from '../helpers/http';
import { eventually, listKeys } from '../helpers/inspect';
import { stackWithWorkerProcess } from '../helpers/worker-process';
import { serverPort } from '../support/ports';
import { startVersity, versityBucket, type Versity } from '../support/versitygw';
import { migrationWorkflowIds } from '../../src/targets/contract';

const MiB = 1024 * 1024;
/** The tenant's JSON calls, each under a key of its own. */
const keyedCaller = (base: string, apiKey: string) => {
  const call = jsonCaller(() => ({ base, apiKey }));
  return (method: string, pathname: string, json?: unknown) => call(method, pathname, json, randomUUID());
};
const CREDS = { accessKeyId: 'crash-owner', secretAccessKey: `crash-secret-${randomUUID()}` };
const file = randomBytes(64 * MiB);
let env: Awaited<ReturnType<typeof stackWithWorkerProcess>>;
let versity: Versity;
let bucketStore: S3Store;
const dir = mkdtempSync(path.join(os.tmpdir(), 'oncely-migration-crash-'));

beforeAll(async () => {
  versity = await startVersity({ port: await serverPort(), dir, ...CREDS });
  bucketStore = await versityBucket({ endpoint: versity.endpoint, ...CREDS }, 'crash-target');
  env = await stackWithWorkerProcess('migration_crash', {
    STORAGE_TARGET_ALLOW_PRIVATE_NETWORKS: 'true',
    STORAGE_MIGRATION_SOURCE_GRACE_SECONDS: '0',
  });
});
afterAll(async () => {
  bucketStore?.destroy();
  await env?.stop();
  await versity?.stop();
  rmSync(dir, { recursive: true, force: true });
});

it('moves an upload once when its worker is SIGKILLed mid-copy', async () => {
  const { stack } = env;
  const tenant = await stack.createTenant();
  const call = keyedCaller(stack.url, tenant.apiKey);
  const key = `crash-${randomUUID()}`;
  const uploaded = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: file, prefer: 'wait=60' });
  expect(uploaded.status, uploaded.text).toBe(201);
  const uploadId = uploaded.json.uploadId as string;
  const target = await call('POST', '/v1/storage-targets', { name: 'crash', endpoint: versity.endpoint, bucket: 'crash-target', ...CREDS });
  expect(target.status).toBe(201);
  const started = await call('POST', '/v1/storage-migrations', { from: 'default', to: 'crash' });
  expect(started.status).toBe(201);

  // The move's copy has started on the worker: kill it there.
  await eventually(async () => {
    const d = await stack.temporal.workflow
      .getHandle(migrationWorkflowIds.storageMove(uploadId))
      .describe()
      .catch(() => undefined);
    return (d?.raw.pendingActivities ?? []).some((a) => String(a.state) === 'PENDING_ACTIVITY_STATE_STARTED' || a.state === 2);
  }, 60_000);
  await env.kill();
  // Reads are served from the source while no worker runs.
  const during = await fetch(`${stack.url}/v1/uploads/${uploadId}/content`, { headers: { authorization: `Bearer ${tenant.apiKey}` } });
  expect(sha256(Buffer.from(await during.arrayBuffer()))).toBe(sha256(file));
  await env.start();

  const done = await eventually(async () => {
    const m = (await call('GET', `/v1/storage-migrations/${started.json.id}`)).json;
    return m.state === 'completed' ? m : undefined;
  }, 120_000);
  expect(done).toMatchObject({ moved: 1, failed: 0, total: 1 });
  const after = (await call('GET', `/v1/uploads/${uploadId}`)).json;
  expect(after.storageTarget).toBe(target.json.id);
  const read = await fetch(`${stack.url}/v1/uploads/${uploadId}/content`, { headers: { authorization: `Bearer ${tenant.apiKey}` } });
  expect(sha256(Buffer.from(await read.arrayBuffer()))).toBe(sha256(file));
  expect(await listKeys(bucketStore, keyStoragePrefix(tenant.tenantId, key))).toHaveLength(1);
  await eventually(async () => (await listKeys(stack.runtime.store, keyStoragePrefix(tenant.tenantId, key))).length === 0, 60_000);
  const report = await audit(stack.runtime.pool, stack.runtime.store, { keyRetentionSeconds: 3600 });
  expect(report.violations).toEqual([]);
  expect(report.unreferencedObjects).toBe(0);
});

it('moves each of a page of small uploads once when its worker is SIGKILLed while the page is being moved', async () => {
  const { stack } = env;
  const tenant = await stack.createTenant();
  const call = keyedCaller(stack.url, tenant.apiKey);
  const uploads = await Promise.all(
    Array.from({ length: 60 }, async (_, i) => {
      const body = randomBytes(32 * 1024 + i);
      const key = `crash-small-${i}-${randomUUID()}`;
      const up = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body });
      expect(up.status).toBe(201);
      return { id: up.json.uploadId as string, key, body };
    }),
  );
  const target = await call('POST', '/v1/storage-targets', {
    name: 'crash-small',
    endpoint: versity.endpoint,
    bucket: 'crash-target',
    prefix: 'small/',
    ...CREDS,
  });
  expect(target.status).toBe(201);
  const started = await call('POST', '/v1/storage-migrations', { from: 'default', to: 'crash-small', concurrency: 4 });
  expect(started.status).toBe(201);
  const moved = async () =>
    (await stack.runtime.pool.query('SELECT count(*)::int AS n FROM storage_migration_items WHERE migration_id = $1', [started.json.id]))
      .rows[0].n as number;
  // Some of the page moved, not all: kill the worker in the middle of it.
  await eventually(async () => (await moved()) >= 8, 60_000);
  await env.kill();
  const killedAt = await moved();
  expect(killedAt).toBeLessThan(uploads.length);
  await env.start();

  const done = await eventually(async () => {
    const m = (await call('GET', `/v1/storage-migrations/${started.json.id}`)).json;
    return m.state === 'completed' ? m : undefined;
  }, 120_000);
  expect(done).toMatchObject({ moved: uploads.length, failed: 0, skipped: 0, total: uploads.length });
  for (const u of uploads) {
    const read = await fetch(`${stack.url}/v1/uploads/${u.id}/content`, { headers: { authorization: `Bearer ${tenant.apiKey}` } });
    expect(sha256(Buffer.from(await read.arrayBuffer()))).toBe(sha256(u.body));
    expect(await listKeys(bucketStore, `small/${keyStoragePrefix(tenant.tenantId, u.key)}`)).toHaveLength(1);
  }
  await eventually(async () => (await listKeys(stack.runtime.store, `tenants/${tenant.tenantId}/`)).length === 0, 60_000);
  const report = await audit(stack.runtime.pool, stack.runtime.store, { keyRetentionSeconds: 3600 });
  expect(report.violations).toEqual([]);
  expect(report.unreferencedObjects).toBe(0);
});
