// Pipelines as data, against the real stack (S3, Temporal, sharp, poppler): declared
// versions, uploads naming them by every arrival mode, the steps' renditions decoded,
// metadata policies, the pixel limit, and every bad request refused without a trace.
import { randomUUID } from 'node:crypto';
import exifReader from 'exif-reader';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../helpers/stack';
import { getJson, postUpload, sha256 } from '../helpers/http';
import { eventually, readObject, rowsForKey } from '../helpers/inspect';
import { png } from '../helpers/media';

let stack: TestStack;
let tenant: { tenantId: string; apiKey: string };

beforeAll(async () => {
  // A small pixel limit: a 2000×1000 picture is a "decompression bomb" here.
  stack = await startTestStack('pipes', { env: { IMAGE_MAX_PIXELS: '1500000' } });
  tenant = await stack.createTenant();
});
afterAll(() => stack?.stop());

const auth = (apiKey = tenant.apiKey) => ({ authorization: `Bearer ${apiKey}` });

async function declare(body: unknown, apiKey = tenant.apiKey, key = `pipe-${randomUUID()}`) {
  const res = await fetch(`${stack.url}/v1/pipelines`, {
    method: 'POST',
    headers: { ...auth(apiKey), 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as any, location: res.headers.get('location') };
}

async function processed(uploadId: string, apiKey = tenant.apiKey) {
  return eventually(async () => {
    const r = await getJson(`${stack.url}/v1/uploads/${uploadId}?wait=20`, apiKey);
    return r.json.status === 'processed' ? r.json : undefined;
  }, 90_000);
}

/** A landscape JPEG shown portrait (EXIF orientation 6), with a copyright, an artist and a GPS position. */
async function geotaggedPhoto(width = 1200, height = 800): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: { r: 30, g: 140, b: 90 } } })
    .jpeg({ quality: 85 })
    .withMetadata({ orientation: 6 })
    .withExif({
      IFD0: { Copyright: 'Jane Roe 2026', Artist: 'Jane Roe' },
      IFD3: { GPSLatitudeRef: 'N', GPSLatitude: '48/1 51/1 2400/100', GPSLongitudeRef: 'E', GPSLongitude: '2/1 21/1 300/100' },
    })
    .toBuffer();
}

async function exifOf(image: Buffer) {
  const { exif } = await sharp(image).metadata();
  return exif ? exifReader(exif) : undefined;
}

const photos = {
  name: 'photos',
  steps: [
    {
      type: 'image.variants',
      metadata: 'strip',
      variants: [
        { name: 'w400', width: 400, format: 'webp' },
        { name: 'w400-avif', width: 400, format: 'avif', quality: 50 },
      ],
    },
    { type: 'webhook' },
  ],
};

describe('declarations', () => {
  it('versions every change, answers an unchanged one with its version, and reads any version', async () => {
    const first = await declare({
      name: 'albums',
      steps: [{ type: 'image.variants', variants: [{ name: 'small', width: 100, format: 'png' }] }],
    });
    expect(first.status).toBe(201);
    expect(first.json).toMatchObject({ name: 'albums', version: 1, builtin: false });
    expect(first.json.steps[0]).toMatchObject({ metadata: 'strip', autoOrient: true, variants: [{ fit: 'inside' }] });
    expect(first.location).toBe('/v1/pipelines/albums/versions/1');
    // The same steps under another key: no new version.
    const same = await declare({ name: 'albums', steps: first.json.steps });
    expect(same.status).toBe(200);
    expect(same.json.version).toBe(1);
    // The same key replays its answer.
    const key = `pipe-${randomUUID()}`;
    const changed = await declare({ name: 'albums', steps: [{ type: 'webhook' }] }, tenant.apiKey, key);
    expect(changed.status).toBe(201);
    expect(changed.json.version).toBe(2);
    expect((await declare({ name: 'albums', steps: [{ type: 'webhook' }] }, tenant.apiKey, key)).json.version).toBe(2);
    expect((await declare({ name: 'albums', steps: [] }, tenant.apiKey, key)).status).toBe(422);

    expect((await getJson(`${stack.url}/v1/pipelines/albums`, tenant.apiKey)).json.version).toBe(2);
    const v1 = await getJson(`${stack.url}/v1/pipelines/albums/versions/1`, tenant.apiKey);
    expect(v1.json.steps).toEqual(first.json.steps);
    const builtin = await getJson(`${stack.url}/v1/pipelines/default/versions/0`, tenant.apiKey);
    expect(builtin.json).toMatchObject({ name: 'default', version: 0, builtin: true });
    expect(builtin.json.steps.map((s: any) => s.type)).toEqual(['image.variants', 'video.poster', 'audio.transcode', 'webhook']);
    const list = await getJson(`${stack.url}/v1/pipelines`, tenant.apiKey);
    expect(list.json.data.map((p: any) => `${p.name}@${p.version}`)).toEqual(expect.arrayContaining(['default@0', 'albums@2']));
    // Another tenant sees none of it.
    const other = await stack.createTenant();
    expect((await getJson(`${stack.url}/v1/pipelines/albums`, other.apiKey)).status).toBe(404);
    for (const path of ['/v1/pipelines/albums/versions/3', '/v1/pipelines/albums/versions/0', '/v1/pipelines/Bad!', '/v1/pipelines/nosuch'])
      expect((await getJson(`${stack.url}${path}`, tenant.apiKey)).status, path).toBe(404);
  });

  it('refuses declarations the catalogue does not allow, with the reason, and records nothing', async () => {
    const before = (await getJson(`${stack.url}/v1/pipelines`, tenant.apiKey)).json.data;
    const bad: [unknown, RegExp][] = [
      [{ name: 'x', steps: [{ type: 'image.sepia' }] }, /steps\.0/],
      [{ name: 'x', steps: [{ type: 'image.variants', variants: [{ name: 'a', format: 'webp' }] }] }, /width, a height or both/],
      [{ name: 'x', steps: [{ type: 'image.variants', variants: [{ name: 'a', width: 10, format: 'bmp' }] }] }, /format/],
      [
        {
          name: 'x',
          steps: [
            { type: 'image.variants', variants: [{ name: 'a', width: 10, format: 'webp' }] },
            { type: 'document.preview', name: 'a' },
          ],
        },
        /"a" is used twice/,
      ],
      [{ name: 'x', steps: [{ type: 'webhook' }, { type: 'webhook' }] }, /at most one webhook/],
      [{ name: 'Not A Name', steps: [] }, /name/],
      [{ name: 'x', steps: [], extra: 1 }, /extra|Unrecognized/i],
      [{ name: 'x', steps: [{ type: 'audio.transcode', bitrate: 'loud' }] }, /bitrate|kilobits/],
      ['not an object', /body/],
    ];
    for (const [body, detail] of bad) {
      const res = await declare(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.json).toMatchObject({ error: 'body_invalid' });
      expect(res.json.detail).toMatch(detail);
    }
    expect((await getJson(`${stack.url}/v1/pipelines`, tenant.apiKey)).json.data).toEqual(before);
  });

  it('needs the pipelines:manage scope', async () => {
    const made = await fetch(`${stack.url}/v1/api-keys`, {
      method: 'POST',
      headers: { ...auth(), 'content-type': 'application/json', 'idempotency-key': `k-${randomUUID()}` },
      body: JSON.stringify({ label: 'uploader', scopes: ['uploads:write', 'uploads:read'] }),
    });
    expect(made.status).toBe(201);
    const uploader = ((await made.json()) as { key: string }).key;
    expect((await declare(photos, uploader)).status).toBe(403);
    expect((await getJson(`${stack.url}/v1/pipelines`, uploader)).status).toBe(403);
  });
});

describe('uploads naming a pipeline', () => {
  it('makes WebP and AVIF variants of an upright picture with no metadata left, and records the version it ran', async () => {
    const declared = await declare(photos);
    expect(declared.status).toBe(201);
    const key = `photo-${randomUUID()}`;
    const created = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key,
      body: await geotaggedPhoto(),
      contentType: 'image/jpeg',
      pipeline: 'photos',
    });
    expect(created.status, created.text).toBe(201);
    const detail = await processed(created.json.uploadId);
    expect(detail.pipeline).toMatchObject({
      name: 'photos',
      version: declared.json.version,
      steps: [{ index: 0, type: 'image.variants', status: 'succeeded', reason: null }],
    });
    expect(detail.processing).toMatchObject({ status: 'ready', media: { width: 800, height: 1200 } });
    const byName = Object.fromEntries(detail.renditions.map((r: any) => [r.name, r]));
    expect(Object.keys(byName).sort()).toEqual(['w400', 'w400-avif']);
    for (const [name, format, contentType] of [
      ['w400', 'webp', 'image/webp'],
      ['w400-avif', 'heif', 'image/avif'],
    ] as const) {
      const r = byName[name];
      expect(r.storageKey).toBe(
        `tenants/${tenant.tenantId}/renditions/${detail.uploadId}/photos/v${declared.json.version}/${name}${name === 'w400' ? '.webp' : '.avif'}`,
      );
      const bytes = await readObject(stack.s3, r.storageKey);
      const meta = await sharp(bytes).metadata();
      // Upright: the portrait the EXIF orientation described, 400 wide.
      expect({ format: meta.format, width: meta.width, height: meta.height }).toEqual({ format, width: 400, height: 600 });
      expect(r).toMatchObject({ contentType, width: 400, height: 600 });
      expect(meta.exif).toBeUndefined();
    }
    // Served by name, like the built-in renditions.
    const served = await fetch(`${stack.url}/v1/uploads/${detail.uploadId}/renditions/w400-avif`, { headers: auth() });
    expect(served.status).toBe(200);
    expect(served.headers.get('content-type')).toBe('image/avif');
    const row = (await rowsForKey(stack.runtime.pool, tenant.tenantId, key)).uploads[0];
    expect(row).toMatchObject({ pipeline: 'photos', pipeline_version: declared.json.version });
    // The list shows the version too.
    const list = await getJson(`${stack.url}/v1/uploads?limit=1`, tenant.apiKey);
    expect(list.json.items[0].pipeline).toEqual({ name: 'photos', version: declared.json.version });
  });

  it('keeps the copyright and artist but never the position under keep-copyright; keep keeps it all', async () => {
    const variants = [{ name: 'web', width: 300, format: 'jpeg' }];
    await declare({ name: 'credited', steps: [{ type: 'image.variants', metadata: 'keep-copyright', variants }] });
    await declare({ name: 'archive', steps: [{ type: 'image.variants', metadata: 'keep', autoOrient: false, variants }] });
    const photo = await geotaggedPhoto();
    const source = await exifOf(photo);
    expect(source?.GPSInfo?.GPSLatitudeRef).toBe('N');
    expect(source?.Image?.Orientation).toBe(6);
    for (const [pipeline, expectGps] of [
      ['credited', false],
      ['archive', true],
    ] as const) {
      const created = await postUpload(stack.url, {
        apiKey: tenant.apiKey,
        key: `meta-${randomUUID()}`,
        body: photo,
        contentType: 'image/jpeg',
        pipeline: pipeline,
      });
      expect(created.status).toBe(201);
      const detail = await processed(created.json.uploadId);
      const exif = await exifOf(await readObject(stack.s3, detail.renditions[0].storageKey));
      expect(exif?.Image?.Copyright, pipeline).toBe('Jane Roe 2026');
      expect(exif?.Image?.Artist, pipeline).toBe('Jane Roe');
      expect(exif?.GPSInfo !== undefined, pipeline).toBe(expectGps);
    }
  });

  it('fails the step of a picture past the pixel limit with the reason; the upload stays committed', async () => {
    const created = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key: `bomb-${randomUUID()}`,
      body: await png(2000, 1000),
      contentType: 'image/png',
    });
    expect(created.status).toBe(201);
    const detail = await processed(created.json.uploadId);
    expect(detail.processing.status).toBe('failed');
    expect(detail.processing.reason).toMatch(/pixel/);
    expect(detail.pipeline.steps).toMatchObject([{ type: 'image.variants', status: 'failed' }]);
    expect(detail.renditions).toEqual([]);
    expect((await fetch(`${stack.url}/v1/uploads/${created.json.uploadId}/content`, { headers: auth() })).status).toBe(200);
  });

  it('renders the first page of a PDF as a preview', async () => {
    await declare({ name: 'docs', steps: [{ type: 'document.preview', width: 300 }] });
    const created = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key: `pdf-${randomUUID()}`,
      body: minimalPdf(),
      contentType: 'application/pdf',
      pipeline: 'docs',
    });
    expect(created.status, created.text).toBe(201);
    const detail = await processed(created.json.uploadId);
    expect(detail.pipeline.steps).toMatchObject([{ type: 'document.preview', status: 'succeeded' }]);
    const preview = detail.renditions[0];
    expect(preview).toMatchObject({ name: 'preview', contentType: 'image/webp', width: 300 });
    const meta = await sharp(await readObject(stack.s3, preview.storageKey)).metadata();
    expect({ format: meta.format, width: meta.width }).toEqual({ format: 'webp', width: 300 });
  });

  it('without a scanner configured, a scan step records not_scanned (never clean) and the upload stays available', async () => {
    await declare({ name: 'unscanned', steps: [{ type: 'scan.clamav' }] });
    const created = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key: `noscan-${randomUUID()}`,
      body: Buffer.from('no scanner here'),
      contentType: 'text/plain',
      pipeline: 'unscanned',
    });
    expect(created.status).toBe(201);
    const detail = await processed(created.json.uploadId);
    expect(detail.availability).toBe('available');
    expect(detail.pipeline.steps).toMatchObject([
      {
        type: 'scan.clamav',
        status: 'succeeded',
        scan: { verdict: 'not_scanned', reason: 'no virus scanner is configured (CLAMD_ADDRESS)' },
      },
    ]);
  });

  it('settles a file no step applies to in the commit, with the reason', async () => {
    const created = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key: `txt-${randomUUID()}`,
      body: Buffer.from('plain'),
      contentType: 'text/plain',
      pipeline: 'photos',
    });
    expect(created.status).toBe(201);
    const detail = await getJson(`${stack.url}/v1/uploads/${created.json.uploadId}`, tenant.apiKey);
    expect(detail.json.status).toBe('processed');
    expect(detail.json.processing).toMatchObject({
      status: 'skipped',
      reason: expect.stringMatching(/^no step applies to text\/plain \(pipeline photos, version \d+\)$/),
    });
  });

  it("runs the tenant's own default when the upload names none", async () => {
    const own = await stack.createTenant();
    const declared = await declare(
      { name: 'default', steps: [{ type: 'image.variants', variants: [{ name: 'tiny', width: 32, format: 'png' }] }] },
      own.apiKey,
    );
    expect(declared.json.version).toBe(1);
    const created = await postUpload(stack.url, {
      apiKey: own.apiKey,
      key: `own-${randomUUID()}`,
      body: await png(64, 64),
      contentType: 'image/png',
    });
    const detail = await processed(created.json.uploadId, own.apiKey);
    expect(detail.pipeline).toMatchObject({ name: 'default', version: 1 });
    expect(detail.renditions.map((r: any) => r.name)).toEqual(['tiny']);
  });

  it('takes the pipeline from a form field, tus metadata and a direct-upload plan', async () => {
    const b64 = (s: string) => Buffer.from(s).toString('base64');
    // A form post.
    const form = new FormData();
    form.set('pipeline', 'photos');
    form.set('file', new Blob([Buffer.from('form text')], { type: 'text/plain' }), 'a.txt');
    const formKey = `form-${randomUUID()}`;
    const posted = await fetch(`${stack.url}/v1/uploads`, {
      method: 'POST',
      headers: { ...auth(), 'idempotency-key': formKey },
      body: form,
    });
    expect(posted.status).toBe(201);
    // A tus session.
    const tusKey = `tus-${randomUUID()}`;
    const tus = { ...auth(), 'tus-resumable': '1.0.0' };
    const session = await fetch(`${stack.url}/v1/tus`, {
      method: 'POST',
      headers: {
        ...tus,
        'idempotency-key': tusKey,
        'upload-length': '5',
        'upload-metadata': `filetype ${b64('text/plain')},pipeline ${b64('photos')}`,
      },
    });
    expect(session.status).toBe(201);
    const patched = await fetch(`${stack.url}${session.headers.get('location')}`, {
      method: 'PATCH',
      headers: { ...tus, 'upload-offset': '0', 'content-type': 'application/offset+octet-stream', prefer: 'wait=30' },
      body: 'hello',
    });
    expect(patched.status).toBe(204);
    // A direct upload.
    const file = Buffer.from('direct text');
    const directKey = `direct-${randomUUID()}`;
    const plan = await fetch(`${stack.url}/v1/direct-uploads`, {
      method: 'POST',
      headers: { ...auth(), 'idempotency-key': directKey, 'content-type': 'application/json' },
      body: JSON.stringify({ bytes: file.length, sha256: sha256(file), contentType: 'text/plain', pipeline: 'photos' }),
    });
    expect(plan.status).toBe(201);
    const { id, upload } = (await plan.json()) as { id: string; upload: { url: string; headers: Record<string, string> } };
    const { 'content-length': _length, ...headers } = upload.headers;
    expect((await fetch(upload.url, { method: 'PUT', headers, body: file })).status).toBe(200);
    expect((await fetch(`${stack.url}/v1/direct-uploads/${id}/complete`, { method: 'POST', headers: auth() })).status).toBe(201);

    for (const key of [formKey, tusKey, directKey]) {
      const row = await eventually(async () => (await rowsForKey(stack.runtime.pool, tenant.tenantId, key)).uploads[0], 30_000);
      expect(row.pipeline, key).toBe('photos');
    }
  });

  it('refuses an undeclared or malformed pipeline before reading the body, stores nothing, and leaves the key free', async () => {
    const key = `unknown-${randomUUID()}`;
    const body = await png(32, 32);
    const unknown = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key,
      body,
      contentType: 'image/png',
      pipeline: 'nosuch',
    });
    expect(unknown.status).toBe(422);
    expect(unknown.json).toMatchObject({ error: 'pipeline_unknown' });
    expect(unknown.json.detail).toContain('nosuch');
    const malformed = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key,
      body,
      contentType: 'image/png',
      pipeline: 'Not Valid!',
    });
    expect(malformed.status).toBe(400);
    expect(malformed.json).toMatchObject({ error: 'header_invalid' });
    const b64 = (s: string) => Buffer.from(s).toString('base64');
    const tus = await fetch(`${stack.url}/v1/tus`, {
      method: 'POST',
      headers: {
        ...auth(),
        'tus-resumable': '1.0.0',
        'idempotency-key': key,
        'upload-length': '5',
        'upload-metadata': `pipeline ${b64('nosuch')}`,
      },
    });
    expect(tus.status).toBe(422);
    const plan = await fetch(`${stack.url}/v1/direct-uploads`, {
      method: 'POST',
      headers: { ...auth(), 'idempotency-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ bytes: 3, sha256: sha256('abc'), pipeline: 'nosuch' }),
    });
    expect(plan.status).toBe(422);
    const form = new FormData();
    form.set('pipeline', 'nosuch');
    form.set('file', new Blob([body], { type: 'image/png' }), 'a.png');
    const posted = await fetch(`${stack.url}/v1/uploads`, { method: 'POST', headers: { ...auth(), 'idempotency-key': key }, body: form });
    expect(posted.status).toBe(422);
    const rows = await rowsForKey(stack.runtime.pool, tenant.tenantId, key);
    expect(rows.uploads).toEqual([]);
    const sessions = await stack.runtime.pool.query('SELECT 1 FROM resumable_sessions WHERE tenant_id = $1 AND idempotency_key = $2', [
      tenant.tenantId,
      key,
    ]);
    expect(sessions.rowCount).toBe(0);
    // The refusal is not stored: the key then makes the upload, and another pipeline under it is another request.
    const ok = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key,
      body,
      contentType: 'image/png',
      pipeline: 'photos',
    });
    expect(ok.status).toBe(201);
    const other = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key,
      body,
      contentType: 'image/png',
      pipeline: 'albums',
    });
    expect(other.status).toBe(422);
    expect(other.json).toMatchObject({ error: 'idempotency_key_reuse' });
    // Naming `default` is naming none.
    const implicit = `implicit-${randomUUID()}`;
    expect((await postUpload(stack.url, { apiKey: tenant.apiKey, key: implicit, body, contentType: 'image/png' })).status).toBe(201);
    const explicit = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key: implicit,
      body,
      contentType: 'image/png',
      pipeline: 'default',
    });
    expect(explicit.status).toBe(201);
    expect(explicit.headers.get('idempotent-replayed')).toBe('true');
  });
});

/** A one-page PDF with a filled rectangle, written by hand (no PDF library needed). */
function minimalPdf(): Buffer {
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 100] /Contents 4 0 R >>',
  ];
  const content = '0.2 0.4 0.8 rg 20 20 160 60 re f';
  objects.push(`<< /Length ${content.length} >>\nstream\n${content}\nendstream`);
  let pdf = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((o, i) => {
    offsets.push(pdf.length);
    pdf += `${i + 1} 0 obj\n${o}\nendobj\n`;
  });
  const xref = pdf.length;
  pdf += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
  pdf += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(pdf, 'latin1');
}
