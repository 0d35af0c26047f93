// The worker SIGKILLed in the middle of a tenant's deletion — the tenant closed, its uploads'
// deletions under way, one of them waiting on a cancelled transcode — then restarted: the
// deletion finishes once, every upload erased by one deletion run, nothing of the tenant
// left in the store, its data keys destroyed, the audit clean.
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { audit } from '../../src/audit';
import type { ManagedProcess } from '../../src/devstack/process';
import { workflowIds } from '../../src/temporal/names';
import { startTestStack, stackEnv, type TestStack } from '../helpers/stack';
import { postUpload } from '../helpers/http';
import { eventually, listKeys } from '../helpers/inspect';
import { audio } from '../helpers/media';
import { startWorkerProcess } from '../helpers/worker-process';

const ADMIN = `admin-${randomUUID()}`;
let stack: TestStack;
let worker: ManagedProcess | undefined;
let workerEnv: Record<string, string>;
let logFile: string;

beforeAll(async () => {
  stack = await startTestStack('tenantcrash', { role: 'api', env: { ADMIN_TOKEN: ADMIN } });
  workerEnv = { ...stackEnv(stack.name, stack.dbUrl), S3_BUCKET: stack.config.S3_BUCKET };
  logFile = path.join(inject('stack').tmpDir, `${stack.name}-worker.log`);
  worker = await startWorkerProcess(workerEnv, logFile);
});

afterAll(async () => {
  await worker?.stop('SIGKILL');
  await stack?.stop();
});

it('killed mid-sweep, with a deletion waiting on a cancelled transcode: the restart finishes the tenant once', async () => {
  const tenant = await stack.createTenant('crashing');
  const upload = async (body: Buffer, contentType: string) => {
    const res = await postUpload(stack.url, { apiKey: tenant.apiKey, key: `tcrash-${randomUUID()}`, body, contentType });
    expect(res.status, res.text).toBe(201);
    return res.json.uploadId as string;
  };
  const long = await upload(await audio(300), 'audio/wav');
  const ids = [long];
  for (let i = 0; i < 8; i++) ids.push(await upload(Buffer.from(`file ${i}\n`), 'text/plain'));
  // The long file's transcode is running.
  const child = stack.temporal.workflow.getHandle(workflowIds.downstream(long));
  await eventually(async () => (await child.describe()).raw.pendingActivities?.some((a) => a.activityType?.name === 'runStep'), 60_000);

  const started = await fetch(`${stack.url}/admin/tenants/${tenant.tenantId}`, {
    method: 'DELETE',
    headers: { authorization: `Bearer ${ADMIN}`, prefer: 'wait=0' },
  });
  expect(started.status).toBe(202);
  expect(started.headers.get('location')).toBe(`/admin/tenants/${tenant.tenantId}`);
  // Closed, and the long file's deletion under way (tombstoned, waiting on its transcode).
  await eventually(
    async () => (await stack.runtime.pool.query('SELECT 1 FROM uploads WHERE id = $1 AND deleted_at IS NOT NULL', [long])).rowCount === 1,
    60_000,
  );
  expect((await stack.temporal.workflow.getHandle(workflowIds.tenantDeletion(tenant.tenantId)).describe()).status.name).toBe('RUNNING');
  await worker!.stop('SIGKILL');
  worker = await startWorkerProcess(workerEnv, logFile);

  const state = async () =>
    (await (await fetch(`${stack.url}/admin/tenants/${tenant.tenantId}`, { headers: { authorization: `Bearer ${ADMIN}` } })).json()) as {
      status: string;
    };
  await eventually(async () => (await state()).status === 'deleted', 120_000);
  const result = (await stack.temporal.workflow.getHandle(workflowIds.tenantDeletion(tenant.tenantId)).result()) as {
    uploadsErased: number;
  };
  expect(result.uploadsErased).toBe(ids.length);
  for (const id of ids) {
    const runs = [];
    for await (const r of stack.temporal.workflow.list({ query: `WorkflowId = '${workflowIds.deletion(id)}'` })) runs.push(r.status.name);
    expect(runs, id).toEqual(['COMPLETED']);
  }
  const rows = await stack.runtime.pool.query('SELECT count(*) AS n FROM uploads WHERE tenant_id = $1 AND erased_at IS NULL', [
    tenant.tenantId,
  ]);
  expect(Number(rows.rows[0].n)).toBe(0);
  const keys = await stack.runtime.pool.query('SELECT count(*) AS n FROM payload_keys WHERE tenant_id = $1 AND destroyed_at IS NULL', [
    tenant.tenantId,
  ]);
  expect(Number(keys.rows[0].n)).toBe(0);
  expect(await listKeys(stack.runtime.store, `tenants/${tenant.tenantId}/`)).toEqual([]);
  expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toEqual([]);
}, 240_000);
