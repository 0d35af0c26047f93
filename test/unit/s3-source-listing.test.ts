// Every remote listing is bounded: by pages, by time, by a page named twice, and it stops when
// its caller does (a request that ended, a run that was cancelled). Against an S3 listing this
// test serves on 127.0.0.1 that always says "more", answers slowly, or never answers.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Problem } from '../../src/errors';
import { listSource, probeSource, type S3Source } from '../../src/imports/s3-source';
import { serveOnLoopback, type LoopbackServer } from '../support/loopback';

let server: LoopbackServer;
let asked = 0;
/** Requests that are never answered, ended by the test's cleanup. */
const held: ServerResponse[] = [];

function page(res: ServerResponse, token: string | undefined, keys: string[] = []) {
  res.writeHead(200, { 'content-type': 'application/xml' });
  res.end(
    '<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix></Prefix>' +
      keys.map((k) => `<Contents><Key>${k}</Key><Size>1</Size></Contents>`).join('') +
      `<KeyCount>${keys.length}</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>${token ? 'true' : 'false'}</IsTruncated>` +
      (token ? `<NextContinuationToken>${token}</NextContinuationToken>` : '') +
      '</ListBucketResult>',
  );
}

beforeAll(async () => {
  server = await serveOnLoopback((req: IncomingMessage, res: ServerResponse) => {
    asked++;
    req.resume();
    const bucket = new URL(req.url ?? '/', 'http://x').pathname.split('/')[1];
    if (bucket === 'endless') return page(res, `t-${asked}`);
    if (bucket === 'circle') return page(res, 'same-token');
    if (bucket === 'silent') return void held.push(res);
    if (bucket === 'slow') return void setTimeout(() => page(res, `t-${asked}`), 100);
    return page(res, undefined, ['a.txt', 'b/c.txt', 'folder/']);
  });
});
afterAll(async () => {
  for (const res of held) res.destroy();
  await server.close();
});

const source = (bucket: string): S3Source => ({
  endpoint: server.base,
  region: 'us-east-1',
  bucket,
  prefix: '',
  accessKeyId: 'k',
  secretAccessKey: 's',
});
const guard = { allowPrivateNetworks: true, connectMs: 2_000 };

async function refusal(p: Promise<unknown>): Promise<Problem> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(Problem);
  return err as Problem;
}

it('lists the objects of a source that ends, folder markers left out', async () => {
  const items = await listSource(source('plain'), { ...guard, maxItems: 10, maxPages: 5, maxMs: 10_000 });
  expect(items.map((i) => i.url)).toEqual([`${server.base}/plain/a.txt`, `${server.base}/plain/b/c.txt`]);
});

it('stops a listing that always says "more" at its page bound', async () => {
  asked = 0;
  const err = await refusal(listSource(source('endless'), { ...guard, maxItems: 10, maxPages: 7, maxMs: 10_000 }));
  expect(err.code).toBe('import_source_invalid');
  expect(err.detail).toMatch(/within 7 pages/);
  expect(asked).toBe(7);
});

it('stops a listing that names a page it already gave', async () => {
  const err = await refusal(listSource(source('circle'), { ...guard, maxItems: 10, maxPages: 100, maxMs: 10_000 }));
  expect(err.detail).toMatch(/circle/);
});

it('stops a listing at its time bound, even mid-request', async () => {
  const started = Date.now();
  const err = await refusal(listSource(source('slow'), { ...guard, maxItems: 10, maxPages: 1_000, maxMs: 700 }));
  expect(err.detail).toMatch(/within 1 s/);
  expect(Date.now() - started).toBeLessThan(5_000);
  const silent = await refusal(probeSource(source('silent'), { ...guard, maxMs: 500 }));
  expect(silent.detail).toMatch(/did not end within/);
});

it('stops when its caller does (the request ended, the run was cancelled)', async () => {
  const caller = new AbortController();
  const started = Date.now();
  setTimeout(() => caller.abort(new Error('the request ended')), 300);
  await expect(probeSource(source('silent'), { ...guard, maxMs: 60_000, signal: caller.signal })).rejects.toThrow('the request ended');
  expect(Date.now() - started).toBeLessThan(5_000);
});

it('refuses in the request what is plainly empty, and leaves the rest to the run', async () => {
  await expect(probeSource(source('endless'), { ...guard, maxMs: 5_000 })).resolves.toBeUndefined();
  await expect(probeSource(source('plain'), { ...guard, maxMs: 5_000 })).resolves.toBeUndefined();
});
