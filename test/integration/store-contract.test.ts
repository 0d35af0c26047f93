// One contract, two stores: S3 (versitygw) and the local directory behave the same.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { LocalDirectoryStore } from '../../src/storage/local-store';
import { ANY_AGE, type ObjectStore } from '../../src/storage/store';
import { testS3Store, uniqueName } from '../helpers/stack';
import { listKeys, readObject } from '../helpers/inspect';

const localDir = mkdtempSync(path.join(os.tmpdir(), 'oncely-store-'));
afterAll(() => rmSync(localDir, { recursive: true, force: true }));

function s3Store(singlePutMaxBytes?: number): Promise<ObjectStore> {
  return testS3Store(uniqueName('contract').replaceAll('_', '-'), 5 * 1024 * 1024, singlePutMaxBytes);
}

const stores: [string, () => Promise<ObjectStore>][] = [
  // Known-length bodies stream into one PUT by default; the other variant forces multipart.
  ['s3 (versitygw), streamed PUT', () => s3Store()],
  ['s3 (versitygw), multipart', () => s3Store(0)],
  ['local directory', async () => new LocalDirectoryStore(localDir)],
];

function failingStream(after: Buffer): Readable {
  let sent = false;
  return new Readable({
    read() {
      if (!sent) {
        sent = true;
        this.push(after);
      } else this.destroy(new Error('client went away'));
    },
  });
}

describe.each(stores)('%s store', (_name, make) => {
  it('puts, heads, gets, lists and deletes', async () => {
    const store = await make();
    await store.probe();
    const data = Buffer.from('contract bytes');
    await store.put('tenants/t1/keys/k1/a', Readable.from([data]), { contentType: 'text/plain', contentLength: data.length });
    await store.put('tenants/t1/keys/k1/b', Readable.from([Buffer.from('b')]), { contentType: 'text/plain' });
    await store.put('tenants/t2/keys/k1/a', Readable.from([Buffer.from('other tenant')]), { contentType: 'text/plain' });
    expect(await store.head('tenants/t1/keys/k1/a')).toMatchObject({ key: 'tenants/t1/keys/k1/a', bytes: data.length });
    expect(await readObject(store, 'tenants/t1/keys/k1/a')).toEqual(data);
    const part = await store.get('tenants/t1/keys/k1/a', { start: 3, end: 7 });
    expect(Buffer.concat(await part!.toArray())).toEqual(data.subarray(3, 8));
    const last = await store.get('tenants/t1/keys/k1/a', { start: data.length - 1, end: data.length - 1 });
    expect(Buffer.concat(await last!.toArray()).toString()).toBe('s');
    expect(await store.get('tenants/t1/keys/none', { start: 0, end: 1 })).toBeUndefined();
    expect(await listKeys(store, 'tenants/t1/')).toEqual(['tenants/t1/keys/k1/a', 'tenants/t1/keys/k1/b']);
    await store.delete('tenants/t1/keys/k1/a');
    await store.delete('tenants/t1/keys/k1/a'); // deleting twice is fine
    expect(await store.head('tenants/t1/keys/k1/a')).toBeUndefined();
    expect(await store.get('tenants/t1/keys/k1/a')).toBeUndefined();
    expect(await listKeys(store, 'tenants/t1/')).toEqual(['tenants/t1/keys/k1/b']);
    expect(await listKeys(store, 'tenants/none/')).toEqual([]);
  });

  it('streams a large object (multipart when forced) and reads it back intact', async () => {
    const store = await make();
    const chunk = Buffer.alloc(1024 * 1024, 0xab);
    const parts = 12; // above the 5 MiB part size: exercises multipart on S3
    await store.put('tenants/t1/big', Readable.from(Array.from({ length: parts }, () => chunk)), {
      contentType: 'application/octet-stream',
      contentLength: parts * chunk.length,
    });
    expect((await store.head('tenants/t1/big'))?.bytes).toBe(parts * chunk.length);
    const back = await readObject(store, 'tenants/t1/big');
    expect(back.length).toBe(parts * chunk.length);
    expect(back.every((b) => b === 0xab)).toBe(true);
    expect(await store.abortStaleMultipartUploads(new Date())).toBe(0);
  });

  it("aborts one key's multipart uploads, whatever their age, and no other key's", async () => {
    const store = await make();
    const key = 'tenants/t5/keys/k/copy';
    const longer = `${key}-2`; // shares the key as a prefix
    const other = 'tenants/t5/keys/other/copy';
    const [a1, a2, b, c] = await Promise.all([key, key, longer, other].map((k) => store.beginParts(k, 'text/plain')));
    const part = Buffer.alloc(5 * 1024 * 1024, 1); // S3's smallest part that may be followed by another
    await store.putPart(key, a1!, 1, part);
    expect(await store.abortStaleMultipartUploads(ANY_AGE, key)).toBe(2);
    expect(await store.abortStaleMultipartUploads(ANY_AGE, key)).toBe(0);
    await expect(store.completeParts(key, a2!, [])).rejects.toThrow();
    for (const [k, id] of [
      [longer, b!],
      [other, c!],
    ] as const) {
      const etag = await store.putPart(k, id, 1, Buffer.from('kept'));
      await store.completeParts(k, id, [{ partNumber: 1, etag }]);
      expect((await readObject(store, k)).toString()).toBe('kept');
    }
    expect(await store.head(key)).toBeUndefined();
  });

  it('takes a body that arrives in small uneven pieces (as socket reads may) and reads it back intact', async () => {
    const store = await make();
    let n = 0;
    const pieces = Array.from({ length: 150 }, (_, i) => Buffer.from(Array.from({ length: 1 + ((i * 977) % 7000) }, () => n++ & 0xff)));
    const whole = Buffer.concat(pieces);
    await store.put('tenants/t1/trickled', Readable.from(pieces), { contentType: 'application/octet-stream', contentLength: whole.length });
    expect((await readObject(store, 'tenants/t1/trickled')).equals(whole)).toBe(true);
  });

  it('leaves nothing behind when the source stream fails', async () => {
    const store = await make();
    await expect(store.put('tenants/t3/broken', failingStream(Buffer.alloc(1024, 1)), { contentType: 'text/plain' })).rejects.toThrow();
    expect(await store.head('tenants/t3/broken')).toBeUndefined();
    // With a declared length (the upload path's case): the source fails after 1 KiB of 64 KiB.
    await expect(
      store.put('tenants/t3/broken-known', failingStream(Buffer.alloc(1024, 1)), { contentType: 'text/plain', contentLength: 64 * 1024 }),
    ).rejects.toThrow();
    expect(await store.head('tenants/t3/broken-known')).toBeUndefined();
    expect(await listKeys(store, 'tenants/t3/')).toEqual([]);
  });
});

describe('S3 parts streamed while they arrive', () => {
  it('stores a part that arrives in small uneven pieces, and the assembled object is intact', async () => {
    const store = await s3Store();
    const key = 'tenants/t1/streamed-parts';
    const uploadId = await store.beginParts(key, 'application/octet-stream');
    const part = Buffer.from(Array.from({ length: 5 * 1024 * 1024 }, (_, i) => (i * 7) & 0xff));
    const pieces: Buffer[] = [];
    for (let at = 0, i = 0; at < part.length; i++) {
      const size = Math.min(part.length - at, i % 3 === 0 ? 100 : 9000);
      pieces.push(part.subarray(at, at + size));
      at += size;
    }
    const first = await store.putPartStreamed!(key, uploadId, 1, Readable.from(pieces), part.length);
    const second = await store.putPartStreamed!(key, uploadId, 2, Readable.from([Buffer.from('end')]), 3);
    await store.completeParts(key, uploadId, [
      { partNumber: 1, etag: first },
      { partNumber: 2, etag: second },
    ]);
    expect((await readObject(store, key)).equals(Buffer.concat([part, Buffer.from('end')]))).toBe(true);
  });
});

describe('local directory store', () => {
  it('refuses keys that would escape its root', async () => {
    const store = new LocalDirectoryStore(localDir);
    await expect(store.put('../escape', Readable.from([Buffer.from('x')]), { contentType: 'text/plain' })).rejects.toThrow(/unsafe/);
    await expect(store.head('a/../../b')).rejects.toThrow(/unsafe/);
  });
});

describe('S3 bucket creation at start-up', () => {
  it('processes that start together against a missing bucket all succeed (creation races are not errors)', async () => {
    const { execFile } = await import('node:child_process');
    const { promisify } = await import('node:util');
    const run = promisify(execFile);
    const { s3 } = inject('stack');
    for (let round = 0; round < 3; round++) {
      const bucket = uniqueName('race').replaceAll('_', '-');
      const startAt = String(Date.now() + 1500); // after every process has loaded
      const results = await Promise.all(
        Array.from({ length: 4 }, () =>
          run(process.execPath, [
            '--import',
            'tsx',
            path.join(import.meta.dirname, '../helpers/ensure-bucket.ts'),
            s3.endpoint,
            bucket,
            s3.accessKeyId,
            s3.secretAccessKey,
            startAt,
          ]).then(
            (r) => r.stdout.trim(),
            (e: { stdout: string }) => e.stdout.trim(),
          ),
        ),
      );
      expect(results).toEqual(['ok', 'ok', 'ok', 'ok']);
    }
  }, 60_000);
});
