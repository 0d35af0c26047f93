// Import batches whose files are another S3-compatible store's objects (a second versitygw
// with its own credentials), on both stores: every object under the prefix imported once with
// its bytes and name, the credentials never shown nor in a run's history in clear, and a
// source that cannot be imported refused with nothing stored.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { serverPort } from '../support/ports';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { audit } from '../../src/audit';
import { uploadWorkflowId } from '../../src/temporal/ids';
import { jsonCaller, sha256 } from '../helpers/http';
import { bytesIn, eventually, readObject } from '../helpers/inspect';
import { startStackOnStore, type TestStack } from '../helpers/stack';
import { startVersity, type Versity } from '../support/versitygw';

const SECRET = `source-secret-${randomUUID()}`;
const KEY_ID = 'source-reader';
/** The objects under the batch's prefix (a name with a space and a nested one among them), and others beside it. */
const objects = new Map<string, Buffer>([
  ['2026/cover.png', randomBytes(70 * 1024)],
  ['2026/notes/plan b.pdf', randomBytes(3 * 1024)],
  ['2026/empty.txt', Buffer.alloc(0)],
  ...Array.from({ length: 9 }, (_, i) => [`2026/photos/p${i}.jpg`, randomBytes(10_000 + i)] as [string, Buffer]),
]);
const beside = ['2025/old.png', '2026-drafts/x.bin'];

let dir: string;
let source: Versity;

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'oncely-s3-source-'));
  source = await startVersity({ port: await serverPort(), dir, accessKeyId: KEY_ID, secretAccessKey: SECRET });
  const s3 = new S3Client({
    endpoint: source.endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: KEY_ID, secretAccessKey: SECRET },
  });
  await s3.send(new CreateBucketCommand({ Bucket: 'archive' }));
  for (const [key, body] of objects) await s3.send(new PutObjectCommand({ Bucket: 'archive', Key: key, Body: body }));
  for (const key of beside) await s3.send(new PutObjectCommand({ Bucket: 'archive', Key: key, Body: randomBytes(100) }));
  await s3.send(new PutObjectCommand({ Bucket: 'archive', Key: '2026/folder/', Body: Buffer.alloc(0) }));
  s3.destroy();
}, 60_000);
afterAll(async () => {
  await source?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe.each(['local', 's3'] as const)('an S3 source on the %s store', (kind) => {
  let stack: TestStack;
  let tenant: { tenantId: string; apiKey: string };

  beforeAll(async () => {
    stack = await startStackOnStore(kind, `import_s3_source_${kind}`);
    tenant = await stack.createTenant();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  const call = jsonCaller(() => ({ base: stack.url, apiKey: tenant.apiKey }));
  const s3Source = (over: Record<string, unknown> = {}) => ({
    endpoint: source.endpoint,
    bucket: 'archive',
    prefix: '2026/',
    accessKeyId: KEY_ID,
    secretAccessKey: SECRET,
    ...over,
  });
  const batchRows = async () => Number((await stack.runtime.pool.query('SELECT count(*) AS n FROM import_batches')).rows[0].n);

  it("imports every object under the prefix once, with its bytes and name; the credentials are never shown nor in a run's history", async () => {
    const key = `s3-batch-${randomUUID()}`;
    const started = await call('POST', '/v1/import-batches', { s3: s3Source(), concurrency: 4 }, key);
    expect(started.status).toBe(202);
    expect(started.json).toMatchObject({
      state: 'running',
      total: objects.size,
      source: { endpoint: source.endpoint, region: 'us-east-1', bucket: 'archive', prefix: '2026/' },
    });
    expect(started.text).not.toContain(SECRET);
    const again = await call('POST', '/v1/import-batches', { s3: s3Source(), concurrency: 4 }, key);
    expect(again.json.id).toBe(started.json.id);

    const done = await eventually(async () => {
      const b = await call('GET', `/v1/import-batches/${started.json.id}`);
      return b.json.state === 'completed' ? b.json : undefined;
    }, 120_000);
    expect(done).toMatchObject({ total: objects.size, done: objects.size, failed: 0, skipped: 0 });
    expect(done.source).toEqual(started.json.source);

    const items = (await call('GET', `/v1/import-batches/${started.json.id}/items?limit=100`)).json.items;
    // Items in key order, each URL path-style with its key's segments encoded.
    const keys = [...objects.keys()].sort();
    expect(items.map((i: { url: string }) => i.url)).toEqual(
      keys.map((k) => `${source.endpoint}/archive/${k.split('/').map(encodeURIComponent).join('/')}`),
    );
    const uploads = await stack.runtime.pool.query(
      `SELECT u.storage_key, u.file_name, u.sha256, u.bytes, i.n FROM import_batch_items i JOIN uploads u ON u.id = i.upload_id
        WHERE i.batch_id = $1 ORDER BY i.n`,
      [started.json.id],
    );
    expect(uploads.rows.map((r) => [r.file_name, Number(r.bytes), r.sha256])).toEqual(
      keys.map((k) => [k.split('/').at(-1), objects.get(k)!.length, sha256(objects.get(k)!)]),
    );
    const cover = uploads.rows.find((r) => r.file_name === 'cover.png')!;
    expect((await readObject(stack.runtime.store, cover.storage_key)).equals(objects.get('2026/cover.png')!)).toBe(true);

    // Sealed everywhere it is kept: the batch's row, and each item's run.
    const row = await stack.runtime.pool.query('SELECT source::text AS s FROM import_batches WHERE id = $1', [started.json.id]);
    expect(row.rows[0].s).not.toContain(SECRET);
    const history = await stack.history(uploadWorkflowId(tenant.tenantId, `import-batch/${started.json.id}/1`));
    const payloads = bytesIn(history);
    expect(payloads.some((b) => b.includes(`${source.endpoint}/archive/2026/cover.png`))).toBe(true);
    expect(payloads.some((b) => b.includes(SECRET) || b.includes(KEY_ID))).toBe(false);
    expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toEqual([]);
  });

  it('refuses a source it cannot import with a problem, and stores nothing', async () => {
    const before = await batchRows();
    const cases: [unknown, number, string][] = [
      [{ s3: s3Source({ secretAccessKey: 'wrong' }) }, 422, 'import_source_invalid'],
      [{ s3: s3Source({ bucket: 'no-such-bucket' }) }, 422, 'import_source_invalid'],
      [{ s3: s3Source({ prefix: '2024/' }) }, 422, 'import_source_invalid'],
      [{ s3: s3Source({ endpoint: 'http://no-such-host.invalid' }) }, 400, 'import_url_invalid'],
      [{ s3: s3Source({ endpoint: 'http://169.254.169.254' }) }, 400, 'import_url_invalid'],
      [{ s3: s3Source({ endpoint: `${source.endpoint}/archive` }) }, 400, 'body_invalid'],
      [{ s3: s3Source({ bucket: 'A_B' }) }, 400, 'body_invalid'],
      [{ s3: s3Source({ colour: 'red' }) }, 400, 'body_invalid'],
      [{ s3: s3Source(), items: [{ url: `${source.endpoint}/archive/2026/cover.png` }] }, 400, 'body_invalid'],
      [{ concurrency: 2 }, 400, 'body_invalid'],
    ];
    for (const [body, status, error] of cases) {
      const res = await call('POST', '/v1/import-batches', body, `bad-${randomUUID()}`);
      expect({ body, status: res.status, error: res.json?.error }).toEqual({ body, status, error });
      expect(res.text).not.toContain(SECRET);
    }
    expect(await batchRows()).toBe(before);
  });
});
