// Housekeeping Schedules: created at worker start; a forced run expires key rows into
// tombstones and removes orphaned attempt objects, never a referenced one; a reused
// expired key gets idempotency_key_expired naming the original upload.
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { audit } from '../../src/audit';
import { keyStoragePrefix } from '../../src/temporal/ids';
import { HOUSEKEEPING, scheduleId } from '../../src/temporal/schedules';
import type { HousekeepingTask } from '../../workflows/housekeeping';
import { startTestStack, type TestStack } from '../helpers/stack';
import { postUpload } from '../helpers/http';
import { eventually, rowsForKey } from '../helpers/inspect';

let stack: TestStack;
let tenant: { tenantId: string; apiKey: string };

beforeAll(async () => {
  stack = await startTestStack('hk', { env: { STAGING_GRACE_SECONDS: '0' } });
  tenant = await stack.createTenant();
});
afterAll(() => stack?.stop());

/** Triggers a schedule now and returns its run's report. */
async function runNow(task: HousekeepingTask): Promise<Record<string, number>> {
  const handle = stack.temporal.schedule.getHandle(scheduleId(stack.config.TASK_QUEUE_UPLOADS, task));
  const before = (await handle.describe()).info.recentActions.length;
  await handle.trigger();
  const action = await eventually(async () => {
    const recent = (await handle.describe()).info.recentActions;
    return recent.length > before ? recent.at(-1) : undefined;
  });
  return stack.temporal.workflow.getHandle(action.action.workflow.workflowId, action.action.workflow.firstExecutionRunId).result();
}

it('creates one schedule per housekeeping task at worker start', async () => {
  for (const task of Object.keys(HOUSEKEEPING) as HousekeepingTask[]) {
    const desc = await stack.temporal.schedule.getHandle(scheduleId(stack.config.TASK_QUEUE_UPLOADS, task)).describe();
    expect(desc.action).toMatchObject({ type: 'startWorkflow', workflowType: 'housekeepingWorkflow', args: [task] });
  }
});

it('expires key rows into tombstones; a reused expired key is refused, naming the upload', async () => {
  const key = `hk-${randomUUID()}`;
  const file = Buffer.from('keep me, expire my key');
  const created = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: file });
  expect(created.status).toBe(201);
  await stack.runtime.pool.query(`UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE tenant_id = $1 AND key = $2`, [tenant.tenantId, key]);

  const early = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: file });
  expect(early.status).toBe(422);
  expect(early.json).toMatchObject({ error: 'idempotency_key_expired', uploadId: created.json.uploadId });

  const report = await runNow('expire-keys');
  expect(report.expired).toBeGreaterThanOrEqual(1);
  expect((await rowsForKey(stack.runtime.pool, tenant.tenantId, key)).keys).toHaveLength(0);
  const tomb = await stack.runtime.pool.query('SELECT upload_id FROM idempotency_tombstones WHERE tenant_id = $1 AND key = $2', [tenant.tenantId, key]);
  expect(tomb.rows).toEqual([{ upload_id: created.json.uploadId }]);

  for (const body of [file, Buffer.from('a different file under the old key')]) {
    const late = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body });
    expect(late.status).toBe(422);
    expect(late.json).toMatchObject({ error: 'idempotency_key_expired', uploadId: created.json.uploadId });
  }
  expect((await rowsForKey(stack.runtime.pool, tenant.tenantId, key)).uploads).toHaveLength(1);
});

it('removes orphaned attempt objects, never a referenced one', async () => {
  const key = `hk-${randomUUID()}`;
  const created = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: Buffer.from('referenced object') });
  expect(created.status).toBe(201);
  const orphan = `${keyStoragePrefix(tenant.tenantId, `orphan-${randomUUID()}`)}${randomUUID()}`;
  await stack.s3.put(orphan, Readable.from([Buffer.from('left by a crashed attempt')]), { contentType: 'application/octet-stream' });
  const before = await audit(stack.runtime.pool, stack.s3);
  expect(before.unreferencedObjects).toBeGreaterThanOrEqual(1);

  const report = await runNow('sweep-staging');
  expect(report.removed).toBeGreaterThanOrEqual(1);
  expect(await stack.s3.head(orphan)).toBeUndefined();
  expect(await stack.s3.head(created.json.storageKey)).toBeDefined();
  const after = await audit(stack.runtime.pool, stack.s3);
  expect(after.violations).toEqual([]);
  expect(after.unreferencedObjects).toBe(0);

  expect(await runNow('abort-multipart')).toEqual({ aborted: 0 });
});

// Last: it leaves an upload without its key row behind on purpose.
it('the audit expects neither key row nor tombstone for an upload older than both windows', async () => {
  const key = `hk-old-${randomUUID()}`;
  const created = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: Buffer.from('an old upload') });
  expect(created.status).toBe(201);
  const db = stack.runtime.pool;
  // Eight days later: the key row expired after 1 day, its tombstone after 7 more.
  await db.query(`UPDATE uploads SET created_at = now() - interval '8 days' WHERE id = $1`, [created.json.uploadId]);
  await db.query('DELETE FROM idempotency_keys WHERE tenant_id = $1 AND key = $2', [tenant.tenantId, key]);
  const flagged = (r: { violations: string[] }) => r.violations.filter((v) => v.includes(key));
  expect(flagged(await audit(db, stack.s3))).toHaveLength(1); // without the windows, it looks lost
  expect(flagged(await audit(db, stack.s3, { keyRetentionSeconds: (24 + 168) * 3600 }))).toEqual([]);
  // Within the windows a missing key row is still a violation.
  await db.query(`UPDATE uploads SET created_at = now() - interval '2 days' WHERE id = $1`, [created.json.uploadId]);
  expect(flagged(await audit(db, stack.s3, { keyRetentionSeconds: (24 + 168) * 3600 }))).toHaveLength(1);
});
