// Rendered once across the cluster: first requests for a cold variant spread over two API
// replicas make one run and one variant; a worker SIGKILLed mid-render is replaced by the
// activity's retry on a new worker, and the upload still has one variant row and one
// variant object, whose bytes decode.
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import getPort from 'get-port';
import sharp from 'sharp';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import type { ManagedProcess } from '../../src/devstack/process';
import { workflowIds } from '../../src/temporal/names';
import { startApiProcess } from '../helpers/api-process';
import { postUpload } from '../helpers/http';
import { eventually } from '../helpers/inspect';
import { png } from '../helpers/media';
import { stackEnv } from '../helpers/stack';
import { stackWithWorkerProcess } from '../helpers/worker-process';

let cluster: Awaited<ReturnType<typeof stackWithWorkerProcess>>;
let replica: ManagedProcess;
let replicaUrl: string;
let tenant: { tenantId: string; apiKey: string };

beforeAll(async () => {
  cluster = await stackWithWorkerProcess('img_crash');
  const { stack } = cluster;
  const port = await getPort({ host: '127.0.0.1' });
  const env = { ...stackEnv(stack.name, stack.dbUrl), S3_BUCKET: stack.config.S3_BUCKET };
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
    const query = `WorkflowId = '${workflowIds.imageVariant(id, 'w_120,fit_inside,f_webp,q_80')}'`;
    for await (const w of cluster.stack.temporal.workflow.list({ query })) found.push(w);
    return found.length ? found : undefined;
  });
  expect(runs.map((r) => r.status.name)).toEqual(['COMPLETED']);
});

it('keeps one variant when its worker is SIGKILLed mid-render', async () => {
  // A large picture encoded to AVIF: a render of several seconds to kill the worker in.
  const id = await imageUpload(5000, 4000);
  const spec = 'w_5000,fit_inside,f_avif,q_50';
  const asked = get(cluster.stack.url, id, 'w_5000,f_avif');
  const handle = cluster.stack.temporal.workflow.getHandle(workflowIds.imageVariant(id, spec));
  await eventually(async () => {
    const desc = await handle.describe().catch(() => undefined);
    return desc?.raw.pendingActivities?.some((a) => a.activityType?.name === 'renderImageVariant' && a.lastHeartbeatTime)
      ? true
      : undefined;
  }, 60_000);
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
