// Restores raced against their windows' end with the worker SIGKILLed in between, on both
// stores: every upload ends with exactly one outcome — restored and whole, or erased — and
// it is the one its restore was answered; one upload.restored or one upload.deleted event
// each, never both; the audit agrees.
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { audit } from '../../src/audit';
import { Deletions } from '../../src/lifecycle/deletions';
import { downstreamSettings } from '../../src/services';
import { workflowIds } from '../../src/temporal/names';
import { postUpload, sha256 } from '../helpers/http';
import { eventually } from '../helpers/inspect';
import type { TestStack } from '../helpers/stack';
import { stackWithWorkerProcess } from '../helpers/worker-process';
import { WebhookReceiver } from '../support/webhook-receiver';

const UPLOADS = 12;
/** Each window is this long, so the restores, the window's ends and the kill land together. */
const WINDOW_SECONDS = 6;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.each(['s3', 'local'] as const)('restores raced against the window end under SIGKILL on the %s store', (kind) => {
  let harness: Awaited<ReturnType<typeof stackWithWorkerProcess>>;
  let stack: TestStack;
  let dataDir: string | undefined;
  const receiver = new WebhookReceiver();
  beforeAll(async () => {
    await receiver.start();
    dataDir = kind === 'local' ? mkdtempSync(path.join(os.tmpdir(), 'oncely-restore-crash-')) : undefined;
    harness = await stackWithWorkerProcess(`restore_crash_${kind}`, dataDir ? { S3_ENDPOINT: '', DATA_DIR: dataDir } : {});
    stack = harness.stack;
  });
  afterAll(async () => {
    await harness?.stop();
    await receiver.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('leaves one outcome per upload, the one its restore was answered, whatever the worker went through', async () => {
    const t = await stack.createTenant('restore-crash');
    const endpoint = await fetch(`${stack.url}/v1/webhook-endpoints`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: receiver.url }),
    });
    expect(endpoint.status).toBe(201);
    receiver.secret = ((await endpoint.json()) as { secret: string }).secret;
    const uploads = await Promise.all(
      Array.from({ length: UPLOADS }, async (_, i) => {
        const body = randomBytes(2048 + i);
        const up = await postUpload(stack.url, { apiKey: t.apiKey, key: `restore-crash-${randomUUID()}`, body });
        expect(up.status).toBe(201);
        return { id: up.json.uploadId as string, key: up.json.idempotencyKey as string, body };
      }),
    );
    // Windows of a few seconds (the tenant setting counts whole hours): the deletions are started as the API starts them.
    const deletions = new Deletions({
      temporal: stack.temporal,
      taskQueue: stack.config.TASK_QUEUE_UPLOADS,
      webhookRetry: downstreamSettings(stack.config).webhookRetry,
    });
    for (const u of uploads) {
      const row = (await stack.runtime.pool.query('SELECT idempotency_key FROM uploads WHERE id = $1', [u.id])).rows[0];
      await deletions.start(t.tenantId, u.id, row.idempotency_key, 'request', WINDOW_SECONDS);
    }
    await eventually(async () => {
      const open = await stack.runtime.pool.query(
        'SELECT count(*)::int AS n FROM uploads WHERE id = ANY($1) AND restorable_until IS NOT NULL',
        [uploads.map((u) => u.id)],
      );
      return open.rows[0].n === UPLOADS;
    }, 60_000);
    // Each window's end as recorded (its run's timer starts as it is written).
    const ends = new Map(
      (await stack.runtime.pool.query('SELECT id, restorable_until FROM uploads WHERE id = ANY($1)', [uploads.map((u) => u.id)])).rows.map(
        (r) => [r.id as string, (r.restorable_until as Date).getTime()],
      ),
    );
    const firstEnd = Math.min(...ends.values());

    /** A client's restore, sent again after anything but a final answer (200 or 410). */
    const restore = async (id: string): Promise<'restored' | 'erased'> => {
      for (let attempt = 0; attempt < 120; attempt++) {
        const res = await fetch(`${stack.url}/v1/uploads/${id}/restore`, {
          method: 'POST',
          headers: { authorization: `Bearer ${t.apiKey}` },
        }).catch(() => undefined);
        const json = res && ((await res.json().catch(() => undefined)) as { error?: string } | undefined);
        if (res?.status === 200) return 'restored';
        if (res?.status === 410 && json?.error === 'upload_deleted') return 'erased';
        await sleep(500);
      }
      throw new Error(`no final answer to the restore of ${id}`);
    };
    // Restores spread from 2.5 s before each window's end to 17.5 s past it; the worker dies just
    // before the first end and is back a few seconds later, so some arrive while it is away,
    // some after it has closed their windows.
    const raced = uploads.slice(0, -1);
    const answers = raced.map(async (u, i) => {
      await sleep(Math.max(0, ends.get(u.id)! - 2500 + i * 2000 - Date.now()));
      return restore(u.id);
    });
    await sleep(Math.max(0, firstEnd - 300 - Date.now()));
    await harness.kill();
    await sleep(1500);
    await harness.start();
    // The last upload is asked for only once its window has closed behind the restarted worker: refused.
    const late = uploads.at(-1)!;
    await eventually(
      async () =>
        (await stack.runtime.pool.query('SELECT 1 FROM uploads WHERE id = $1 AND restorable_until IS NULL', [late.id])).rowCount === 1,
      60_000,
    );
    const told = [...(await Promise.all(answers)), await restore(late.id)];

    // Every deletion run has ended, and each upload is what its restore was told.
    await eventually(async () => {
      for (const u of uploads) {
        const d = await stack.temporal.workflow.getHandle(workflowIds.deletion(u.id)).describe();
        if (d.status.name === 'RUNNING') return false;
      }
      return true;
    }, 120_000);
    for (const [i, u] of uploads.entries()) {
      const content = await fetch(`${stack.url}/v1/uploads/${u.id}/content`, { headers: { authorization: `Bearer ${t.apiKey}` } });
      const row = (await stack.runtime.pool.query('SELECT deleted_at, erased_at, restorable_until FROM uploads WHERE id = $1', [u.id]))
        .rows[0];
      const events = await eventually(async () => {
        const ids = (type: string) =>
          new Set(
            receiver
              .ofType(type)
              .filter((r) => r.json.data.uploadId === u.id)
              .map((r) => r.id),
          );
        const seen = [...ids('upload.restored')]
          .map(() => 'upload.restored')
          .concat([...ids('upload.deleted')].map(() => 'upload.deleted'));
        return seen.length > 0 ? seen : undefined;
      }, 60_000);
      if (told[i] === 'restored') {
        expect({ id: u.id, status: content.status, deleted: row.deleted_at, erased: row.erased_at }).toEqual({
          id: u.id,
          status: 200,
          deleted: null,
          erased: null,
        });
        expect(sha256(Buffer.from(await content.arrayBuffer()))).toBe(sha256(u.body));
        expect(events).toEqual(['upload.restored']);
      } else {
        expect({ id: u.id, status: content.status, erased: row.erased_at !== null, open: row.restorable_until }).toEqual({
          id: u.id,
          status: 410,
          erased: true,
          open: null,
        });
        await content.arrayBuffer().catch(() => undefined);
        expect(events).toEqual(['upload.deleted']);
      }
    }
    // Both outcomes happened: a restore well before the end was taken, one after its window closed refused.
    expect(told[0]).toBe('restored');
    expect(told.at(-1)).toBe('erased');
    const report = await audit(stack.runtime.pool, stack.runtime.store, { keyRetentionSeconds: 3600 });
    expect(report.violations).toEqual([]);
  }, 300_000);
});
