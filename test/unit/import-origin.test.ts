// Reading an import's file from its origin, against origins this test serves on 127.0.0.1:
// whole files, resumes with Range/If-Range, origins without ranges or whose file changed,
// redirects (bounded, each hop checked), errors, size limits before and during the body,
// timeouts, encodings the import did not ask for.
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import { serveOnLoopback, type LoopbackServer } from '../support/loopback';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ImportFailure, Origins, type OriginLimits } from '../../src/imports/origin';
import { hostListed } from '../../src/tokens/grant';

const file = randomBytes(64 * 1024);
/** The file's next version, of the same length. */
const newer = randomBytes(64 * 1024);
const OLDER_DATE = 'Tue, 01 Dec 2026 10:00:00 GMT';
const NEWER_DATE = 'Sat, 05 Dec 2026 10:00:00 GMT';
let version = 'v1';
let served = 0;
/** The request headers /seen last got. */
let seen: http.IncomingHttpHeaders = {};
let server: LoopbackServer;
let base = '';

/** What the origin does, by path. */
function handle(req: http.IncomingMessage, res: http.ServerResponse) {
  const url = new URL(req.url ?? '/', 'http://x');
  const etag = `"${version}"`;
  const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
  const whole = () => {
    res.writeHead(200, { 'content-length': file.length, etag, 'content-type': 'application/octet-stream' });
    served += file.length;
    res.end(file);
  };
  switch (url.pathname) {
    case '/file':
      if (range && req.headers['if-range'] === etag) {
        const from = Number(range[1]);
        res.writeHead(206, {
          'content-range': `bytes ${from}-${file.length - 1}/${file.length}`,
          'content-length': file.length - from,
          etag,
        });
        served += file.length - from;
        return res.end(file.subarray(from));
      }
      return whole();
    case '/no-ranges':
      return whole();
    case '/liar': {
      // Answers any range with a 206, whatever If-Range named: of another version, or one that lies.
      const mode = url.searchParams.get('mode');
      if (!range) {
        res.writeHead(200, { 'content-length': newer.length, etag: '"new-version"', 'last-modified': NEWER_DATE });
        return res.end(newer);
      }
      const from = Number(range[1]);
      const start = mode === 'shifted-start' ? from - 1024 : from;
      const total = mode === 'changed-total' ? file.length + 1 : file.length;
      const validators: Record<string, string> =
        mode === 'changed-etag'
          ? { etag: '"new-version"' }
          : mode === 'weak-etag'
            ? { etag: 'W/"v1"' }
            : mode === 'changed-last-modified'
              ? { 'last-modified': NEWER_DATE }
              : mode === 'same-last-modified'
                ? { 'last-modified': OLDER_DATE }
                : mode === 'no-validators'
                  ? {}
                  : { etag: '"v1"' };
      res.writeHead(206, { 'content-range': `bytes ${start}-${total - 1}/${total}`, 'content-length': total - start, ...validators });
      return res.end((mode === 'same-last-modified' ? file : newer).subarray(start, total));
    }
    case '/chunked':
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.write(file.subarray(0, 40_000));
      return res.end(file.subarray(40_000));
    case '/huge':
      res.writeHead(200, { 'content-length': 5 * 1024 ** 3 });
      return res.write(Buffer.alloc(1024));
    case '/gzip':
      res.writeHead(200, { 'content-encoding': 'gzip', 'content-length': 3 });
      return res.end('abc');
    case '/slow':
      return void setTimeout(() => whole(), 1_500);
    case '/missing':
      res.writeHead(404);
      return res.end('no');
    case '/hop': {
      // n more hops, then the file.
      const n = Number(url.searchParams.get('n') ?? 0);
      res.writeHead(302, { location: n > 0 ? `/hop?n=${n - 1}` : '/file' });
      return res.end();
    }
    case '/to-localhost':
      res.writeHead(302, { location: base.replace('127.0.0.1', 'localhost') + '/file' });
      return res.end();
    case '/trickle':
      // The headers and a first chunk, the rest much later.
      res.writeHead(200, { 'content-length': file.length });
      res.write(file.subarray(0, 1024));
      return void setTimeout(() => res.end(file.subarray(1024)), 3_000).unref();
    case '/seen':
      seen = req.headers;
      return whole();
    case '/to-seen':
      res.writeHead(302, { location: '/seen' });
      return res.end();
    case '/to-localhost-seen':
      res.writeHead(307, { location: base.replace('127.0.0.1', 'localhost') + '/seen' });
      return res.end();
    case '/away-and-back':
      // From 127.0.0.1 to localhost, which sends the read back to 127.0.0.1's /seen.
      res.writeHead(302, { location: base.replace('127.0.0.1', 'localhost') + '/to-seen-here' });
      return res.end();
    case '/to-seen-here':
      res.writeHead(302, { location: base + '/seen' });
      return res.end();
    case '/to-metadata':
      res.writeHead(307, { location: 'http://169.254.169.254/latest/meta-data/' });
      return res.end();
    default:
      res.writeHead(500);
      res.end();
  }
}

const limits: OriginLimits = { maxBytes: 1024 * 1024, maxRedirects: 3, connectMs: 2_000, idleMs: 500, totalMs: 10_000 };
const origins = (over: Partial<OriginLimits> = {}, allowPrivateNetworks = true) =>
  new Origins({ allowPrivateNetworks }, { ...limits, ...over });

async function bytesOf(body: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of body) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}
const failureOf = (p: Promise<unknown>) =>
  p.then(
    () => {
      throw new Error('expected an ImportFailure');
    },
    (e: unknown) => {
      expect(e).toBeInstanceOf(ImportFailure);
      return e as ImportFailure;
    },
  );

beforeAll(async () => {
  server = await serveOnLoopback(handle);
  base = server.base;
});
afterAll(() => server.close());

describe('reading an import from its origin', () => {
  it('reads a whole file with its length, type and validator', async () => {
    const o = origins();
    const got = await o.open({ url: `${base}/file` });
    expect(got).toMatchObject({
      offset: 0,
      restarted: false,
      length: file.length,
      validator: '"v1"',
      contentType: 'application/octet-stream',
    });
    expect((await bytesOf(got.body)).equals(file)).toBe(true);
    await o.close();
  });

  it('resumes with Range and If-Range: only the rest is sent', async () => {
    const o = origins();
    served = 0;
    const got = await o.open({ url: `${base}/file`, resume: { offset: 50_000, validator: '"v1"', length: file.length } });
    expect(got).toMatchObject({ offset: 50_000, restarted: false, length: file.length });
    const rest = await bytesOf(got.body);
    expect(
      createHash('sha256')
        .update(Buffer.concat([file.subarray(0, 50_000), rest]))
        .digest('hex'),
    ).toBe(createHash('sha256').update(file).digest('hex'));
    expect(served).toBe(file.length - 50_000);
    await o.close();
  });

  it('starts over when the file changed (If-Range answered with the whole file) or the origin has no ranges', async () => {
    const o = origins();
    version = 'v2';
    const changed = await o.open({ url: `${base}/file`, resume: { offset: 50_000, validator: '"v1"', length: file.length } });
    expect(changed).toMatchObject({ offset: 0, restarted: true, validator: '"v2"' });
    expect((await bytesOf(changed.body)).length).toBe(file.length);
    version = 'v1';
    const plain = await o.open({ url: `${base}/no-ranges`, resume: { offset: 10, validator: '"v1"', length: file.length } });
    expect(plain).toMatchObject({ offset: 0, restarted: true });
    await bytesOf(plain.body);
    await o.close();
  });

  it.each([
    ['a changed ETag', 'changed-etag', '"v1"'],
    ['a weak ETag', 'weak-etag', '"v1"'],
    ['a changed total', 'changed-total', '"v1"'],
    ['a shifted start', 'shifted-start', '"v1"'],
    ['no validators', 'no-validators', '"v1"'],
    ['another Last-Modified', 'changed-last-modified', OLDER_DATE],
  ])('never splices a 206 with %s into the file: it starts over from byte 0', async (_what, mode, validator) => {
    const o = origins();
    const got = await o.open({ url: `${base}/liar?mode=${mode}`, resume: { offset: 50_000, validator, length: file.length } });
    expect(got).toMatchObject({ offset: 0, restarted: true, length: newer.length, validator: '"new-version"' });
    expect((await bytesOf(got.body)).equals(newer)).toBe(true);
    await o.close();
  });

  it('takes the rest of a file that began with Last-Modified while it is unchanged', async () => {
    const o = origins();
    const got = await o.open({
      url: `${base}/liar?mode=same-last-modified`,
      resume: { offset: 50_000, validator: OLDER_DATE, length: file.length },
    });
    expect(got).toMatchObject({ offset: 50_000, restarted: false });
    expect((await bytesOf(got.body)).equals(file.subarray(50_000))).toBe(true);
    await o.close();
  });

  it('follows redirects, each checked, at most maxRedirects of them', async () => {
    const o = origins();
    const two = await o.open({ url: `${base}/hop?n=1` });
    expect(two.finalUrl).toBe(`${base}/file`);
    await bytesOf(two.body);
    const tooMany = await failureOf(o.open({ url: `${base}/hop?n=5` }));
    expect(tooMany.code).toBe('import_failed');
    const metadata = await failureOf(o.open({ url: `${base}/to-metadata` }));
    expect(metadata.code).toBe('import_forbidden_address');
    await o.close();
  });

  it("sends the tenant's headers to the URL's own origin only, never to another one a redirect names", async () => {
    const o = origins();
    const headers = { authorization: 'Bearer private-origin-secret', 'x-api-key': 'k-123' };
    await bytesOf((await o.open({ url: `${base}/to-seen`, headers })).body);
    expect(seen).toMatchObject(headers);
    seen = {};
    const away = await o.open({ url: `${base}/to-localhost-seen`, headers });
    expect(away.finalUrl).toBe(`${base.replace('127.0.0.1', 'localhost')}/seen`);
    expect((await bytesOf(away.body)).equals(file)).toBe(true);
    expect(seen['user-agent']).toBe('Oncely-Import/1');
    expect(seen.authorization).toBeUndefined();
    expect(seen['x-api-key']).toBeUndefined();
    // Once left, the origin is not given them again: the other host chose where to send the read.
    seen = {};
    await bytesOf((await o.open({ url: `${base}/away-and-back`, headers })).body);
    expect(seen['user-agent']).toBe('Oncely-Import/1');
    expect(seen.authorization).toBeUndefined();
    await o.close();
  });

  it('keeps a failure of a body nobody reads yet for its reader: never an unhandled error', async () => {
    const o = origins();
    const got = await o.open({ url: `${base}/trickle` });
    // The connection dropped (a canceled import) while the caller was busy elsewhere.
    await o.destroy();
    await new Promise((r) => setTimeout(r, 100));
    const failure = await failureOf(bytesOf(got.body));
    expect(failure.code).toBe('import_failed');
    await o.close();
  });

  it('lists hosts exactly, and with *.example.com its subdomains only', () => {
    expect(hostListed(['files.example.com'], 'FILES.example.com.')).toBe(true);
    expect(hostListed(['files.example.com'], 'evil-files.example.com')).toBe(false);
    expect(hostListed(['*.example.com'], 'a.b.example.com')).toBe(true);
    expect(hostListed(['*.example.com'], 'example.com')).toBe(false);
    expect(hostListed(['*.example.com'], 'badexample.com')).toBe(false);
    expect(hostListed([], '127.0.0.1')).toBe(false);
  });

  it("keeps every hop on an upload token's hosts", async () => {
    const o = origins();
    const listed = await o.open({ url: `${base}/hop?n=1`, hosts: ['127.0.0.1'] });
    await bytesOf(listed.body);
    const away = await failureOf(o.open({ url: `${base}/to-localhost`, hosts: ['127.0.0.1'] }));
    expect(away).toMatchObject({ code: 'import_forbidden_address', message: expect.stringContaining('localhost') });
    const unlisted = await failureOf(o.open({ url: `${base}/file`, hosts: ['*.example.com'] }));
    expect(unlisted.code).toBe('import_forbidden_address');
    await o.close();
  });

  it('refuses private addresses unless allowed, other schemes and userinfo', async () => {
    const o = origins({}, false);
    expect((await failureOf(o.open({ url: `${base}/file` }))).code).toBe('import_forbidden_address');
    expect((await failureOf(o.open({ url: 'ftp://example.test/file' }))).code).toBe('import_forbidden_address');
    expect((await failureOf(origins().open({ url: base.replace('http://', 'http://u:p@') + '/file' }))).code).toBe(
      'import_forbidden_address',
    );
    await o.close();
  });

  it('answers the origin’s status as import_failed', async () => {
    const failure = await failureOf(origins().open({ url: `${base}/missing` }));
    expect(failure).toMatchObject({ code: 'import_failed', originStatus: 404 });
  });

  it('refuses a declared length past the limit before the body, and an undeclared one while streaming', async () => {
    const huge = await failureOf(origins().open({ url: `${base}/huge` }));
    expect(huge.code).toBe('import_too_large');
    const o = origins({ maxBytes: 50_000 });
    const chunked = await o.open({ url: `${base}/chunked` });
    expect(chunked.length).toBeNull();
    const streamed = await failureOf(bytesOf(chunked.body));
    expect(streamed.code).toBe('import_too_large');
    await o.close();
  });

  it('times out a slow origin, and refuses an encoding it did not ask for', async () => {
    expect((await failureOf(origins().open({ url: `${base}/slow` }))).code).toBe('import_timeout');
    expect((await failureOf(origins().open({ url: `${base}/gzip` }))).code).toBe('import_failed');
  });
});
