// The stores of registered targets, for the routed store (src/storage/routed-store.ts): a
// target's row read once, its client kept while the row's version stands. Every process reads
// the row again after a few seconds, so rotated credentials reach the API and the workers
// without a restart.
import type { Pool } from '../db/pool';
import { findStorageTarget, type StorageTargetRow } from '../db/queries/storage-targets';
import { problem } from '../errors';
import { storageTargetSecretContext, type SecretBox } from '../secret-box';
import { S3Store } from '../storage/s3-store';
import type { S3Encryption } from '../storage/s3-encryption';
import type { TargetStore } from '../storage/routed-store';

/** How a registered target's client is tuned: the instance store's part sizes and encryption. */
export interface TargetClientSettings {
  partSizeBytes: number;
  queueSize: number;
  singlePutMaxBytes: number;
  encryption?: S3Encryption;
}

/** The S3 store of a target's row (its secret opened). */
export function targetStore(row: StorageTargetRow, box: SecretBox, settings: TargetClientSettings): S3Store {
  return new S3Store({
    endpoint: row.endpoint,
    bucket: row.bucket,
    region: row.region,
    forcePathStyle: row.force_path_style,
    accessKeyId: row.access_key_id,
    secretAccessKey: box.open(row.secret_access_key, storageTargetSecretContext(row.id)),
    ...settings,
    // Its own encryption, else the instance's.
    ...(row.encryption ? { encryption: row.encryption } : {}),
  });
}

interface Cached {
  version: number;
  readAt: number;
  target: TargetStore & { store: S3Store };
}

export class TargetDirectory {
  private readonly cache = new Map<string, Cached>();
  private readonly pending = new Map<string, Promise<Cached>>();

  constructor(private readonly deps: { pool: Pool; box: SecretBox; settings: TargetClientSettings; refreshMs?: number }) {}

  /** The store a target's objects are in (a removed target still serves what names it). */
  readonly resolve = async (targetId: string): Promise<TargetStore> => {
    const cached = this.cache.get(targetId);
    if (cached && Date.now() - cached.readAt < (this.deps.refreshMs ?? 5_000)) return cached.target;
    let read = this.pending.get(targetId);
    if (!read) {
      read = this.read(targetId, cached).finally(() => this.pending.delete(targetId));
      this.pending.set(targetId, read);
    }
    return (await read).target;
  };

  private async read(targetId: string, cached: Cached | undefined): Promise<Cached> {
    let row: StorageTargetRow | undefined;
    try {
      row = await findStorageTarget(this.deps.pool, targetId);
    } catch (err) {
      // The database is away for a moment: the client already made still works.
      if (cached) return cached;
      throw problem('database_unavailable', undefined, { cause: err });
    }
    if (!row) throw problem('storage_unavailable', `An object names storage target ${targetId}, which does not exist.`);
    if (cached && cached.version === row.version) {
      cached.readAt = Date.now();
      return cached;
    }
    cached?.target.store.destroy();
    const fresh: Cached = {
      version: row.version,
      readAt: Date.now(),
      target: { store: targetStore(row, this.deps.box, this.deps.settings), prefix: row.prefix },
    };
    this.cache.set(targetId, fresh);
    return fresh;
  }

  close(): void {
    for (const c of this.cache.values()) c.target.store.destroy();
    this.cache.clear();
  }
}
