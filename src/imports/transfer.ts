// One import's bytes from its origin into the store, in whole parts, resumable. After each
// part is stored its progress (the parts, the offset they reach, the origin's validator) is
// reported; an attempt given that progress asks the origin only for the rest (Range and
// If-Range), and one whose origin sends the whole file instead starts the parts over. The
// SHA-256 is known when one attempt read the whole file; after a resume the caller hashes the
// assembled object once.
import { createHash, type Hash } from 'node:crypto';
import { Readable } from 'node:stream';
import type { ObjectStore } from '../storage/store';
import { ImportFailure, type Origins } from './origin';

/** How far an import got: reported after every stored part, handed to the next attempt. */
export interface TransferProgress {
  multipartId: string;
  parts: { partNumber: number; etag: string }[];
  /** Bytes in the stored parts: where a resume starts. */
  offset: number;
  /** The origin's validator for If-Range; null: a resume starts over. */
  validator: string | null;
  /** The file's length, when the origin declared it. */
  length?: number | null;
}

export interface Transferred {
  bytes: number;
  /** The file's SHA-256 when this attempt read all of it; null after a resume. */
  sha256: string | null;
  /** The type the origin declared. */
  contentType: string | null;
  /** Bytes this attempt read from the origin. */
  fetched: number;
}

export interface TransferJob {
  url: string;
  hosts?: readonly string[];
  headers?: Record<string, string>;
  maxBytes?: number;
  storageKey: string;
  contentType: string;
}

export async function transfer(
  deps: { origins: Origins; store: ObjectStore; partBytes: number },
  job: TransferJob,
  progress: TransferProgress | undefined,
  report: (p: TransferProgress) => void,
): Promise<Transferred> {
  const { store, partBytes } = deps;
  const resume =
    progress && progress.offset > 0 && progress.validator ? { offset: progress.offset, validator: progress.validator } : undefined;
  const got = await deps.origins.open({
    url: job.url,
    ...(job.headers ? { headers: job.headers } : {}),
    ...(job.maxBytes !== undefined ? { maxBytes: job.maxBytes } : {}),
    ...(job.hosts ? { hosts: job.hosts } : {}),
    ...(resume ? { resume } : {}),
  });
  const multipartId = progress?.multipartId ?? (await store.beginParts(job.storageKey, job.contentType));
  // A fresh read (or one the origin restarted) writes its parts from part 1 again.
  const state: TransferProgress = {
    multipartId,
    parts: got.offset > 0 ? [...progress!.parts] : [],
    offset: got.offset,
    validator: got.validator,
    length: got.length,
  };
  const hash: Hash | null = got.offset === 0 ? createHash('sha256') : null;
  let buf = Buffer.allocUnsafe(partBytes);
  let filled = 0;
  let fetched = 0;
  const storePart = async (bytes: Buffer) => {
    const partNumber = state.parts.length + 1;
    const etag = await store.putPart(job.storageKey, multipartId, partNumber, bytes);
    state.parts.push({ partNumber, etag });
    state.offset += bytes.length;
    report({ ...state, parts: [...state.parts] });
  };
  for await (const chunk of got.body as AsyncIterable<Buffer>) {
    fetched += chunk.length;
    hash?.update(chunk);
    for (let at = 0; at < chunk.length;) {
      const n = Math.min(chunk.length - at, partBytes - filled);
      chunk.copy(buf, filled, at, at + n);
      filled += n;
      at += n;
      if (filled === partBytes) {
        await storePart(buf);
        buf = Buffer.allocUnsafe(partBytes);
        filled = 0;
      }
    }
  }
  const bytes = state.offset + filled;
  if (got.length !== null && bytes !== got.length)
    throw new ImportFailure('import_failed', `The origin sent ${bytes} bytes of the ${got.length} it declared.`);
  if (bytes === 0) {
    // An empty file has no part to complete.
    await store.put(job.storageKey, Readable.from([]), { contentType: job.contentType, contentLength: 0 });
    await store.abortParts(job.storageKey, multipartId);
  } else {
    if (filled > 0) await storePart(buf.subarray(0, filled));
    await store.completeParts(job.storageKey, multipartId, state.parts);
  }
  return { bytes, sha256: hash ? hash.digest('hex') : null, contentType: got.contentType, fetched };
}
