// Proving a storage target before it is registered or its credentials change: the bucket
// answers, an object is written, read back and deleted, and a multipart upload completes.
// A target that fails is refused with the step and the store's own words.
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { problem } from '../errors';
import type { ObjectStore } from '../storage/store';

const PROBE_BYTES = Buffer.from('oncely storage target probe\n');

/** The store's own words for a failure: its error code, message and HTTP status. */
export function storeWords(err: unknown): string {
  const e = err as { name?: string; message?: string; Code?: string; $metadata?: { httpStatusCode?: number } };
  const status = e?.$metadata?.httpStatusCode;
  const message = e?.message && e.message !== e.name && e.message !== 'UnknownError' ? `: ${e.message}` : '';
  return `${e?.Code ?? e?.name ?? 'Error'}${message}${status ? ` (HTTP ${status})` : ''}`;
}

export async function proveTarget(store: ObjectStore, prefix: string): Promise<void> {
  const key = `${prefix}.oncely-probe/${randomUUID()}`;
  const step = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (err) {
      throw problem('storage_target_refused', `The target failed to ${what}: ${storeWords(err)}.`, { cause: err });
    }
  };
  await step('answer for its bucket', () => store.probe());
  try {
    await step('store an object', () =>
      store.put(key, Readable.from([PROBE_BYTES]), { contentType: 'text/plain', contentLength: PROBE_BYTES.length }),
    );
    const read = await step('read the object back', async () => {
      const body = await store.get(key);
      if (!body) throw new Error('the object it stored is not there');
      const chunks: Buffer[] = [];
      for await (const c of body) chunks.push(c as Buffer);
      return Buffer.concat(chunks);
    });
    if (!read.equals(PROBE_BYTES)) throw problem('storage_target_refused', 'The target answered other bytes than it was given.');
    await step('complete a multipart upload', async () => {
      const uploadId = await store.beginParts(`${key}.parts`, 'text/plain');
      const etag = await store.putPart(`${key}.parts`, uploadId, 1, PROBE_BYTES);
      await store.completeParts(`${key}.parts`, uploadId, [{ partNumber: 1, etag }]);
    });
    await step('delete an object', async () => {
      await store.delete(key);
      if (await store.head(key)) throw new Error('the object is still there after its delete');
    });
  } finally {
    await Promise.allSettled([store.delete(key), store.delete(`${key}.parts`)]);
  }
}
