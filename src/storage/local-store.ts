// Object store over a local directory: the embedded default. Writes go to a temporary
// file that is renamed into place, so a reader never sees a half-written object.
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import type { ObjectStore, PutOptions, StoredObject } from './store';

const SAFE_KEY = /^[A-Za-z0-9][A-Za-z0-9/_.:-]*$/;
const TMP_MARK = '.partial-';

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

  async get(key: string): Promise<Readable | undefined> {
    const file = this.pathOf(key);
    if (!(await this.head(key))) return undefined;
    return createReadStream(file);
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

  async abortStaleMultipartUploads(): Promise<number> {
    return 0; // a directory has no multipart uploads; partial files are removed on failure
  }

  async probe(): Promise<void> {
    await mkdir(this.root, { recursive: true });
    await stat(this.root);
  }
}
