// Object store over a local directory: the embedded default. Writes go to a temporary
// file that is renamed into place, so a reader never sees a half-written object.
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createHash, randomUUID } from 'node:crypto';
import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import type { ObjectStore, PutOptions, StoredObject } from './store';

const SAFE_KEY = /^[A-Za-z0-9][A-Za-z0-9/_.:-]*$/;
const TMP_MARK = '.partial-';
const PARTS_DIR = '.parts';
/** In a parts directory, beside the numbered parts: the object's key. */
const PARTS_KEY_FILE = 'key';
/** Reads in 1 MiB chunks: fewer, larger writes to the socket than the 64 KiB default. */
const READ_CHUNK_BYTES = 1024 * 1024;

export class LocalDirectoryStore implements ObjectStore {
  readonly kind = 'local' as const;

  constructor(private readonly root: string) {}

  private pathOf(key: string): string {
    if (!SAFE_KEY.test(key) || key.split('/').some((s) => s === '..' || s === '.' || s === '')) {
      throw new Error(`unsafe object key: ${key}`);
    }
    return path.join(this.root, key);
  }

  async put(key: string, body: Readable, _opts: PutOptions): Promise<void> {
    const file = this.pathOf(key);
    await mkdir(path.dirname(file), { recursive: true });
    const tmp = `${file}${TMP_MARK}${randomUUID()}`;
    try {
      await pipeline(body, createWriteStream(tmp, { flags: 'wx' }));
      await rename(tmp, file);
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
  }

  async get(key: string, range?: { start: number; end: number }): Promise<Readable | undefined> {
    const file = this.pathOf(key);
    if (!(await this.head(key))) return undefined;
    return createReadStream(file, { ...range, highWaterMark: READ_CHUNK_BYTES });
  }

  async head(key: string): Promise<StoredObject | undefined> {
    try {
      const s = await stat(this.pathOf(key));
      return s.isFile() ? { key, bytes: s.size, lastModified: s.mtime } : undefined;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    await rm(this.pathOf(key), { force: true });
  }

  async *list(prefix: string): AsyncIterable<StoredObject> {
    const dir = prefix.endsWith('/') ? prefix.slice(0, -1) : path.posix.dirname(prefix);
    const start = dir === '' || dir === '.' ? this.root : this.pathOf(dir);
    let entries: string[];
    try {
      entries = (await readdir(start, { recursive: true })) as string[];
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    for (const rel of entries.sort()) {
      if (rel.includes(TMP_MARK)) continue;
      const key = path.posix.join(dir === '.' ? '' : dir, rel.split(path.sep).join('/'));
      if (!key.startsWith(prefix)) continue;
      const s = await stat(path.join(start, rel)).catch(() => undefined);
      if (s?.isFile()) yield { key, bytes: s.size, lastModified: s.mtime };
    }
  }

  // Parts live under .parts/{uploadId}/ beside the objects (outside every tenant prefix);
  // completing concatenates them into a temporary file renamed into place.
  private partsDir(uploadId: string): string {
    if (!/^[0-9a-f-]{36}$/.test(uploadId)) throw new Error(`unsafe upload id: ${uploadId}`);
    return path.join(this.root, PARTS_DIR, uploadId);
  }

  async beginParts(key: string): Promise<string> {
    this.pathOf(key);
    const uploadId = randomUUID();
    await mkdir(this.partsDir(uploadId), { recursive: true });
    // Which object the parts are for: aborting a key's parts finds them by it.
    await writeFile(path.join(this.partsDir(uploadId), PARTS_KEY_FILE), key);
    return uploadId;
  }

  async putPart(_key: string, uploadId: string, partNumber: number, bytes: Buffer): Promise<string> {
    const file = path.join(this.partsDir(uploadId), String(partNumber));
    const tmp = `${file}${TMP_MARK}${randomUUID()}`;
    await writeFile(tmp, bytes);
    await rename(tmp, file);
    return `"${createHash('md5').update(bytes).digest('hex')}"`;
  }

  async completeParts(key: string, uploadId: string, parts: { partNumber: number; etag: string }[]): Promise<void> {
    const dir = this.partsDir(uploadId);
    if (!(await stat(dir).catch(() => undefined))) {
      if (await this.head(key)) return; // completed by an earlier attempt
      throw new Error(`no such upload ${uploadId}`);
    }
    const file = this.pathOf(key);
    await mkdir(path.dirname(file), { recursive: true });
    const tmp = `${file}${TMP_MARK}${randomUUID()}`;
    try {
      const out = createWriteStream(tmp, { flags: 'wx' });
      for (const p of parts) await pipeline(createReadStream(path.join(dir, String(p.partNumber))), out, { end: false });
      await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
      await rename(tmp, file);
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
    await rm(dir, { recursive: true, force: true });
  }

  async abortParts(_key: string, uploadId: string): Promise<void> {
    await rm(this.partsDir(uploadId), { recursive: true, force: true });
  }

  async abortStaleMultipartUploads(olderThan: Date, key?: string): Promise<number> {
    const root = path.join(this.root, PARTS_DIR);
    let aborted = 0;
    for (const id of await readdir(root).catch(() => [] as string[])) {
      const s = await stat(path.join(root, id)).catch(() => undefined);
      if (!s || s.mtime >= olderThan) continue;
      if (key !== undefined && (await readFile(path.join(root, id, PARTS_KEY_FILE), 'utf8').catch(() => undefined)) !== key) continue;
      await rm(path.join(root, id), { recursive: true, force: true });
      aborted++;
    }
    return aborted;
  }

  async probe(): Promise<void> {
    await mkdir(this.root, { recursive: true });
    await stat(this.root);
  }
}
