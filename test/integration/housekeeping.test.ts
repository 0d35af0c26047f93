// Housekeeping Schedules: created at worker start; a forced run expires key rows into
// tombstones, removes orphaned attempt objects (never a referenced one) and run keys nothing
// was sealed with; a reused expired key gets idempotency_key_expired naming the original upload.
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { audit } from '../../src/audit';
import { keyStoragePrefix, uploadWorkflowId } from '../../src/temporal/ids';
import { scopes } from '../../src/codec/payload-scope';
import { ensurePayloadKey } from '../../src/db/queries/payload-keys';
import { HOUSEKEEPING, scheduleId } from '../../src/temporal/schedules';
import type { HousekeepingTask } from '../../src/temporal/definitions';
import { startTestStack, type TestStack } from '../helpers/stack';
import { postUpload } from '../helpers/http';
import { eventually, rowsForKey } from '../helpers/inspect';
import { startWaitingRun } from '../helpers/requests';

let stack: TestStack;
let tenant: { tenantId: string; apiKey: string };

beforeAll(async () => {
  stack = await startTestStack('hk', { env: { STAGING_GRACE_SECONDS: '0' } });
  tenant = await stack.createTenant();
  // A schedule firing on its own (they are aligned to the clock) would do the work before a
  // test's trigger and leave its report empty: only the triggers below run.
  for (const task of Object.keys(HOUSEKEEPING) as HousekeepingTask[]) {
    await stack.temporal.schedule
      .getHandle(scheduleId(stack.config.TASK_QUEUE_UPLOADS, task))
      .pause('housekeeping test triggers its own runs');
  }
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
    const handle = stack.temporal.schedule.getHandle(scheduleId(stack.config.TASK_QUEUE_UPLOADS, task));
    // A describe asks the schedule's own run, which a dev server busy with the whole suite can
    // answer late: each try gets 10 s, and the test polls.
    const desc = await eventually(() => stack.temporal.withDeadline(Date.now() + 10_000, () => handle.describe()), 90_000);
    expect(desc.action).toMatchObject({ type: 'startWorkflow', workflowType: 'housekeepingWorkflow', args: [task] });
  }
}, 180_000);

it('expires key rows into tombstones; a reused expired key is refused, naming the upload', async () => {
  const key = `hk-${randomUUID()}`;
  const file = Buffer.from('keep me, expire my key');
  const created = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: file });
  expect(created.status).toBe(201);
  await stack.runtime.pool.query(`UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE tenant_id = $1 AND key = $2`, [
    tenant.tenantId,
    key,
  ]);

  const early = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: file });
  expect(early.status).toBe(422);
  expect(early.json).toMatchObject({ error: 'idempotency_key_expired', uploadId: created.json.uploadId });

  const report = await runNow('expire-keys');
  expect(report.expired).toBeGreaterThanOrEqual(1);
  expect((await rowsForKey(stack.runtime.pool, tenant.tenantId, key)).keys).toHaveLength(0);
  const tomb = await stack.runtime.pool.query('SELECT upload_id FROM idempotency_tombstones WHERE tenant_id = $1 AND key = $2', [
    tenant.tenantId,
    key,
  ]);
  expect(tomb.rows).toEqual([{ upload_id: created.json.uploadId }]);

  for (const body of [file, Buffer.from('a different file under the old key')]) {
    const late = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body });
    expect(late.status).toBe(422);
    expect(late.json).toMatchObject({ error: 'idempotency_key_expired', uploadId: created.json.uploadId });
  }
  expect((await rowsForKey(stack.runtime.pool, tenant.tenantId, key)).uploads).toHaveLength(1);
});

it('fails an import in flight that no run will finish, and leaves a running one alone', async () => {
  const orphan = randomUUID();
  const running = `hk-import-${randomUUID()}`;
  const insert = (id: string, key: string) =>
    stack.runtime.pool.query(
      `INSERT INTO imports (id, tenant_id, idempotency_key, fingerprint, origin, updated_at)
       VALUES ($1, $2, $3, 'f', 'http://origin', now() - interval '1 hour')`,
      [id, tenant.tenantId, key],
    );
  // As an API that died between the row and the run's start leaves it.
  await insert(orphan, `hk-orphan-${randomUUID()}`);
  // One whose run waits (no copy comes): still its run's.
  const waiting = await startWaitingRun(stack, tenant.tenantId, running, { declaredBytes: 5, receiveTimeoutSeconds: 300 });
  const alive = randomUUID();
  await insert(alive, running);
  try {
    const report = await runNow('expire-keys');
    expect(report.orphanedImports).toBeGreaterThanOrEqual(1);
    const states = await stack.runtime.pool.query<{ id: string; state: string }>('SELECT id, state FROM imports WHERE id = ANY($1)', [
      [orphan, alive],
    ]);
    expect(Object.fromEntries(states.rows.map((r) => [r.id, r.state]))).toEqual({ [orphan]: 'failed', [alive]: 'importing' });
  } finally {
    await waiting.terminate();
  }
});

it('removes a run key left by a request refused before its run started; keeps one a run, an upload or a recent use still needs', async () => {
  const { pool } = stack.runtime;
  const runScope = (key: string) => scopes.run(uploadWorkflowId(tenant.tenantId, key));
  const liveKey = async (key: string) =>
    (await pool.query<{ id: string }>('SELECT id FROM payload_keys WHERE scope = $1 AND destroyed_at IS NULL', [runScope(key)])).rows[0]
      ?.id;
  // The replay lookup records a new key's run key; the request is then refused (no such pipeline).
  const refused = `hk-refused-${randomUUID()}`;
  const usedSince = `hk-used-${randomUUID()}`;
  for (const key of [refused, usedSince]) {
    const res = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: Buffer.from('never read'), pipeline: 'no-such-pipeline' });
    expect(res.status).toBe(422);
    expect(await liveKey(key)).toBeDefined();
  }
  const committed = `hk-committed-${randomUUID()}`;
  expect((await postUpload(stack.url, { apiKey: tenant.apiKey, key: committed, body: Buffer.from('an upload names my key') })).status).toBe(
    201,
  );
  const running = `hk-running-${randomUUID()}`;
  const waiting = await startWaitingRun(stack, tenant.tenantId, running, { declaredBytes: 5, receiveTimeoutSeconds: 300 });
  try {
    const keys = [refused, usedSince, committed, running];
    const ids = await Promise.all(keys.map(liveKey));
    expect(ids.every(Boolean)).toBe(true);
    // All of them unused for two hours; then one is taken to seal with (as a start finds it).
    await pool.query(`UPDATE payload_keys SET created_at = now() - interval '2 hours', used_at = NULL WHERE id = ANY($1)`, [ids]);
    const taken = await ensurePayloadKey(pool, {
      id: randomUUID(),
      scope: runScope(usedSince),
      wrapped: 'unused',
      tenantId: tenant.tenantId,
    });
    expect(taken?.id).toBe(ids[1]);

    const report = await runNow('expire-keys');
    expect(report.unusedRunKeys).toBeGreaterThanOrEqual(1);
    expect(await Promise.all(keys.map(liveKey))).toEqual([undefined, ids[1], ids[2], ids[3]]);
    expect((await pool.query('SELECT 1 FROM payload_keys WHERE id = $1', [ids[0]])).rows).toHaveLength(0);
  } finally {
    await waiting.terminate();
  }
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

it('leaves the attempt objects of a key whose upload is still running past the grace period, and of an open claim', async () => {
  const key = `hk-running-${randomUUID()}`;
  // The key's run is waiting (e.g. its commit held up by an outage) with a copy already written.
  const handle = await startWaitingRun(stack, tenant.tenantId, key, { declaredBytes: 5, receiveTimeoutSeconds: 300 });
  const copy = `${keyStoragePrefix(tenant.tenantId, key)}${randomUUID()}`;
  await stack.s3.put(copy, Readable.from([Buffer.from('hello')]), { contentType: 'text/plain' });
  // An open claim (a request under the key that has not answered yet) protects its folder too.
  const claimed = `hk-claim-${randomUUID()}`;
  await stack.runtime.pool.query(
    `INSERT INTO idempotency_keys (tenant_id, key, fingerprint, route, created_at, expires_at) VALUES ($1, $2, 'x', '/v1/uploads', now(), now() + interval '1 hour')`,
    [tenant.tenantId, claimed],
  );
  const claimedCopy = `${keyStoragePrefix(tenant.tenantId, claimed)}${randomUUID()}`;
  await stack.s3.put(claimedCopy, Readable.from([Buffer.from('claimed')]), { contentType: 'text/plain' });
  try {
    // Visibility is eventually consistent: wait until the run is listed as running.
    await eventually(async () => {
      for await (const wf of stack.temporal.workflow.list({ query: `WorkflowId = '${handle.workflowId}' AND ExecutionStatus = 'Running'` }))
        return wf;
      return undefined;
    });
    const report = await runNow('sweep-staging');
    expect(report.protectedKeys).toBeGreaterThanOrEqual(2);
    expect(await stack.s3.head(copy)).toBeDefined();
    expect(await stack.s3.head(claimedCopy)).toBeDefined();
  } finally {
    await handle.terminate('test done');
    await stack.runtime.pool.query('DELETE FROM idempotency_keys WHERE tenant_id = $1 AND key = $2', [tenant.tenantId, claimed]);
  }
  // Once the run has ended without committing and the claim is gone, the objects are orphans.
  await eventually(async () => {
    for await (const wf of stack.temporal.workflow.list({ query: `WorkflowId = '${handle.workflowId}' AND ExecutionStatus = 'Running'` }))
      return undefined;
    return true;
  });
  await runNow('sweep-staging');
  expect(await stack.s3.head(copy)).toBeUndefined();
  expect(await stack.s3.head(claimedCopy)).toBeUndefined();
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
