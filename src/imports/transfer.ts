// One import's bytes from its origin into the store, in whole parts, resumable. After each
// part is stored its progress (the parts, the offset they reach, the origin's validator) is
// reported; an attempt given that progress asks the origin only for the rest (Range and
// If-Range), and one whose origin sends the whole file instead starts the parts over. The
// SHA-256 is known when one attempt read the whole file; after a resume the caller hashes the
// assembled object once.
import { createHash, type Hash } from 'node:crypto';
import { Readable } from 'node:stream';
import type { ObjectStore } from '../storage/store';
import { ImportFailure, type OriginBody, type Origins } from './origin';

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
  /** Set once the object is complete: the type the origin declared. */
  done?: { contentType: string | null };
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
  deps: {
    origins: Origins;
    store: ObjectStore;
    partBytes: number;
    /** Asked once the origin declares the file's length, before any byte is stored: a refusal ends the transfer. */
    sized?: (length: number) => Promise<void>;
  },
  job: TransferJob,
  progress: TransferProgress | undefined,
  report: (p: TransferProgress) => void,
): Promise<Transferred> {
  const { store } = deps;
  // A later attempt of one that completed the object and then failed (recording its progress,
  // its worker killed): the object is the file, and its multipart upload no longer exists.
  if (progress) {
    const complete = await store.head(job.storageKey);
    if (complete) return { bytes: complete.bytes, sha256: null, contentType: progress.done?.contentType ?? null, fetched: 0 };
  }
  const resume =
    progress && progress.offset > 0 && progress.validator
      ? { offset: progress.offset, validator: progress.validator, length: progress.length ?? null }
      : undefined;
  const got = await deps.origins.open({
    url: job.url,
    ...(job.headers ? { headers: job.headers } : {}),
    ...(job.maxBytes !== undefined ? { maxBytes: job.maxBytes } : {}),
    ...(job.hosts ? { hosts: job.hosts } : {}),
    ...(resume ? { resume } : {}),
  });
  if (got.length !== null && deps.sized)
    await deps.sized(got.length).catch(async (err: unknown) => {
      got.body.destroy();
      // A resumed read refused now: the parts an earlier attempt stored go at once, not at housekeeping's sweep.
      if (progress?.multipartId) await store.abortParts(job.storageKey, progress.multipartId).catch(() => undefined);
      throw err;
    });
  const multipartId =
    progress?.multipartId ??
    (await store.beginParts(job.storageKey, job.contentType).catch((err: unknown) => {
      got.body.destroy(); // the origin's connection is let go now, not at the total timeout
      throw err;
    }));
  // A fresh read (or one the origin restarted) writes its parts from part 1 again.
  const state: TransferProgress = {
    multipartId,
    parts: got.offset > 0 ? [...progress!.parts] : [],
    offset: got.offset,
    validator: got.validator,
    length: got.length,
  };
  // Reported before any part: a later attempt reuses the upload, and the last one can abort it.
  report({ ...state, parts: [...state.parts] });
  const hash: Hash | null = got.offset === 0 ? createHash('sha256') : null;
  let fetched = 0;
  const counted = (chunk: Buffer) => {
    fetched += chunk.length;
    hash?.update(chunk);
  };
  const stored = (partNumber: number, etag: string, bytes: number) => {
    state.parts.push({ partNumber, etag });
    state.offset += bytes;
    report({ ...state, parts: [...state.parts] });
  };
  // A store that takes a part as a stream, and a length known beforehand: each part streams
  // from the origin to the store as it arrives (no part held in memory, no stop-and-go).
  const parts: Parts = { ...deps, key: job.storageKey, multipartId, got, state, counted, stored };
  let filled: Buffer | null;
  try {
    filled = store.putPartStreamed && got.length !== null ? await streamParts(parts) : await bufferParts(parts);
  } catch (err) {
    // The origin's connection is let go now, not at the total timeout.
    got.body.destroy();
    throw err;
  }
  const bytes = state.offset + (filled?.length ?? 0);
  if (got.length !== null && bytes !== got.length)
    throw new ImportFailure('import_failed', `The origin sent ${bytes} bytes of the ${got.length} it declared.`);
  if (bytes === 0) {
    // An empty file has no part to complete.
    await store.put(job.storageKey, Readable.from([]), { contentType: job.contentType, contentLength: 0 });
    await store.abortParts(job.storageKey, multipartId);
  } else {
    if (filled)
      stored(state.parts.length + 1, await store.putPart(job.storageKey, multipartId, state.parts.length + 1, filled), filled.length);
    await store.completeParts(job.storageKey, multipartId, state.parts);
  }
  report({ ...state, parts: [...state.parts], done: { contentType: got.contentType } });
  return { bytes, sha256: hash ? hash.digest('hex') : null, contentType: got.contentType, fetched };
}

/** One read's parts: where they go, what the read is, and what each byte and part tells. */
interface Parts {
  store: ObjectStore;
  partBytes: number;
  key: string;
  multipartId: string;
  got: OriginBody;
  state: TransferProgress;
  /** Every byte read, once. */
  counted: (chunk: Buffer) => void;
  /** A part is in the store. */
  stored: (partNumber: number, etag: string, bytes: number) => void;
}

/** Whole parts, each buffered then stored; the bytes after the last whole part are returned (the tail). */
async function bufferParts({ store, partBytes, key, multipartId, got, state, counted, stored }: Parts): Promise<Buffer | null> {
  let buf = Buffer.allocUnsafe(partBytes);
  let filled = 0;
  for await (const chunk of got.body as AsyncIterable<Buffer>) {
    counted(chunk);
    for (let at = 0; at < chunk.length;) {
      const n = Math.min(chunk.length - at, partBytes - filled);
      chunk.copy(buf, filled, at, at + n);
      filled += n;
      at += n;
      if (filled === partBytes) {
        const partNumber = state.parts.length + 1;
        stored(partNumber, await store.putPart(key, multipartId, partNumber, buf), buf.length);
        buf = Buffer.allocUnsafe(partBytes);
        filled = 0;
      }
    }
  }
  return filled > 0 ? buf.subarray(0, filled) : null;
}

/**
 * Every part streamed from the origin to the store as it arrives (the file's length is known).
 * The next part starts once this one's bytes are all read, while the store still answers for
 * it: the origin is never paused for a round trip. Parts are recorded in order, so a resume
 * starts after the last part stored with all before it.
 */
async function streamParts({ store, partBytes, key, multipartId, got, state, counted, stored }: Parts): Promise<null> {
  const length = got.length!;
  const source = (got.body as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
  let carry: Buffer | undefined;
  /** The next `n` bytes of the body from `from`, ending early only with an ImportFailure; `read` once all are. */
  async function* next(n: number, from: number, read: () => void): AsyncGenerator<Buffer> {
    for (let left = n; left > 0;) {
      let chunk = carry ?? (await source.next()).value;
      carry = undefined;
      if (!chunk) throw new ImportFailure('import_failed', `The origin sent ${from + n - left} bytes of the ${length} it declared.`);
      if (chunk.length > left) {
        carry = chunk.subarray(left);
        chunk = chunk.subarray(0, left);
      }
      left -= chunk.length;
      counted(chunk);
      yield chunk;
    }
    read();
  }
  const answered = new Map<number, { etag: string; bytes: number }>();
  const recordInOrder = () => {
    for (let n = state.parts.length + 1; answered.has(n); n = state.parts.length + 1) {
      const part = answered.get(n)!;
      answered.delete(n);
      stored(n, part.etag, part.bytes);
    }
  };
  const inFlight: Promise<void>[] = [];
  try {
    for (let sent = state.offset, partNumber = state.parts.length + 1; sent < length; partNumber++) {
      const size = Math.min(partBytes, length - sent);
      const n = partNumber;
      let read!: () => void;
      const allRead = new Promise<void>((resolve) => (read = resolve));
      const put = store.putPartStreamed!(key, multipartId, n, Readable.from(next(size, sent, read)), size).then((etag) => {
        answered.set(n, { etag, bytes: size });
        recordInOrder();
      });
      inFlight.push(put);
      sent += size;
      await Promise.race([allRead, put]);
      // At most two parts in flight: this one, read, and the one before it.
      if (inFlight.length > 1) await inFlight.shift();
    }
    await Promise.all(inFlight);
  } catch (err) {
    // What did reach the store stays recorded for the next attempt.
    await Promise.allSettled(inFlight);
    throw err;
  }
  if (carry || !(await source.next()).done)
    throw new ImportFailure('import_failed', `The origin sent more than the ${length} bytes it declared.`);
  return null;
}
