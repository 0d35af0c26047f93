// After the upload, on the real S3 server (versitygw) and on the embedded store: the list
// (keyset pages exact while uploads are added), the original's bytes (Range, ETag, 304,
// 416, Content-Disposition, browser-active types sandboxed) and download URLs that work
// without the API key until they expire — and refuse any change to what they name.
import { randomBytes, randomUUID } from 'node:crypto';
import { parse as parseDisposition } from 'content-disposition';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postUpload, sha256 } from '../helpers/http';
import { eventually } from '../helpers/inspect';
import { png } from '../helpers/media';
import { startStackOnStore, type TestStack } from '../helpers/stack';

interface Ctx {
  stack: TestStack;
  tenant: { tenantId: string; apiKey: string };
}

const auth = (ctx: Ctx) => ({ authorization: `Bearer ${ctx.tenant.apiKey}` });

async function get(ctx: Ctx, pathname: string, headers: Record<string, string> = {}, method = 'GET') {
  const res = await fetch(new URL(pathname, ctx.stack.url), { method, headers: { ...auth(ctx), ...headers } });
  const body = Buffer.from(await res.arrayBuffer());
  return { status: res.status, headers: res.headers, body, json: () => JSON.parse(body.toString()) };
}

async function upload(ctx: Ctx, body: Buffer, o: { contentType?: string; fileName?: string } = {}) {
  const key = `dl-${randomUUID()}`;
  // As a client does: a 503 (a dependency slow under the whole suite's load), or a 409 saying
  // the key's upload is under way, is retried with the same key after its Retry-After.
  const retryable = (r: { status: number; json: any }) =>
    r.status === 503 || (r.status === 409 && r.json?.error === 'idempotency_in_progress');
  let res = await postUpload(ctx.stack.url, { apiKey: ctx.tenant.apiKey, key, body, ...o });
  for (let retry = 0; retryable(res) && retry < 5; retry++) {
    await new Promise((r) => setTimeout(r, 1000 * Number(res.headers.get('retry-after') ?? 1)));
    res = await postUpload(ctx.stack.url, { apiKey: ctx.tenant.apiKey, key, body, ...o });
  }
  expect(res.status, res.text).toBe(201);
  return res.json as { uploadId: string; sha256: string };
}

async function downloadUrl(ctx: Ctx, id: string, body: Record<string, unknown>) {
  const res = await fetch(`${ctx.stack.url}/v1/uploads/${id}/download-urls`, {
    method: 'POST',
    headers: { ...auth(ctx), 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as any };
}

describe.each(['s3', 'local'] as const)('after the upload, on the %s store', (kind) => {
  const ctx = {} as Ctx;
  beforeAll(async () => {
    ctx.stack = await startStackOnStore(kind, `downloads_${kind}`, { env: { DOWNLOAD_URL_MAX_SECONDS: '3600' } });
    ctx.tenant = await ctx.stack.createTenant('downloads');
  });
  afterAll(() => ctx.stack?.stop());

  it('pages 1,000 uploads exactly (no row skipped or repeated) while 200 more are added', async () => {
    const other = await ctx.stack.createTenant('lister');
    const { pool } = ctx.stack.runtime;
    // Seeded rows (the list reads rows only): batches of 100 share one created_at, so the id breaks ties.
    const seededAt = Date.now();
    for (let batch = 0; batch < 10; batch++) {
      await pool.query(
        `INSERT INTO uploads (id, tenant_id, idempotency_key, workflow_id, storage_key, bytes, sha256, content_type, created_at)
         SELECT gen_random_uuid(), $1, 'seeded-upload-' || $2 || '-' || n, 'seed', 'seed/' || $2 || '/' || n, n, repeat('a', 64),
                CASE WHEN n % 2 = 0 THEN 'image/png' ELSE 'text/plain' END, now() - ($2 || ' seconds')::interval
           FROM generate_series(1, 100) AS n`,
        [other.tenantId, 10 - batch],
      );
    }
    const seeded = new Set(
      (await pool.query<{ id: string }>('SELECT id FROM uploads WHERE tenant_id = $1', [other.tenantId])).rows.map((r) => r.id),
    );
    expect(seeded.size).toBe(1000);

    const lister = { ...ctx, tenant: other };
    // Each page is read while 7 new uploads commit beside it: 200 in all, spread over the pages.
    const added: string[] = [];
    const addSome = async (n: number) => {
      const ids = await Promise.all(Array.from({ length: n }, (_, i) => upload(lister, Buffer.from(`concurrent ${added.length} ${i}`))));
      added.push(...ids.map((u) => u.uploadId));
    };
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const [page] = await Promise.all([
        get(lister, `/v1/uploads?limit=37${cursor ? `&cursor=${cursor}` : ''}`),
        addSome(Math.min(7, 200 - added.length)),
      ]);
      expect(page.status).toBe(200);
      const json = page.json() as { items: { uploadId: string; createdAt: string }[]; nextCursor: string | null };
      expect(json.items.length).toBeLessThanOrEqual(37);
      seen.push(...json.items.map((u) => u.uploadId));
      cursor = json.nextCursor;
      pages++;
    } while (cursor);
    await addSome(200 - added.length);
    expect(added).toHaveLength(200);
    expect(new Set(seen).size, 'no upload repeated').toBe(seen.length);
    expect(
      [...seeded].filter((id) => !seen.includes(id)),
      'no seeded upload skipped',
    ).toEqual([]);
    expect(
      seen.filter((id) => !seeded.has(id) && !added.includes(id)),
      'nothing but the tenant’s uploads',
    ).toEqual([]);
    expect(pages).toBeGreaterThanOrEqual(28);

    // Filters.
    const images = (await get(lister, '/v1/uploads?contentType=image/*&limit=100')).json();
    expect(images.items).toHaveLength(100);
    expect(images.items.every((u: { contentType: string }) => u.contentType === 'image/png')).toBe(true);
    const exact = (await get(lister, '/v1/uploads?contentType=text/plain&limit=100')).json();
    expect(exact.items.every((u: { contentType: string }) => u.contentType === 'text/plain')).toBe(true);
    const byKey = (await get(lister, '/v1/uploads?idempotencyKey=seeded-upload-3-42')).json();
    expect(byKey.items.map((u: { idempotencyKey: string }) => u.idempotencyKey)).toEqual(['seeded-upload-3-42']);
    expect(byKey.nextCursor).toBeNull();
    // A key prefix: seeded-upload-3-4 and -40 … -49; LIKE's wildcards in it are plain characters.
    const byPrefix = (await get(lister, '/v1/uploads?keyPrefix=seeded-upload-3-4&limit=100')).json();
    expect(byPrefix.items.map((u: { idempotencyKey: string }) => u.idempotencyKey).sort()).toEqual(
      ['seeded-upload-3-4', ...Array.from({ length: 10 }, (_, i) => `seeded-upload-3-4${i}`)].sort(),
    );
    expect((await get(lister, '/v1/uploads?keyPrefix=seeded%25')).json().items).toEqual([]);
    expect((await get(lister, '/v1/uploads?keyPrefix=seeded_upload')).json().items).toEqual([]);
    const before = new Date(Date.now() - 5500).toISOString();
    const old = (await get(lister, `/v1/uploads?createdBefore=${before}&limit=100`)).json();
    expect(old.items.length).toBe(100);
    expect(old.items.every((u: { createdAt: string }) => u.createdAt < before)).toBe(true);
    // The seeded rows stay committed (no run processes them), whatever the added uploads' runs have done by now.
    const recent = (
      await get(lister, `/v1/uploads?createdAfter=${new Date(seededAt - 60_000).toISOString()}&status=committed&limit=5`)
    ).json();
    expect(recent.items.length).toBe(5);
    expect(
      recent.items.every(
        (u: { status: string; createdAt: string }) => u.status === 'committed' && Date.parse(u.createdAt) > seededAt - 60_000,
      ),
    ).toBe(true);
    // Another tenant's list holds none of these.
    const mine = (await get(ctx, '/v1/uploads?limit=100')).json();
    expect(mine.items.filter((u: { uploadId: string }) => seeded.has(u.uploadId))).toEqual([]);
  }, 180_000);

  it('refuses a bad query with a problem naming it', async () => {
    for (const [query, detail] of [
      ['limit=0', /limit/],
      ['limit=101', /limit/],
      ['limit=ten', /limit/],
      ['status=gone', /status/],
      ['contentType=image', /contentType/],
      ['createdAfter=yesterday', /createdAfter/],
      ['cursor=bm90LWEtY3Vyc29y', /cursor/],
      ['colour=blue', /Unknown query parameter: colour/],
    ] as const) {
      const res = await get(ctx, `/v1/uploads?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/application\/problem\+json/);
      expect(res.json()).toMatchObject({ error: 'query_invalid', detail: expect.stringMatching(detail) });
    }
    expect((await fetch(`${ctx.stack.url}/v1/uploads`)).status).toBe(401);
  });

  it('serves the original: ETag, 304, Range (206, suffix, 416), HEAD, Content-Disposition with a UTF-8 name', async () => {
    const file = randomBytes(100_000);
    const name = 'Résumé "final" 日本.bin';
    const { uploadId } = await upload(ctx, file, { fileName: encodeURIComponent(name) });
    const whole = await get(ctx, `/v1/uploads/${uploadId}/content`);
    expect(whole.status).toBe(200);
    expect(whole.body.equals(file)).toBe(true);
    const etag = `"${sha256(file)}"`;
    expect(whole.headers.get('etag')).toBe(etag);
    expect(whole.headers.get('content-length')).toBe(String(file.length));
    expect(whole.headers.get('accept-ranges')).toBe('bytes');
    expect(whole.headers.get('x-content-type-options')).toBe('nosniff');
    expect(whole.headers.get('content-security-policy')).toBeNull();
    const disposition = parseDisposition(whole.headers.get('content-disposition')!);
    expect(disposition).toMatchObject({ type: 'attachment', parameters: { filename: name } });
    expect(whole.headers.get('content-disposition')).toMatch(
      /^attachment; filename="Resume _final_ __\.bin"; filename\*=UTF-8''R%C3%A9sum%C3%A9%20%22final%22%20/,
    );

    expect((await get(ctx, `/v1/uploads/${uploadId}/content`, { 'if-none-match': etag })).status).toBe(304);
    expect((await get(ctx, `/v1/uploads/${uploadId}/content`, { 'if-none-match': `"other", W/${etag}` })).status).toBe(304);
    expect((await get(ctx, `/v1/uploads/${uploadId}/content`, { 'if-none-match': '"other"' })).status).toBe(200);

    const part = await get(ctx, `/v1/uploads/${uploadId}/content`, { range: 'bytes=1000-1999' });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe(`bytes 1000-1999/${file.length}`);
    expect(part.headers.get('content-length')).toBe('1000');
    expect(part.body.equals(file.subarray(1000, 2000))).toBe(true);
    const suffix = await get(ctx, `/v1/uploads/${uploadId}/content`, { range: 'bytes=-10' });
    expect(suffix.status).toBe(206);
    expect(suffix.body.equals(file.subarray(-10))).toBe(true);
    const open = await get(ctx, `/v1/uploads/${uploadId}/content`, { range: 'bytes=99990-' });
    expect(open.body.equals(file.subarray(99_990))).toBe(true);
    const past = await get(ctx, `/v1/uploads/${uploadId}/content`, { range: `bytes=${file.length}-` });
    expect(past.status).toBe(416);
    expect(past.headers.get('content-range')).toBe(`bytes */${file.length}`);
    expect(past.json()).toMatchObject({ error: 'range_not_satisfiable' });
    // Several ranges, or an If-Range that no longer matches: the whole file.
    expect((await get(ctx, `/v1/uploads/${uploadId}/content`, { range: 'bytes=0-1,5-6' })).status).toBe(200);
    const stale = await get(ctx, `/v1/uploads/${uploadId}/content`, { range: 'bytes=0-9', 'if-range': '"stale"' });
    expect(stale.status).toBe(200);
    expect(stale.body.length).toBe(file.length);
    const fresh = await get(ctx, `/v1/uploads/${uploadId}/content`, { range: 'bytes=0-9', 'if-range': etag });
    expect(fresh.status).toBe(206);

    const head = await get(ctx, `/v1/uploads/${uploadId}/content`, {}, 'HEAD');
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(String(file.length));
    expect(head.body.length).toBe(0);

    const inline = await get(ctx, `/v1/uploads/${uploadId}/content?disposition=inline`);
    expect(inline.headers.get('content-disposition')).toMatch(/^inline; /);
    expect((await get(ctx, `/v1/uploads/${uploadId}/content?disposition=open`)).json()).toMatchObject({ error: 'query_invalid' });
  });

  it('serves markup as an attachment in a CSP sandbox, and knows nothing of other tenants', async () => {
    const { uploadId } = await upload(ctx, Buffer.from('<script>alert(document.cookie)</script>'), {
      contentType: 'text/html',
      fileName: 'page.html',
    });
    const res = await get(ctx, `/v1/uploads/${uploadId}/content?disposition=inline`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.headers.get('content-disposition')).toBe('attachment; filename=page.html');
    expect(res.headers.get('content-security-policy')).toBe('sandbox');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');

    const stranger = { ...ctx, tenant: await ctx.stack.createTenant('stranger') };
    for (const p of [`/v1/uploads/${uploadId}/content`, `/v1/uploads/not-a-uuid/content`, `/v1/uploads/${randomUUID()}/content`]) {
      const r = await get(stranger, p);
      expect(r.status, p).toBe(404);
      expect(r.json()).toMatchObject({ error: 'not_found' });
    }
    expect((await downloadUrl(stranger, uploadId, {})).status).toBe(404);
  });

  it('serves a rendition like the original (ETag, Range, disposition)', async () => {
    const image = await png(400, 300);
    const { uploadId } = await upload(ctx, image, { contentType: 'image/png', fileName: 'photo.png' });
    const detail = await eventually(async () => {
      const d = (await get(ctx, `/v1/uploads/${uploadId}?wait=20`)).json();
      return d.renditions?.length ? d : undefined;
    }, 60_000);
    const { name, bytes } = detail.renditions[0] as { name: string; bytes: number };
    const res = await get(ctx, `/v1/uploads/${uploadId}/renditions/${name}`, { range: 'bytes=0-3' });
    expect(res.status).toBe(206);
    expect(res.headers.get('content-range')).toBe(`bytes 0-3/${bytes}`);
    expect(res.headers.get('etag')).toBe(`"${sha256(image)}.${name}"`);
    expect(res.headers.get('content-disposition')).toMatch(new RegExp(`^attachment; filename=photo\\.${name}\\.webp$`));
    expect((await get(ctx, `/v1/uploads/${uploadId}/renditions/nosuch`)).status).toBe(404);

    const link = await downloadUrl(ctx, uploadId, { rendition: name, disposition: 'inline' });
    expect(link.status).toBe(201);
    const viaLink = await fetch(link.json.url);
    expect(viaLink.status).toBe(200);
    expect(Buffer.from(await viaLink.arrayBuffer()).length).toBe(bytes);
    expect(viaLink.headers.get('content-disposition')).toMatch(/^inline; filename=photo\./);
    expect((await downloadUrl(ctx, uploadId, { rendition: 'nosuch' })).status).toBe(404);
  }, 90_000);

  it('download URLs work without the API key, with Range, until they expire; a changed URL is refused', async () => {
    const file = randomBytes(50_000);
    const { uploadId } = await upload(ctx, file, { fileName: 'report.bin' });
    const link = await downloadUrl(ctx, uploadId, { expiresInSeconds: 600, disposition: 'inline' });
    expect(link.status).toBe(201);
    expect(link.json).toMatchObject({ url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\//), disposition: 'inline' });
    expect(Date.parse(link.json.expiresAt) - Date.now()).toBeGreaterThan(590_000);
    if (kind === 'local') expect(link.json.url).toContain(`/v1/downloads/${uploadId}?`);
    else expect(link.json.url).not.toContain('/v1/');

    const res = await fetch(link.json.url);
    expect(res.status).toBe(200);
    expect(Buffer.from(await res.arrayBuffer()).equals(file)).toBe(true);
    expect(res.headers.get('content-disposition')).toBe('inline; filename=report.bin');
    const part = await fetch(link.json.url, { headers: { range: 'bytes=10-19' } });
    expect(part.status).toBe(206);
    expect(Buffer.from(await part.arrayBuffer()).equals(file.subarray(10, 20))).toBe(true);

    const url = new URL(link.json.url);
    const tampered = (change: (u: URL) => void) => {
      const u = new URL(url);
      change(u);
      return u;
    };
    const dispositionParam = kind === 'local' ? 'disposition' : 'response-content-disposition';
    const changes = [
      tampered((u) => u.searchParams.set(kind === 'local' ? 'signature' : 'X-Amz-Signature', 'A'.repeat(43))),
      tampered((u) => u.searchParams.set(dispositionParam, kind === 'local' ? 'attachment' : 'attachment; filename="evil.html"')),
      tampered((u) =>
        u.searchParams.set(
          kind === 'local' ? 'expires' : 'X-Amz-Expires',
          String(Number(url.searchParams.get(kind === 'local' ? 'expires' : 'X-Amz-Expires')) + 60),
        ),
      ),
    ];
    if (kind === 'local') changes.push(tampered((u) => (u.pathname = `/v1/downloads/${randomUUID()}`)));
    for (const u of changes) {
      const r = await fetch(u);
      expect(r.status, u.toString()).toBe(403);
      await r.arrayBuffer();
    }

    const short = await downloadUrl(ctx, uploadId, { expiresInSeconds: 1 });
    expect(short.status).toBe(201);
    await eventually(async () => {
      const r = await fetch(short.json.url);
      await r.arrayBuffer();
      return r.status === 403;
    }, 20_000);

    for (const body of [{ expiresInSeconds: 3601 }, { expiresInSeconds: 0 }, { disposition: 'open' }, { colour: 'blue' }]) {
      const r = await downloadUrl(ctx, uploadId, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.json).toMatchObject({ error: 'body_invalid' });
    }
  }, 60_000);

  it.each([
    ['image/svg+xml', 'logo.svg', '<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>'],
    ['application/xhtml+xml', 'page.xhtml', '<html xmlns="http://www.w3.org/1999/xhtml"><script>alert(1)</script></html>'],
    ['text/html', 'page.html', '<html><script>alert(1)</script></html>'],
    ['application/xml', 'feed.xml', '<?xml version="1.0"?><a/>'],
  ])('a download URL for %s is an attachment whatever was asked, sandboxed or labelled neutral', async (contentType, fileName, text) => {
    const { uploadId } = await upload(ctx, Buffer.from(text), { contentType, fileName });
    const link = await downloadUrl(ctx, uploadId, { disposition: 'inline' });
    expect(link.json.disposition).toBe('attachment');
    const res = await fetch(link.json.url);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename=${fileName}`);
    // The API can sandbox what it serves; a presigned URL is served by the store, which cannot.
    if (kind === 'local') {
      expect(res.headers.get('content-security-policy')).toBe('sandbox');
      expect(res.headers.get('content-type')).toBe(contentType);
    } else expect(res.headers.get('content-type')).toBe('application/octet-stream');
    expect(Buffer.from(await res.arrayBuffer()).toString()).toBe(text);
  });
});
