// An import's bytes into the store in whole parts, against an origin on 127.0.0.1 that cuts
// the first read mid-file: the next attempt, given the reported progress, fetches only the
// rest (Range), and the object is the file; an attempt after the object was completed answers
// it without reading again. Both ways a part reaches the store: buffered
// (the directory store) and streamed as it arrives (a store with putPartStreamed, as S3).
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Origins } from '../../src/imports/origin';
import { transfer, type TransferProgress } from '../../src/imports/transfer';
import { LocalDirectoryStore } from '../../src/storage/local-store';
import { partStored, startFileOrigin, type FileOrigin } from '../support/file-origin';

const KiB = 1024;
const file = randomBytes(300 * KiB);
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
let origin: FileOrigin;
let dir = '';

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'oncely-import-'));
  origin = await startFileOrigin(file, { contentType: 'image/png' });
});
afterAll(async () => {
  await origin.close();
  rmSync(dir, { recursive: true, force: true });
});

const origins = new Origins(
  { allowPrivateNetworks: true },
  { maxBytes: 1024 * KiB, maxRedirects: 3, connectMs: 2_000, idleMs: 2_000, totalMs: 10_000 },
);

/** A directory store that also takes parts as streams (as the S3 store does), counting them. */
class StreamingStore extends LocalDirectoryStore {
  streamedParts = 0;
  async putPartStreamed(key: string, uploadId: string, partNumber: number, body: Readable, bytes: number): Promise<string> {
    const chunks: Buffer[] = [];
    for await (const c of body) chunks.push(c as Buffer);
    const part = Buffer.concat(chunks);
    if (part.length !== bytes) throw new Error(`part ${partNumber}: ${part.length} bytes, ${bytes} declared`);
    this.streamedParts++;
    return this.putPart(key, uploadId, partNumber, part);
  }
}

describe.each([
  ['buffered', (d: string) => new LocalDirectoryStore(d)],
  ['streamed', (d: string) => new StreamingStore(d)],
] as const)('transferring an import into the store, parts %s', (mode, storeAt) => {
  it('stores a whole read in parts and knows its SHA-256', async () => {
    const store = storeAt(path.join(dir, `a-${mode}`));
    const reports: TransferProgress[] = [];
    const job = { url: `${origin.base}/f`, storageKey: 'tenants/t/keys/k/whole', contentType: 'image/png' };
    const got = await transfer({ origins, store, partBytes: 64 * KiB }, job, undefined, (p) => reports.push(p));
    expect(got).toEqual({ bytes: file.length, sha256: sha(file), contentType: 'image/png', fetched: file.length });
    // The upload is reported before its first part (a later attempt reuses it, the last aborts it), after each part, and complete.
    expect(reports.map((r) => r.offset)).toEqual([0, 64, 128, 192, 256, 300, 300].map((k) => k * KiB));
    expect(reports.map((r) => Boolean(r.done))).toEqual([false, false, false, false, false, false, true]);
    expect(new Set(reports.map((r) => r.multipartId)).size).toBe(1);
    const stored = await store.get(job.storageKey);
    const chunks: Buffer[] = [];
    for await (const c of stored!) chunks.push(c as Buffer);
    expect(sha(Buffer.concat(chunks))).toBe(sha(file));
    if (store instanceof StreamingStore) expect(store.streamedParts).toBe(5);
  });

  it('answers a later attempt of one that completed the object without fetching or touching the finished upload', async () => {
    const store = storeAt(path.join(dir, `c-${mode}`));
    const job = { url: `${origin.base}/f`, storageKey: 'tenants/t/keys/k/done', contentType: 'application/octet-stream' };
    let progress: TransferProgress | undefined;
    await transfer({ origins, store, partBytes: 64 * KiB }, job, undefined, (p) => (progress = p));
    expect(progress).toMatchObject({ offset: file.length, done: { contentType: 'image/png' } });
    // As when the attempt failed after the object was complete (its progress not yet recorded elsewhere).
    origin.served = 0;
    const again = await transfer({ origins, store, partBytes: 64 * KiB }, job, progress, () => {
      throw new Error('nothing to report');
    });
    expect(again).toEqual({ bytes: file.length, sha256: null, contentType: 'image/png', fetched: 0 });
    expect(origin.served).toBe(0);
  });

  it('resumes after a cut from the last stored part: only the rest is fetched again', async () => {
    const store = storeAt(path.join(dir, `b-${mode}`));
    const job = { url: `${origin.base}/f`, storageKey: 'tenants/t/keys/k/cut', contentType: 'image/png' };
    let progress: TransferProgress | undefined;
    origin.cutNextAfter(150 * KiB, partStored(store, 2));
    origin.served = 0;
    await expect(transfer({ origins, store, partBytes: 64 * KiB }, job, undefined, (p) => (progress = p))).rejects.toMatchObject({
      code: 'import_failed',
    });
    // Two whole parts (128 KiB) were stored of the 150 KiB that arrived.
    expect(progress).toMatchObject({ offset: 128 * KiB, validator: '"f1"' });
    expect(progress!.parts).toHaveLength(2);

    const got = await transfer({ origins, store, partBytes: 64 * KiB }, job, progress, (p) => (progress = p));
    expect(got).toMatchObject({ bytes: file.length, sha256: null, fetched: file.length - 128 * KiB });
    // Re-fetched: what arrived past the last stored part the first time (22 KiB).
    expect(origin.served - file.length).toBe(150 * KiB - 128 * KiB);
    const stored = await store.get(job.storageKey);
    const chunks: Buffer[] = [];
    for await (const c of stored!) chunks.push(c as Buffer);
    expect(sha(Buffer.concat(chunks))).toBe(sha(file));
  });

  it('a resumed read refused once its length is known drops the parts the earlier attempt stored', async () => {
    const store = storeAt(path.join(dir, `c-${mode}`));
    const job = { url: `${origin.base}/f`, storageKey: 'tenants/t/keys/k/refused', contentType: 'image/png' };
    let progress: TransferProgress | undefined;
    origin.cutNextAfter(150 * KiB, partStored(store, 2));
    await expect(transfer({ origins, store, partBytes: 64 * KiB }, job, undefined, (p) => (progress = p))).rejects.toMatchObject({
      code: 'import_failed',
    });
    expect(progress!.parts).toHaveLength(2);
    const refusal = new Error('the byte quota is reached');
    const sized = async () => {
      throw refusal;
    };
    await expect(transfer({ origins, store, partBytes: 64 * KiB, sized }, job, progress, () => undefined)).rejects.toBe(refusal);
    // The earlier attempt's multipart upload is gone: its parts cannot be listed, nor completed.
    await expect(store.completeParts(job.storageKey, progress!.multipartId, progress!.parts)).rejects.toThrow();
    expect(await store.head(job.storageKey)).toBeUndefined();
  });
});

/**
 * A streaming store whose answers for chosen parts come late (after the next part was
 * stored) or as a failure: the transfer reads the next part while the store still answers for
 * one, and records parts only in order.
 */
class LateAnswersStore extends StreamingStore {
  started: number[] = [];
  answered: number[] = [];
  constructor(
    dir: string,
    private readonly late: Set<number>,
    private readonly refuse?: number,
  ) {
    super(dir);
  }
  override async putPartStreamed(key: string, uploadId: string, partNumber: number, body: Readable, bytes: number): Promise<string> {
    this.started.push(partNumber);
    const etag = await super.putPartStreamed(key, uploadId, partNumber, body, bytes);
    // Answered once the next part is in the store, or for the last part at once.
    if (this.late.has(partNumber)) await until(() => this.answered.includes(partNumber + 1) || this.started.length === partNumber);
    this.answered.push(partNumber);
    if (partNumber === this.refuse) throw new Error(`the store refused part ${partNumber}`);
    return etag;
  }
}

async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !done(); i++) await new Promise((r) => setTimeout(r, 2));
  if (!done()) throw new Error('the condition never held');
}

describe('parts streamed while the store still answers for the one before', () => {
  const job = (name: string) => ({ url: `${origin.base}/f`, storageKey: `tenants/t/keys/k/${name}`, contentType: 'image/png' });

  it('reads the next part before the store answers and records parts in order', async () => {
    const store = new LateAnswersStore(path.join(dir, 'late'), new Set([1, 3]));
    const reports: TransferProgress[] = [];
    const got = await transfer({ origins, store, partBytes: 64 * KiB }, job('late'), undefined, (p) => reports.push(p));
    expect(got).toMatchObject({ bytes: file.length, sha256: sha(file) });
    // Part 2 was answered before part 1, part 4 before part 3 …
    expect(store.answered.indexOf(2)).toBeLessThan(store.answered.indexOf(1));
    expect(store.answered.indexOf(4)).toBeLessThan(store.answered.indexOf(3));
    // … yet the progress only ever names a run of parts from the first.
    for (const r of reports) expect(r.parts.map((p) => p.partNumber)).toEqual(r.parts.map((_, i) => i + 1));
    expect(reports.map((r) => r.offset)).toEqual([0, 64, 128, 192, 256, 300, 300].map((k) => k * KiB));
  });

  /** The transfer into `store` fails with `refusal`, and the origin (paced at 100 KiB/s) is not read to the end. */
  async function expectOriginLetGo(store: LocalDirectoryStore, name: string, refusal: string) {
    origin.throttle(100 * KiB);
    origin.served = 0;
    try {
      await expect(transfer({ origins, store, partBytes: 64 * KiB }, job(name), undefined, () => {})).rejects.toThrow(refusal);
      // Paced at 100 KiB/s the whole file would be sent within 3 s if the connection stayed open.
      await new Promise((r) => setTimeout(r, 3_500));
      expect(origin.served).toBeLessThan(file.length);
    } finally {
      origin.throttle(undefined);
    }
  }

  it('lets go of the origin as soon as a part fails, not at the total timeout', async () => {
    await expectOriginLetGo(new LateAnswersStore(path.join(dir, 'let-go'), new Set(), 1), 'let-go', 'the store refused part 1');
  });

  it('lets go of the origin when the store cannot begin the parts', async () => {
    const store = new LocalDirectoryStore(path.join(dir, 'no-begin'));
    store.beginParts = () => Promise.reject(new Error('the store refused to begin'));
    await expectOriginLetGo(store, 'no-begin', 'the store refused to begin');
  });

  it('a part the store refuses leaves only the parts before it recorded; the resume stores the rest', async () => {
    const store = new LateAnswersStore(path.join(dir, 'refused'), new Set([2]), 2);
    let progress: TransferProgress | undefined;
    await expect(transfer({ origins, store, partBytes: 64 * KiB }, job('refused'), undefined, (p) => (progress = p))).rejects.toThrow(
      'the store refused part 2',
    );
    // Part 3 reached the store before part 2's refusal, but a resume must start at part 2.
    expect(store.answered).toContain(3);
    expect(progress!.parts.map((p) => p.partNumber)).toEqual([1]);
    expect(progress!.offset).toBe(64 * KiB);

    origin.served = 0;
    const again = new StreamingStore(path.join(dir, 'refused'));
    const got = await transfer({ origins, store: again, partBytes: 64 * KiB }, job('refused'), progress, (p) => (progress = p));
    expect(got).toMatchObject({ bytes: file.length, fetched: file.length - 64 * KiB });
    const stored = await again.get(job('refused').storageKey);
    const chunks: Buffer[] = [];
    for await (const c of stored!) chunks.push(c as Buffer);
    expect(sha(Buffer.concat(chunks))).toBe(sha(file));
  });
});
