// The narrow object-store interface the upload path owns. Two implementations plug in:
// S3 (any S3-compatible server) and a local directory (the embedded default). Both pass
// the same contract tests (test/integration/store-contract.test.ts).
import type { Readable } from 'node:stream';

export interface StoredObject {
  key: string;
  bytes: number;
  lastModified: Date;
}

export interface PutOptions {
  contentType: string;
  /** Known length of the body; lets the store choose single-part vs multipart. */
  contentLength?: number;
}

export interface ObjectStore {
  readonly kind: 's3' | 'local';
  /** Writes the whole stream at `key`; on any stream or store error nothing is left at `key`. */
  put(key: string, body: Readable, opts: PutOptions): Promise<void>;
  /** Reads an object; undefined when it does not exist. */
  get(key: string): Promise<Readable | undefined>;
  head(key: string): Promise<StoredObject | undefined>;
  /** Deleting a missing object is not an error (retries stay no-ops). */
  delete(key: string): Promise<void>;
  list(prefix: string): AsyncIterable<StoredObject>;
  /**
   * Parts assembled into one object at `key` (resumable sessions). Parts are whole buffers
   * of at least 5 MiB but the last; re-sending a part number replaces it; `completeParts`
   * with the parts in order makes the object, `abortParts` drops them (both retry-safe).
   */
  beginParts(key: string, contentType: string): Promise<string>;
  putPart(key: string, uploadId: string, partNumber: number, bytes: Buffer): Promise<string>;
  completeParts(key: string, uploadId: string, parts: { partNumber: number; etag: string }[]): Promise<void>;
  abortParts(key: string, uploadId: string): Promise<void>;
  /** Aborts multipart uploads started before `olderThan`; returns how many. */
  abortStaleMultipartUploads(olderThan: Date): Promise<number>;
  /** Throws when the store cannot be reached (for /readyz). */
  probe(): Promise<void>;
}
