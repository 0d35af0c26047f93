// Import batches on the embedded store: every item imported once under (batch, item), the
// counts and the items' outcomes, the same batch for the same key, items past the tenant's
// imports in flight waiting their turn, a pipeline's validation hook refusing an item (and one
// it could not answer retried), pause, resume and cancel (items under way cancelled:
// import-batch-cancel.test.ts), the open-batch quota, and bad requests refused with nothing
// stored.
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { audit } from '../../src/audit';
import { jsonCaller, sha256 } from '../helpers/http';
import { eventually } from '../helpers/inspect';
import { startStackOnStore, type TestStack } from '../helpers/stack';
import { startFileOrigin, type FileOrigin } from '../support/file-origin';
import { WebhookReceiver } from '../support/webhook-receiver';
import { importWorkflowIds } from '../../src/imports/contract';

const file = randomBytes(64 * 1024);
let stack: TestStack;
let tenant: { tenantId: string; apiKey: string };
let origin: FileOrigin;

beforeAll(async () => {
  stack = await startStackOnStore('local', 'import_batches', {
    env: { TENANT_MAX_OPEN_IMPORT_BATCHES: '2', TENANT_MAX_IMPORTS_IN_FLIGHT: '3' },
  });
  tenant = await stack.createTenant();
  origin = await startFileOrigin(file);
});
afterAll(async () => {
  await origin?.close();
  await stack?.stop();
});

const call = jsonCaller(() => ({ base: stack.url, apiKey: tenant.apiKey }));
const batchRows = async () => Number((await stack.runtime.pool.query('SELECT count(*) AS n FROM import_batches')).rows[0].n);
const ended = (id: string) =>
  eventually(async () => {
    const b = await call('GET', `/v1/import-batches/${id}`);
    return b.json.state === 'completed' || b.json.state === 'cancelled' ? b.json : undefined;
  }, 120_000);

it('imports every item once under (batch, item), counts them, lists their outcomes, and answers the same batch for the same key', async () => {
  const items = Array.from({ length: 40 }, (_, i) => ({ url: `${origin.base}/files/f${i + 1}.bin` }));
  items[9] = { url: `${origin.base}/missing` };
  items[19] = { url: `${origin.base}/files/f20.bin`, sha256: 'a'.repeat(64) } as (typeof items)[number];
  const key = `batch-${randomUUID()}`;
  const requestsBefore = origin.requests;
  const started = await call('POST', '/v1/import-batches', { items, concurrency: 8 }, key);
  expect(started.status).toBe(202);
  expect(started.json).toMatchObject({ state: 'running', total: 40, concurrency: 8 });
  expect(started.headers.get('location')).toBe(`/v1/import-batches/${started.json.id}`);
  const again = await call('POST', '/v1/import-batches', { items, concurrency: 8 }, key);
  expect(again.json.id).toBe(started.json.id);
  expect(again.headers.get('idempotent-replayed')).toBe('true');

  const done = await ended(started.json.id);
  expect(done).toMatchObject({ state: 'completed', total: 40, done: 38, failed: 2, skipped: 0, pending: 0 });
  expect(origin.requests - requestsBefore).toBe(40);
  // Eight at once against three imports in flight: items were turned away (429) and asked
  // again until their turn came; none failed for it.
  const history = await stack.temporal.workflow.getHandle(importWorkflowIds.importBatch(started.json.id)).fetchHistory();
  const attempts = history.events!.flatMap((e) =>
    e.activityTaskStartedEventAttributes ? [e.activityTaskStartedEventAttributes.attempt!] : [],
  );
  expect(Math.max(...attempts)).toBeGreaterThan(1);

  const failed = await call('GET', `/v1/import-batches/${started.json.id}/items?state=failed`);
  expect(failed.json.items.map((i: { n: number; error: { error: string } }) => [i.n, i.error.error])).toEqual([
    [10, 'import_failed'],
    [20, 'checksum_mismatch'],
  ]);
  // Walk the items two at a time: every done item names its upload, each upload once.
  const uploads = new Set<string>();
  let cursor: string | null = null;
  let pages = 0;
  do {
    const page = await call('GET', `/v1/import-batches/${started.json.id}/items?limit=25${cursor ? `&cursor=${cursor}` : ''}`);
    for (const i of page.json.items) if (i.state === 'done') uploads.add(i.uploadId);
    cursor = page.json.nextCursor;
    pages++;
  } while (cursor);
  expect(pages).toBe(2);
  expect(uploads.size).toBe(38);
  const rows = await stack.runtime.pool.query(`SELECT idempotency_key, sha256 FROM uploads WHERE id = ANY($1)`, [[...uploads]]);
  expect(rows.rows.every((r) => r.sha256 === sha256(file) && r.idempotency_key.startsWith(`import-batch/${started.json.id}/`))).toBe(true);
  expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toEqual([]);
  // The tenant's batches, listed in creation order a page at a time: this one among them, as GET shows it.
  const listed: { id: string }[] = [];
  let next: string | null = null;
  do {
    const page = await call('GET', `/v1/import-batches?limit=1${next ? `&cursor=${next}` : ''}`);
    expect(page.status).toBe(200);
    listed.push(...page.json.items);
    next = page.json.nextCursor;
  } while (next);
  expect(listed.find((b) => b.id === started.json.id)).toEqual((await call('GET', `/v1/import-batches/${started.json.id}`)).json);
  expect((await call('GET', '/v1/import-batches?limit=0')).json).toMatchObject({ error: 'query_invalid' });
});

it("carries the batch's metadata and tags to every item's upload, under each item's own (its keys win, its tags added)", async () => {
  const items = [
    { url: `${origin.base}/files/a.bin` },
    { url: `${origin.base}/files/b.bin`, metadata: { album: 'b-side', track: 2 }, tags: ['extra', 'holiday'] },
  ];
  const started = await call(
    'POST',
    '/v1/import-batches',
    { items, metadata: { album: 'holiday', source: 'archive' }, tags: ['holiday', '2026'] },
    `batch-${randomUUID()}`,
  );
  expect(started.status).toBe(202);
  expect(started.json).toMatchObject({ metadata: { album: 'holiday', source: 'archive' }, tags: ['2026', 'holiday'] });
  expect(await ended(started.json.id)).toMatchObject({ state: 'completed', done: 2 });
  const listed = (await call('GET', `/v1/import-batches/${started.json.id}/items`)).json.items;
  expect(listed.map((i: { metadata: unknown; tags: unknown }) => [i.metadata, i.tags])).toEqual([
    [null, []],
    [{ album: 'b-side', track: 2 }, ['extra', 'holiday']],
  ]);
  const uploads = await Promise.all(listed.map((i: { uploadId: string }) => call('GET', `/v1/uploads/${i.uploadId}`)));
  expect(uploads.map((u) => [u.json.metadata, u.json.tags])).toEqual([
    [{ album: 'holiday', source: 'archive' }, ['2026', 'holiday']],
    [{ album: 'b-side', source: 'archive', track: 2 }, ['2026', 'extra', 'holiday']],
  ]);
  // The list's filters find them by the labels they were given.
  const tagged = await call('GET', `/v1/uploads?tag=extra`);
  expect(tagged.json.items.map((u: { uploadId: string }) => u.uploadId)).toEqual([listed[1].uploadId]);
});

it("runs each item past its pipeline's validation hook: a refusal fails the item, a hook that could not answer is asked again", async () => {
  const hook = await new WebhookReceiver().start();
  try {
    const declared = await call(
      'POST',
      '/v1/pipelines',
      { name: 'vetted', validate: { url: hook.url, timeoutSeconds: 3 }, steps: [] },
      `p-${randomUUID()}`,
    );
    expect(declared.status).toBe(201);
    hook.secret = declared.json.signingSecret;
    // One at a time: item 1 is refused, item 2's first call fails (503) and its retry passes, item 3 passes.
    hook.script['upload.validate'] = [403, 503];
    hook.answerBody['upload.validate'] = { message: 'not from this archive' };
    const items = [1, 2, 3].map((i) => ({ url: `${origin.base}/vetted/${i}.bin` }));
    const started = await call('POST', '/v1/import-batches', { items, pipeline: 'vetted', concurrency: 1 }, `batch-${randomUUID()}`);
    expect(started.status).toBe(202);
    expect(await ended(started.json.id)).toMatchObject({ state: 'completed', done: 2, failed: 1, pipeline: 'vetted' });
    const failed = (await call('GET', `/v1/import-batches/${started.json.id}/items?state=failed`)).json.items;
    expect(failed).toMatchObject([{ n: 1, uploadId: null, error: { error: 'upload_forbidden', hookStatus: 403 } }]);
    expect(failed[0].error.detail).toContain('not from this archive');
    expect(hook.received.map((r) => [r.json.data.idempotencyKey, r.answered, r.verified])).toEqual([
      [`import-batch/${started.json.id}/1`, 403, true],
      [`import-batch/${started.json.id}/2`, 503, true],
      [`import-batch/${started.json.id}/2`, 200, true],
      [`import-batch/${started.json.id}/3`, 200, true],
    ]);
    expect(hook.received[0]!.json.data).toMatchObject({ mode: 'import', pipeline: 'vetted', fileName: '1.bin' });
    // The refused item left nothing under its key.
    const keyRows = await stack.runtime.pool.query('SELECT 1 FROM idempotency_keys WHERE tenant_id = $1 AND key = $2', [
      tenant.tenantId,
      `import-batch/${started.json.id}/1`,
    ]);
    expect(keyRows.rowCount).toBe(0);
  } finally {
    await hook.stop();
  }
});

it('pauses (items under way finish, none starts), resumes, and cancels (items not started are skipped); open batches are counted', async () => {
  // Each 64 KiB file takes 4 s at this rate: the items under way are still reading when the pause lands.
  origin.throttle(16 * 1024);
  try {
    const items = Array.from({ length: 30 }, (_, i) => ({ url: `${origin.base}/slow/a${i}.bin` }));
    const a = await call('POST', '/v1/import-batches', { items, concurrency: 2 }, `batch-${randomUUID()}`);
    const bItems = Array.from({ length: 3 }, (_, i) => ({ url: `${origin.base}/slow/b${i}.bin` }));
    const b = await call('POST', '/v1/import-batches', { items: bItems, concurrency: 1 }, `batch-${randomUUID()}`);
    expect([a.status, b.status]).toEqual([202, 202]);
    const third = await call('POST', '/v1/import-batches', { items: items.slice(0, 1) }, `batch-${randomUUID()}`);
    expect(third.status).toBe(429);
    expect(third.json).toMatchObject({ error: 'too_many_import_batches', limit: 2 });

    // Paused once an item of the batch is under way (its read has begun), however slowly the machine starts it.
    await eventually(async () => origin.paths.some((p) => p.startsWith('/slow/a')), 60_000);
    const paused = await call('POST', `/v1/import-batches/${a.json.id}/pause`);
    expect(paused.status).toBe(200);
    expect(paused.json.state).toBe('paused');
    origin.throttle(undefined);
    // The two under way finish; then nothing more moves while paused.
    const settled = await eventually(async () => {
      const r = await call('GET', `/v1/import-batches/${a.json.id}`);
      return r.json.done + r.json.failed >= 1 ? r.json : undefined;
    }, 60_000);
    await new Promise((r) => setTimeout(r, 1500));
    const still = (await call('GET', `/v1/import-batches/${a.json.id}`)).json;
    expect(still.done).toBeLessThanOrEqual(2);
    expect(still.done).toBe((await call('GET', `/v1/import-batches/${a.json.id}`)).json.done);
    expect(settled.state).toBe('paused');

    // Slow again, so items are still left when the cancel lands.
    origin.throttle(16 * 1024);
    expect((await call('POST', `/v1/import-batches/${a.json.id}/resume`)).json.state).toBe('running');
    await eventually(async () => (await call('GET', `/v1/import-batches/${a.json.id}`)).json.done > still.done, 60_000);
    const cancelling = await call('POST', `/v1/import-batches/${a.json.id}/cancel`);
    expect(cancelling.status).toBe(202);
    origin.throttle(undefined);
    const cancelled = await ended(a.json.id);
    expect(cancelled.state).toBe('cancelled');
    expect(cancelled.skipped).toBeGreaterThan(0);
    expect(cancelled.done + cancelled.failed + cancelled.skipped).toBe(30);
    expect((await call('POST', `/v1/import-batches/${a.json.id}/resume`)).json).toMatchObject({ error: 'import_batch_closed' });
    await ended(b.json.id);
  } finally {
    origin.throttle(undefined);
  }
}, 180_000);

it('refuses bad batches with a problem and stores nothing', async () => {
  const before = await batchRows();
  const url = `${origin.base}/x.bin`;
  const cases: [unknown, number, string][] = [
    [{ items: [] }, 400, 'body_invalid'],
    [{ items: Array.from({ length: 10_001 }, () => ({ url })) }, 400, 'body_invalid'],
    [{ items: [{ url: 'ftp://example.com/a' }] }, 400, 'body_invalid'],
    [{ items: [{ url, colour: 'red' }] }, 400, 'body_invalid'],
    [{ items: [{ url }], concurrency: 99 }, 400, 'body_invalid'],
    [{ items: [{ url }], pipeline: 'no-such-pipeline' }, 422, 'pipeline_unknown'],
    // Every host is checked before anything is stored: one that does not resolve, a metadata address.
    [{ items: [{ url }, { url: 'http://no-such-host.invalid/a.bin' }] }, 400, 'import_url_invalid'],
    [{ items: [{ url: 'http://169.254.169.254/latest/meta-data/' }] }, 400, 'import_url_invalid'],
    [{ items: [{ url: 'http://[::a9fe:a9fe]/latest/meta-data/' }] }, 400, 'import_url_invalid'],
    // An item's URL passes the door's own checks: no credentials (never stored, never echoed).
    [{ items: [{ url }, { url: url.replace('http://', 'http://alice:hunter2-secret@') }] }, 400, 'import_url_invalid'],
    // Labels: an item's or the batch's malformed, or an item's past an upload's limits once the batch's are added.
    [{ items: [{ url, metadata: ['a'] }] }, 400, 'body_invalid'],
    [{ items: [{ url, tags: ['-no'] }] }, 400, 'body_invalid'],
    [{ items: [{ url }], metadata: 'album' }, 400, 'body_invalid'],
    [{ items: [{ url }], s3: undefined, tags: Array.from({ length: 33 }, (_, i) => `t${i}`) }, 400, 'body_invalid'],
    [{ items: [{ url }, { url, metadata: { b: 'y'.repeat(9000) } }], metadata: { a: 'x'.repeat(9000) } }, 400, 'body_invalid'],
    [
      {
        items: [{ url }, { url, tags: Array.from({ length: 20 }, (_, i) => `i${i}`) }],
        tags: Array.from({ length: 20 }, (_, i) => `b${i}`),
      },
      400,
      'body_invalid',
    ],
    ['not json', 400, 'body_invalid'],
  ];
  for (const [body, status, error] of cases) {
    const res = await call('POST', '/v1/import-batches', body, `bad-${randomUUID()}`);
    expect({ status: res.status, error: res.json?.error }).toEqual({ status, error });
    expect(JSON.stringify(res.json)).not.toContain('hunter2');
  }
  expect(await batchRows()).toBe(before);
  expect((await call('GET', `/v1/import-batches/${randomUUID()}`)).status).toBe(404);
  expect((await call('GET', `/v1/import-batches/${randomUUID()}/items?state=lost`)).status).toBe(404);
});
