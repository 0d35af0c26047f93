// Rendered once across the cluster: first requests for a cold variant spread over two API
// replicas make one run and one variant; a tenant's renders in flight are bounded (here 1),
// and a request for the render under way joins it; a worker SIGKILLed mid-render is replaced
// by the activity's retry on a new worker, and the upload still has one variant row and one
// variant object, whose bytes decode.
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { serverPort } from '../support/ports';
import sharp from 'sharp';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import type { ManagedProcess } from '../../src/devstack/process';

import { startApiProcess } from '../helpers/api-process';
import { postUpload } from '../helpers/http';
import { eventually } from '../helpers/inspect';
import { png } from '../helpers/media';
import { stackEnv } from '../helpers/stack';
import { stackWithWorkerProcess } from '../helpers/worker-process';
import { imageWorkflowIds } from '../../src/images/contract';

let cluster: Awaited<ReturnType<typeof stackWithWorkerProcess>>;
let replica: ManagedProcess;
let replicaUrl: string;
let tenant: { tenantId: string; apiKey: string };

beforeAll(async () => {
  cluster = await stackWithWorkerProcess('img_crash', { TENANT_MAX_RENDERS_IN_FLIGHT: '1', IMAGE_MAX_RENDER_COST: '1000' });
  const { stack } = cluster;
  const port = await serverPort();
  const env = {
    ...stackEnv(stack.name, stack.dbUrl),
    S3_BUCKET: stack.config.S3_BUCKET,
    TENANT_MAX_RENDERS_IN_FLIGHT: '1',
    IMAGE_MAX_RENDER_COST: '1000',
  };
  replica = await startApiProcess(env, port, path.join(inject('stack').tmpDir, `${stack.name}-api-replica.log`));
  replicaUrl = `http://127.0.0.1:${port}`;
  tenant = await stack.createTenant('img-crash');
  await stack.runtime.pool.query(`UPDATE tenants SET image_specs = 'any' WHERE id = $1`, [tenant.tenantId]);
}, 120_000);
afterAll(async () => {
  await replica?.stop('SIGKILL');
  await cluster?.stop();
});

const get = (base: string, uploadId: string, spec: string) =>
  fetch(`${base}/v1/uploads/${uploadId}/images/${spec}`, { headers: { authorization: `Bearer ${tenant.apiKey}` } }).then(async (r) => ({
    status: r.status,
    body: Buffer.from(await r.arrayBuffer()),
  }));

async function imageUpload(width: number, height: number): Promise<string> {
  const res = await postUpload(cluster.stack.url, {
    apiKey: tenant.apiKey,
    key: `img-crash-${randomUUID()}`,
    body: await png(width, height),
    contentType: 'image/png',
  });
  expect(res.status, res.text).toBe(201);
  return res.json.uploadId as string;
}

const variants = async (uploadId: string) =>
  (await cluster.stack.runtime.pool.query('SELECT spec, storage_key FROM image_variants WHERE upload_id = $1', [uploadId])).rows;

async function variantObjects(uploadId: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of cluster.stack.runtime.store.list(`tenants/${tenant.tenantId}/renditions/${uploadId}/images/`)) keys.push(o.key);
  return keys;
}

it('renders once for 100 first requests spread over two API replicas', async () => {
  const id = await imageUpload(300, 200);
  const answers = await Promise.all(Array.from({ length: 100 }, (_, i) => get(i % 2 ? replicaUrl : cluster.stack.url, id, 'w_120,f_webp')));
  expect(answers.map((a) => a.status)).toEqual(Array(100).fill(200));
  expect(new Set(answers.map((a) => a.body.toString('base64'))).size).toBe(1);
  expect(await variants(id)).toHaveLength(1);
  expect(await variantObjects(id)).toHaveLength(1);
  const runs = await eventually(async () => {
    const found = [];
    const query = `WorkflowId = '${imageWorkflowIds.imageVariant(id, 'w_120,fit_inside,f_webp,q_80')}'`;
    for await (const w of cluster.stack.temporal.workflow.list({ query })) found.push(w);
    return found.length ? found : undefined;
  });
  expect(runs.map((r) => r.status.name)).toEqual(['COMPLETED']);
});

/** Resolves once the render of `spec` for `uploadId` is under way (its activity has heartbeated). */
async function renderUnderWay(uploadId: string, spec: string) {
  const handle = cluster.stack.temporal.workflow.getHandle(imageWorkflowIds.imageVariant(uploadId, spec));
  await eventually(async () => {
    const desc = await handle.describe().catch(() => undefined);
    return desc?.raw.pendingActivities?.some((a) => a.activityType?.name === 'renderImageVariant' && a.lastHeartbeatTime)
      ? true
      : undefined;
  }, 60_000);
  return handle;
}

it("bounds a tenant's renders in flight: another cold variant is refused for now, the one under way is joined", async () => {
  const big = await imageUpload(5000, 4000);
  const small = await imageUpload(40, 40);
  const slow = get(cluster.stack.url, big, 'w_5000,f_avif');
  await renderUnderWay(big, 'w_5000,fit_inside,f_avif,q_50');
  const refused = await fetch(`${replicaUrl}/v1/uploads/${small}/images/w_10,f_png`, {
    headers: { authorization: `Bearer ${tenant.apiKey}` },
  });
  expect(refused.status).toBe(429);
  expect(refused.headers.get('retry-after')).toBe('2');
  expect(((await refused.json()) as { error: string }).error).toBe('too_many_renders');
  expect(await variants(small)).toEqual([]);
  const joined = get(replicaUrl, big, 'w_5000,fit_inside,f_avif');
  const [first, second] = await Promise.all([slow, joined]);
  expect([first.status, second.status]).toEqual([200, 200]);
  expect(second.body.equals(first.body)).toBe(true);
  // Once the slow render has ended (its slot freed), the other variant renders.
  await eventually(async () => ((await get(replicaUrl, small, 'w_10,f_png')).status === 200 ? true : undefined));
  expect(await variants(small)).toHaveLength(1);
}, 240_000);

it('admits a burst of cold specs one after another under the cap: one renders, the rest are refused, over both replicas', async () => {
  const big = await imageUpload(5000, 4000);
  // Twelve distinct cold specs at once (the cap is 1): each admission is counted under the tenant's lock.
  const specs = Array.from({ length: 12 }, (_, i) => `w_${4000 + i},f_avif`);
  const answers = await Promise.all(specs.map((spec, i) => get(i % 2 ? replicaUrl : cluster.stack.url, big, spec)));
  const statuses = answers.map((a) => a.status).sort();
  expect(statuses.filter((s) => s === 200)).toHaveLength(1);
  expect(statuses.filter((s) => s === 429)).toHaveLength(11);
  expect(await variants(big)).toHaveLength(1);
  // Nothing is left counted: the next cold spec is admitted.
  expect((await cluster.stack.runtime.pool.query('SELECT count(*)::int AS n FROM image_renders')).rows[0].n).toBe(0);
  expect((await get(replicaUrl, big, 'w_20,f_png')).status).toBe(200);
}, 240_000);

it('keeps one variant when its worker is SIGKILLed mid-render', async () => {
  // A large picture encoded to AVIF: a render of several seconds to kill the worker in.
  const id = await imageUpload(5000, 4000);
  const spec = 'w_5000,fit_inside,f_avif,q_50';
  const asked = get(cluster.stack.url, id, 'w_5000,f_avif');
  const handle = await renderUnderWay(id, spec);
  await cluster.kill();
  await cluster.start();
  const answer = await asked;
  expect(answer.status).toBe(200);
  const meta = await sharp(answer.body).metadata();
  expect([meta.format, meta.width, meta.height]).toEqual(['heif', 5000, 4000]);
  // The retried attempt (a second one) rendered it; one row, one object.
  const started = (await handle.fetchHistory()).events!.filter((e) => e.activityTaskStartedEventAttributes);
  expect(started.at(-1)!.activityTaskStartedEventAttributes!.attempt).toBeGreaterThanOrEqual(2);
  expect(await variants(id)).toHaveLength(1);
  expect(await variantObjects(id)).toEqual([(await variants(id))[0].storage_key]);
}, 240_000);
