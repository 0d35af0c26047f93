// Images on request, on the real S3 server (versitygw) and on the embedded store: presets
// declared as immutable versions; a variant rendered once (one run, one row, one object)
// however many first requests race for it, then streamed with its ETag; equal specs in any
// spelling are one variant; f_auto follows Accept; option strings refused unless the tenant
// allows them; signed URLs serve any spec without the API key and refuse any change; every
// bad spec or upload refused with nothing stored; a deletion erases the variants and the
// audit finds none left.
import { randomUUID } from 'node:crypto';
import { watch } from 'node:fs';
import { readdir } from 'node:fs/promises';
import os from 'node:os';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { audit } from '../../src/audit';

import { postUpload } from '../helpers/http';
import { eventually, listKeys } from '../helpers/inspect';
import { png } from '../helpers/media';
import { startStackOnStore, type TestStack } from '../helpers/stack';
import { imageWorkflowIds } from '../../src/images/contract';

const ADMIN_TOKEN = `admin-${randomUUID()}`;

interface Ctx {
  stack: TestStack;
  tenant: { tenantId: string; apiKey: string };
  imageId: string;
}

async function call(ctx: Ctx, method: string, pathname: string, o: { body?: unknown; headers?: Record<string, string> } = {}) {
  const res = await fetch(new URL(pathname, ctx.stack.url), {
    method,
    headers: {
      authorization: `Bearer ${ctx.tenant.apiKey}`,
      ...(o.body !== undefined ? { 'content-type': 'application/json', 'idempotency-key': `img-${randomUUID()}` } : {}),
      ...o.headers,
    },
    ...(o.body !== undefined ? { body: JSON.stringify(o.body) } : {}),
  });
  const body = Buffer.from(await res.arrayBuffer());
  const json = () => JSON.parse(body.toString());
  return { status: res.status, headers: res.headers, body, json };
}

const variantRows = async (ctx: Ctx, uploadId: string) =>
  (await ctx.stack.runtime.pool.query('SELECT spec, storage_key FROM image_variants WHERE upload_id = $1 ORDER BY spec', [uploadId])).rows;

async function uploadOf(ctx: Ctx, body: Buffer, contentType: string): Promise<string> {
  const res = await postUpload(ctx.stack.url, { apiKey: ctx.tenant.apiKey, key: `img-${randomUUID()}`, body, contentType });
  expect(res.status, res.text).toBe(201);
  return res.json.uploadId as string;
}

describe.each(['s3', 'local'] as const)('images on request, on the %s store', (kind) => {
  const ctx = {} as Ctx;
  beforeAll(async () => {
    ctx.stack = await startStackOnStore(kind, `images_${kind}`, {
      env: { ADMIN_TOKEN, IMAGE_MAX_VARIANTS_PER_UPLOAD: '6', TENANT_MAX_IMAGE_PRESETS: '3', IMAGE_PRESET_MAX_VERSIONS: '2' },
    });
    ctx.tenant = await ctx.stack.createTenant('images');
    ctx.imageId = await uploadOf(ctx, await png(64, 48), 'image/png');
  });
  afterAll(() => ctx.stack?.stop());

  it('declares presets as immutable versions: the same spec answers its version, a new one is the next', async () => {
    const first = await call(ctx, 'POST', '/v1/image-presets', { body: { name: 'thumb', spec: 'h_16,w_16,c_fill,f_webp' } });
    expect(first.status).toBe(201);
    expect(first.json()).toMatchObject({ name: 'thumb', version: 1, spec: 'w_16,h_16,fit_cover,f_webp' });
    expect(first.headers.get('location')).toBe('/v1/image-presets/thumb');
    const same = await call(ctx, 'POST', '/v1/image-presets', { body: { name: 'thumb', spec: 'w_16,h_16,fit_cover,f_webp' } });
    expect([same.status, same.json().version]).toEqual([200, 1]);
    const hero = await call(ctx, 'POST', '/v1/image-presets', { body: { name: 'hero', spec: 'w_24,dpr_2,f_auto' } });
    expect(hero.json()).toMatchObject({ version: 1, spec: 'w_48,fit_inside,f_auto' });
    const next = await call(ctx, 'POST', '/v1/image-presets', { body: { name: 'hero', spec: 'w_40,f_auto' } });
    expect([next.status, next.json().version]).toEqual([201, 2]);
    expect((await call(ctx, 'GET', '/v1/image-presets/hero')).json()).toMatchObject({ version: 2, spec: 'w_40,fit_inside,f_auto' });
    const list = await call(ctx, 'GET', '/v1/image-presets?limit=1');
    expect(list.json().data.map((p: { name: string }) => p.name)).toEqual(['hero']);
    const rest = await call(ctx, 'GET', `/v1/image-presets?limit=1&cursor=${list.json().nextCursor}`);
    expect(rest.json()).toMatchObject({ data: [{ name: 'thumb', version: 1 }], nextCursor: null });
  });

  it('refuses every bad preset with a problem and stores nothing', async () => {
    const before = (await ctx.stack.runtime.pool.query('SELECT count(*)::int AS n FROM image_presets')).rows[0].n;
    for (const body of [
      { name: 'Bad Name', spec: 'w_10' },
      { name: 'ok', spec: 'w_0' },
      { name: 'ok', spec: 'fit_cover' },
      { name: 'ok', spec: 'w_10,f_bmp' },
      { name: 'ok', spec: 'w_10', extra: true },
      { name: 'ok' },
      // Names a `{spec}` segment would read as options: no request could name them.
      { name: 'w_100', spec: 'w_10' },
      { name: 'width_big', spec: 'w_10' },
    ]) {
      const res = await call(ctx, 'POST', '/v1/image-presets', { body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      expect(res.json().error).toBe('body_invalid');
    }
    expect((await ctx.stack.runtime.pool.query('SELECT count(*)::int AS n FROM image_presets')).rows[0].n).toBe(before);
    expect((await call(ctx, 'GET', '/v1/image-presets/nope')).status).toBe(404);
  });

  it('serves a preset whose name holds an underscore by that name', async () => {
    const declared = await call(ctx, 'POST', '/v1/image-presets', { body: { name: 'thumb_small', spec: 'w_8,f_webp' } });
    expect(declared.status).toBe(201);
    const id = await uploadOf(ctx, await png(40, 30), 'image/png');
    const res = await call(ctx, 'GET', `/v1/uploads/${id}/images/thumb_small`);
    expect(res.status, res.body.toString()).toBe(200);
    const meta = await sharp(res.body).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(['webp', 8, 6]);
  });

  it('caps presets per tenant and versions per name: one more answers 409 and stores nothing', async () => {
    const capped = { ...ctx, tenant: await ctx.stack.createTenant('capped') };
    const declare = (name: string, spec: string) => call(capped, 'POST', '/v1/image-presets', { body: { name, spec } });
    for (const [name, spec] of [
      ['a', 'w_1'],
      ['a', 'w_2'],
      ['b', 'w_1'],
      ['c', 'w_1'],
    ] as const)
      expect((await declare(name, spec)).status).toBe(201);
    const rows = async () =>
      (await ctx.stack.runtime.pool.query('SELECT count(*)::int AS n FROM image_presets WHERE tenant_id = $1', [capped.tenant.tenantId]))
        .rows[0].n;
    const before = await rows();
    const version = await declare('a', 'w_3');
    expect([version.status, version.json()]).toEqual([409, expect.objectContaining({ error: 'quota_exceeded', limit: 2 })]);
    const name = await declare('d', 'w_1');
    expect([name.status, name.json()]).toEqual([409, expect.objectContaining({ error: 'quota_exceeded', limit: 3 })]);
    // The latest version's own spec is that version, even at the cap.
    expect((await declare('a', 'w_2')).status).toBe(200);
    expect(await rows()).toBe(before);
  });

  it('renders a preset once for 100 racing first requests, then streams it with its ETag', async () => {
    const answers = await Promise.all(Array.from({ length: 100 }, () => call(ctx, 'GET', `/v1/uploads/${ctx.imageId}/images/thumb`)));
    expect(
      answers.map((a) => a.status),
      answers[0]!.body.toString(),
    ).toEqual(answers.map(() => 200));
    expect(new Set(answers.map((a) => a.body.toString('base64'))).size).toBe(1);
    const meta = await sharp(answers[0]!.body).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(['webp', 16, 16]);
    expect(answers[0]!.headers.get('content-type')).toBe('image/webp');
    const rows = await variantRows(ctx, ctx.imageId);
    expect(rows.map((r) => r.spec)).toEqual(['w_16,h_16,fit_cover,f_webp,q_80']);
    // One run rendered it: its ID is derived from the upload and the canonical spec.
    const runs = await eventually(async () => {
      const found = [];
      for await (const w of ctx.stack.temporal.workflow.list({
        query: `WorkflowId = '${imageWorkflowIds.imageVariant(ctx.imageId, rows[0].spec)}'`,
      }))
        found.push(w);
      return found.length ? found : undefined;
    });
    expect(runs).toHaveLength(1);
    expect(runs[0]!.status.name).toBe('COMPLETED');

    const etag = answers[0]!.headers.get('etag')!;
    expect(etag).toMatch(/^"[0-9a-f]{64}\.[0-9a-f]{16}"$/);
    expect((await call(ctx, 'GET', `/v1/uploads/${ctx.imageId}/images/thumb`, { headers: { 'if-none-match': etag } })).status).toBe(304);
    expect(answers[0]!.headers.get('cache-control')).toBe('private, no-cache');
  });

  it('serves option strings only when the tenant allows them; equal specs in any spelling are one variant', async () => {
    const strict = await call(ctx, 'GET', `/v1/uploads/${ctx.imageId}/images/w_20,f_png`);
    expect(strict.status).toBe(403);
    expect(strict.json()).toMatchObject({ error: 'transform_not_allowed' });
    expect(strict.json().detail).toContain('imageSpecs');
    // A spec no URL could render says why, strict or not.
    for (const bad of ['w_20,foo_1', 'w_20,w_30', 'dpr_100']) {
      const res = await call(ctx, 'GET', `/v1/uploads/${ctx.imageId}/images/${bad}`);
      expect([bad, res.status, res.json().error]).toEqual([bad, 400, 'image_spec_invalid']);
    }
    const patched = await fetch(`${ctx.stack.url}/admin/tenants/${ctx.tenant.tenantId}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ imageSpecs: 'any' }),
    });
    expect(patched.status).toBe(200);
    expect(await patched.json()).toMatchObject({ imageSpecs: 'any', retentionDays: null });

    const spellings = ['w_20,f_png', 'f_png,w_20', 'width_20,fit_inside,format_png', 'w_10,dpr_2,f_png,q_30'];
    const bodies = [];
    for (const s of spellings) {
      const res = await call(ctx, 'GET', `/v1/uploads/${ctx.imageId}/images/${s}`);
      expect(res.status, s).toBe(200);
      bodies.push(res.body.toString('base64'));
    }
    expect(new Set(bodies).size).toBe(1);
    const meta = await sharp(Buffer.from(bodies[0]!, 'base64')).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(['png', 20, 15]);
    expect((await variantRows(ctx, ctx.imageId)).map((r) => r.spec)).toContain('w_20,fit_inside,f_png');

    // The stored variants are listed in spec order, a page at a time, each as stored.
    const stored = await variantRows(ctx, ctx.imageId);
    const listed: { spec: string; contentType: string; width: number; height: number; bytes: number }[] = [];
    let cursor: string | null = null;
    do {
      const page = await call(ctx, 'GET', `/v1/uploads/${ctx.imageId}/images?limit=1${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.status).toBe(200);
      listed.push(...page.json().items);
      cursor = page.json().nextCursor;
    } while (cursor);
    expect(listed.map((v) => v.spec)).toEqual(stored.map((r) => r.spec));
    expect(listed.find((v) => v.spec === 'w_20,fit_inside,f_png')).toMatchObject({ contentType: 'image/png', width: 20, height: 15 });
    // Not an image, no such upload, a bad page: each its problem.
    const doc = await uploadOf(ctx, Buffer.from('plain text'), 'text/plain');
    expect((await call(ctx, 'GET', `/v1/uploads/${doc}/images`)).json().error).toBe('not_an_image');
    expect((await call(ctx, 'GET', `/v1/uploads/${randomUUID()}/images`)).status).toBe(404);
    expect((await call(ctx, 'GET', `/v1/uploads/${ctx.imageId}/images?limit=0`)).json().error).toBe('query_invalid');
  });

  it('negotiates f_auto from Accept and says it varies on it', async () => {
    const cases: [string | undefined, string][] = [
      ['image/avif,image/webp,*/*', 'heif'],
      ['image/webp,*/*', 'webp'],
      [undefined, 'png'],
    ];
    for (const [accept, format] of cases) {
      const res = await call(ctx, 'GET', `/v1/uploads/${ctx.imageId}/images/hero`, accept ? { headers: { accept } } : {});
      expect(res.status).toBe(200);
      expect(res.headers.get('vary')).toBe('Accept');
      const meta = await sharp(res.body).metadata();
      expect([accept, meta.format, meta.width]).toEqual([accept, format, 40]);
    }
    expect((await call(ctx, 'GET', `/v1/uploads/${ctx.imageId}/images/thumb`)).headers.get('vary')).toBeNull();
  });

  it('renders a source above 32 MiB through a scratch file, and removes the file after', async () => {
    // Noise stored uncompressed: 3500×3500 RGB is ~35 MiB of PNG, above the in-memory bound.
    const big = await sharp({
      create: { width: 3500, height: 3500, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 40 } },
    })
      .png({ compressionLevel: 0 })
      .toBuffer();
    expect(big.length).toBeGreaterThan(32 * 1024 * 1024);
    const id = await uploadOf(ctx, big, 'image/png');
    // The upload's own pipeline work (its thumbnail) is done before the render is watched.
    await eventually(async () => (await call(ctx, 'GET', `/v1/uploads/${id}`)).json().status === 'processed', 120_000);
    const mine = `oncely-transcode-${process.pid}-`;
    const made: string[] = [];
    const watcher = watch(os.tmpdir(), (_event, name) => {
      if (name?.startsWith(mine) && !made.includes(name)) made.push(name);
    });
    try {
      const res = await call(ctx, 'GET', `/v1/uploads/${id}/images/thumb`);
      expect(res.status, res.body.toString()).toBe(200);
      const meta = await sharp(res.body).metadata();
      expect([meta.format, meta.width, meta.height]).toEqual(['webp', 16, 16]);
    } finally {
      watcher.close();
    }
    expect(made).toHaveLength(1);
    expect((await readdir(os.tmpdir())).filter((n) => n.startsWith(mine))).toEqual([]);
    expect((await variantRows(ctx, id)).map((r) => r.spec)).toEqual(['w_16,h_16,fit_cover,f_webp,q_80']);
  });

  it('refuses bad specs, non-images and too many variants with a problem, rendering nothing', async () => {
    const before = await variantRows(ctx, ctx.imageId);
    for (const [spec, status, error] of [
      ['w_0', 400, 'image_spec_invalid'],
      ['w_10,f_gif', 400, 'image_spec_invalid'],
      ['w_99999', 400, 'image_spec_invalid'],
      ['nope', 404, 'not_found'],
      ['NOPE', 404, 'not_found'],
    ] as const) {
      const res = await call(ctx, 'GET', `/v1/uploads/${ctx.imageId}/images/${spec}`);
      expect([spec, res.status, res.json().error]).toEqual([spec, status, error]);
    }
    expect((await call(ctx, 'GET', `/v1/uploads/${randomUUID()}/images/thumb`)).status).toBe(404);
    const text = await uploadOf(ctx, Buffer.from('not a picture'), 'text/plain');
    expect((await call(ctx, 'GET', `/v1/uploads/${text}/images/thumb`)).json()).toMatchObject({ error: 'not_an_image' });
    // A PNG cut short (its signature passes the intake's sniffing): the render refuses it, and stores nothing.
    const whole = await png(64, 48);
    const fake = await uploadOf(ctx, whole.subarray(0, Math.floor(whole.length / 2)), 'image/png');
    const broken = await call(ctx, 'GET', `/v1/uploads/${fake}/images/thumb`);
    expect([broken.status, broken.json().error]).toEqual([422, 'image_unrenderable']);
    expect(await variantRows(ctx, fake)).toEqual([]);
    expect(await variantRows(ctx, ctx.imageId)).toEqual(before);

    // The cap on distinct variants per upload (6 here).
    const fresh = await uploadOf(ctx, await png(30, 30), 'image/png');
    for (let w = 1; w <= 6; w++) expect((await call(ctx, 'GET', `/v1/uploads/${fresh}/images/w_${w},f_png`)).status).toBe(200);
    const over = await call(ctx, 'GET', `/v1/uploads/${fresh}/images/w_7,f_png`);
    expect([over.status, over.json().error]).toEqual([409, 'too_many_image_variants']);
    expect((await call(ctx, 'GET', `/v1/uploads/${fresh}/images/w_3,f_png`)).status).toBe(200);
    expect(await variantRows(ctx, fresh)).toHaveLength(6);
    // Eight first requests for eight new specs at once (within the tenant's eight renders in
    // flight): the cap holds where the variant is recorded, so exactly six are kept, the rest
    // answer 409 and leave no object behind.
    const raced = await uploadOf(ctx, await png(30, 30), 'image/png');
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => call(ctx, 'GET', `/v1/uploads/${raced}/images/w_${i + 1},f_webp`)),
    );
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 409, 409]);
    for (const a of answers.filter((x) => x.status === 409)) expect(a.json().error).toBe('too_many_image_variants');
    const kept = await variantRows(ctx, raced);
    expect(kept).toHaveLength(6);
    const stored = await listKeys(ctx.stack.runtime.store, `tenants/${ctx.tenant.tenantId}/renditions/${raced}/images/`);
    expect(stored.sort()).toEqual(kept.map((r: { storage_key: string }) => r.storage_key).sort());
  });

  it('never renders a picture larger than its source, whatever the fit, and refuses a box too costly to render before any work', async () => {
    const tiny = await uploadOf(ctx, await png(4, 4), 'image/png');
    // 8192×8192 AVIF or PNG: over IMAGE_MAX_RENDER_COST whatever the source, refused with nothing rendered.
    for (const spec of ['w_8192,h_8192,fit_contain,f_png', 'w_8192,h_8192,fit_cover,f_avif']) {
      const res = await call(ctx, 'GET', `/v1/uploads/${tiny}/images/${spec}`);
      expect([spec, res.status, res.json().error]).toEqual([spec, 400, 'image_spec_invalid']);
      expect(res.json().detail).toContain('IMAGE_MAX_RENDER_COST');
    }
    const signed = await call(ctx, 'POST', `/v1/uploads/${tiny}/image-urls`, { body: { spec: 'w_8192,h_8192,fit_fill,f_avif' } });
    expect([signed.status, signed.json().error]).toEqual([400, 'body_invalid']);
    // Within the cost, every fit gives at most the source's 4×4.
    for (const fit of ['contain', 'cover', 'stretch', 'inside', 'outside']) {
      const res = await call(ctx, 'GET', `/v1/uploads/${tiny}/images/w_4000,h_3000,fit_${fit},f_png`);
      expect(res.status).toBe(200);
      const meta = await sharp(res.body).metadata();
      expect([fit, meta.width! <= 4 && meta.height! <= 4]).toEqual([fit, true]);
    }
    expect(await variantRows(ctx, tiny)).toHaveLength(5);
  });

  it('signs URLs that serve any spec without the API key, cached publicly, and refuses every changed or expired one', async () => {
    const made = await call(ctx, 'POST', `/v1/uploads/${ctx.imageId}/image-urls`, {
      body: { spec: 'width_12,f_jpg', expiresInSeconds: 600 },
    });
    expect(made.status).toBe(201);
    const { url, spec, expiresAt } = made.json();
    expect(spec).toBe('w_12,fit_inside,f_jpeg');
    expect(Date.parse(expiresAt)).toBeGreaterThan(Date.now() + 590_000);
    const served = await fetch(url);
    expect(served.status).toBe(200);
    expect(served.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    const meta = await sharp(Buffer.from(await served.arrayBuffer())).metadata();
    expect([meta.format, meta.width]).toEqual(['jpeg', 12]);
    // A preset is resolved when signing; f_auto stays open to Accept.
    const auto = (await call(ctx, 'POST', `/v1/uploads/${ctx.imageId}/image-urls`, { body: { spec: 'hero' } })).json();
    expect(auto.spec).toBe('w_40,fit_inside,f_auto');
    const webp = await fetch(auto.url, { headers: { accept: 'image/webp' } });
    expect([webp.status, webp.headers.get('content-type'), webp.headers.get('vary')]).toEqual([200, 'image/webp', 'Accept']);

    const signed = new URL(url);
    const changed = (edit: (u: URL) => void) => {
      const u = new URL(signed);
      edit(u);
      return u.toString();
    };
    for (const forged of [
      changed((u) => (u.pathname = u.pathname.replace('w_12', 'w_13'))),
      changed((u) => (u.pathname = u.pathname.replace(ctx.imageId, randomUUID()))),
      changed((u) => u.searchParams.set('expires', String(Number(u.searchParams.get('expires')) + 60))),
      changed((u) => u.searchParams.set('signature', `${u.searchParams.get('signature')!.slice(0, -2)}AA`)),
      changed((u) => u.searchParams.delete('signature')),
      changed((u) => (u.pathname = u.pathname.replace(ctx.imageId, 'not-a-uuid'))),
    ]) {
      const res = await fetch(forged);
      expect([forged, res.status, ((await res.json()) as { error: string }).error]).toEqual([forged, 403, 'signature_invalid']);
    }
    const brief = (
      await call(ctx, 'POST', `/v1/uploads/${ctx.imageId}/image-urls`, { body: { spec: 'w_12,f_jpeg', expiresInSeconds: 1 } })
    ).json();
    const expired = await eventually(async () => {
      const res = await fetch(brief.url);
      return res.status === 403 ? ((await res.json()) as { detail: string }) : undefined;
    });
    expect(expired.detail).toContain('expired');

    for (const [body, status, error] of [
      [{ spec: 'w_12', expiresInSeconds: 10 ** 9 }, 400, 'body_invalid'],
      [{ spec: 'w_0' }, 400, 'body_invalid'],
      [{ spec: 'nope' }, 404, 'not_found'],
      [{ spec: 'w_12', extra: 1 }, 400, 'body_invalid'],
    ] as const) {
      const res = await call(ctx, 'POST', `/v1/uploads/${ctx.imageId}/image-urls`, { body });
      expect([res.status, res.json().error]).toEqual([status, error]);
    }
  });

  it('erases every variant with its upload, and answers 410 after', async () => {
    const id = await uploadOf(ctx, await png(40, 40), 'image/png');
    for (const spec of ['thumb', 'hero', 'w_5,f_jpeg'])
      expect((await call(ctx, 'GET', `/v1/uploads/${id}/images/${spec}`)).status).toBe(200);
    const link = (await call(ctx, 'POST', `/v1/uploads/${id}/image-urls`, { body: { spec: 'thumb' } })).json();
    const keys = (await variantRows(ctx, id)).map((r) => r.storage_key as string);
    expect(keys).toHaveLength(3);
    for (const key of keys) expect(await ctx.stack.runtime.store.head(key)).toBeDefined();
    const deleted = await call(ctx, 'DELETE', `/v1/uploads/${id}`, { headers: { prefer: 'wait=30' } });
    expect(deleted.status).toBeLessThan(300);
    await eventually(async () => ((await variantRows(ctx, id)).length === 0 ? true : undefined));
    for (const key of keys) expect(await ctx.stack.runtime.store.head(key)).toBeUndefined();
    expect((await call(ctx, 'GET', `/v1/uploads/${id}/images/thumb`)).json()).toMatchObject({ error: 'upload_deleted' });
    expect((await fetch(link.url)).status).toBe(410);
    expect((await audit(ctx.stack.runtime.pool, ctx.stack.runtime.store)).violations).toEqual([]);
  });
});
