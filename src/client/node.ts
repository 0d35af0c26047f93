// Node side of the client: pending uploads from files (SHA-256 computed once, streamed),
// a JSON-file outbox written atomically, and file bodies with progress.
import { createHash, randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Outbox, PendingUpload, UploadBody } from './types';

const TYPES: Record<string, string> = {
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.png': 'image/png',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.avif': 'image/avif',
  '.tif': 'image/tiff',
  '.tiff': 'image/tiff',
  '.mp4': 'video/mp4',
  '.mov': 'video/quicktime',
  '.webm': 'video/webm',
  '.mp3': 'audio/mpeg',
  '.wav': 'audio/wav',
  '.m4a': 'audio/mp4',
  '.pdf': 'application/pdf',
  '.txt': 'text/plain',
  '.json': 'application/json',
};

export function contentTypeFor(file: string): string {
  return TYPES[path.extname(file).toLowerCase()] ?? 'application/octet-stream';
}

export async function sha256File(file: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(file), hash);
  return hash.digest('hex');
}

/** Mints the key and hashes the file once; call this before the first attempt and persist it. */
export async function pendingFromFile(file: string, opts: { contentType?: string } = {}): Promise<PendingUpload> {
  const abs = path.resolve(file);
  const s = await stat(abs);
  return {
    id: randomUUID(),
    idempotencyKey: `oncely-${randomUUID()}`,
    sha256: await sha256File(abs),
    bytes: s.size,
    contentType: opts.contentType ?? contentTypeFor(abs),
    fileName: path.basename(abs),
    source: abs,
    createdAt: new Date().toISOString(),
    attempts: 0,
  };
}

/** Opens a file body for one attempt, counting bytes as fetch reads them. */
export async function openFileBody(pending: PendingUpload, onBytes: (n: number) => void): Promise<UploadBody> {
  const counter = new Transform({
    transform(chunk: Buffer, _e, cb) {
      onBytes(chunk.length);
      cb(null, chunk);
    },
  });
  return Readable.toWeb(createReadStream(pending.source).pipe(counter)) as unknown as UploadBody;
}

/** Opens bytes [start, end) of a file (one resumable PATCH), counting bytes as they are read. */
export async function openFileRange(pending: PendingUpload, start: number, end: number, onBytes: (n: number) => void): Promise<UploadBody> {
  if (end <= start) return new Uint8Array(0);
  const counter = new Transform({
    transform(chunk: Buffer, _e, cb) {
      onBytes(chunk.length);
      cb(null, chunk);
    },
  });
  return Readable.toWeb(createReadStream(pending.source, { start, end: end - 1 }).pipe(counter)) as unknown as UploadBody;
}

/** Pending uploads in one JSON file, replaced atomically (write + rename) on every change. */
export class FileOutbox implements Outbox {
  private chain: Promise<unknown> = Promise.resolve();

  constructor(readonly file: string) {}

  async list(): Promise<PendingUpload[]> {
    try {
      return JSON.parse(await readFile(this.file, 'utf8')) as PendingUpload[];
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
  }

  put(item: PendingUpload): Promise<void> {
    return this.update((items) => [...items.filter((i) => i.id !== item.id), item]);
  }

  remove(id: string): Promise<void> {
    return this.update((items) => items.filter((i) => i.id !== id));
  }

  private update(fn: (items: PendingUpload[]) => PendingUpload[]): Promise<void> {
    const next = this.chain.then(async () => {
      const items = fn(await this.list());
      await mkdir(path.dirname(this.file), { recursive: true });
      const tmp = `${this.file}.${process.pid}.tmp`;
      await writeFile(tmp, JSON.stringify(items, null, 2));
      await rename(tmp, this.file);
    });
    this.chain = next.catch(() => {});
    return next;
  }
}
