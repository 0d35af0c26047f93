// Import batches whose files are another S3-compatible store's objects (a second versitygw
// with its own credentials), on both stores: every object under the prefix imported once with
// its bytes and name, the credentials never shown nor in a run's history in clear, and a
// source that cannot be imported refused with nothing stored.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
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

/** An S3 listing that always says "more" (`mode` circle: naming a page it already gave), counting what it is asked. */
function lyingListing(mode: 'endless' | 'circle') {
  let asked = 0;
  const server = createServer((req, res) => {
    asked++;
    req.resume();
    const token = mode === 'circle' ? `page-${asked % 3}` : `page-${asked}`;
    res.writeHead(200, { 'content-type': 'application/xml' });
    res.end(
      '<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">' +
        `<Name>archive</Name><Prefix>2026/</Prefix><KeyCount>0</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>true</IsTruncated>` +
        `<NextContinuationToken>${token}</NextContinuationToken></ListBucketResult>`,
    );
  });
  return {
    asked: () => asked,
    start: () =>
      new Promise<string>((resolve) =>
        server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)),
      ),
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

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
    // The batch's run lists the source; the request checked its first page.
    expect(started.json).toMatchObject({
      state: 'listing',
      total: 0,
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

  it.each(['endless', 'circle'] as const)(
    'lists a source that always says "more" (%s) in the batch\'s run, within its bounds, and fails the batch saying why',
    async (mode) => {
      const liar = lyingListing(mode);
      const endpoint = await liar.start();
      try {
        const started = Date.now();
        const res = await call('POST', '/v1/import-batches', { s3: s3Source({ endpoint }) }, `liar-${randomUUID()}`);
        // The request looked at one page; the listing is the run's.
        expect({ status: res.status, state: res.json.state }).toEqual({ status: 202, state: 'listing' });
        expect(Date.now() - started).toBeLessThan(10_000);
        const failed = await eventually(async () => {
          const b = await call('GET', `/v1/import-batches/${res.json.id}`);
          return b.json.state === 'failed' ? b.json : undefined;
        }, 60_000);
        expect(failed).toMatchObject({ total: 0, error: { error: 'import_source_invalid' } });
        expect(failed.error.detail).toMatch(mode === 'endless' ? /within 1000 pages/ : /went round in a circle/);
        expect(failed.finishedAt).not.toBeNull();
        // Bounded, and over: the probe's page and at most the bound's, then nothing more.
        const asked = liar.asked();
        expect(asked).toBeLessThanOrEqual(1 + 1000);
        await new Promise((r) => setTimeout(r, 1500));
        expect(liar.asked()).toBe(asked);
        expect((await call('POST', `/v1/import-batches/${res.json.id}/cancel`, {})).json).toMatchObject({ error: 'import_batch_closed' });
      } finally {
        await liar.stop();
      }
    },
    90_000,
  );
});
