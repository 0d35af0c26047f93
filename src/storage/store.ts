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
  /** Reads an object, or bytes `start` to `end` (inclusive) of it; undefined when it does not exist. */
  get(key: string, range?: { start: number; end: number }): Promise<Readable | undefined>;
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
  /**
   * A part sent while its bytes still arrive: exactly `bytes` bytes from `body`; destroying
   * `body` aborts it and the store keeps nothing of it. Present where a part's PUT takes
   * long enough to be worth overlapping with its arrival (S3); the caller keeps the bytes
   * and falls back to `putPart`.
   */
  putPartStreamed?(key: string, uploadId: string, partNumber: number, body: Readable, bytes: number): Promise<string>;
  completeParts(key: string, uploadId: string, parts: { partNumber: number; etag: string }[]): Promise<void>;
  abortParts(key: string, uploadId: string): Promise<void>;
  /**
   * Aborts multipart uploads started before `olderThan` (only those of `key` when given: a
   * rejected copy's parts, whoever began them); returns how many.
   */
  abortStaleMultipartUploads(olderThan: Date, key?: string): Promise<number>;
  /**
   * Places (`on`) or releases the store's own legal hold on an object, where its bucket has S3
   * Object Lock: then a delete that bypasses Oncely is refused by the store itself. False when
   * the bucket has no Object Lock or the object is missing (nothing held); absent on stores
   * without holds (a local directory).
   */
  setLegalHold?(key: string, on: boolean): Promise<boolean>;
  /**
   * The presigner for the store an address lives in, if that store signs requests: a tenant's
   * S3 target signs even where the instance's own store (a local directory) cannot.
   */
  presignerFor?(address: string): Promise<ObjectPresigner | undefined>;
  /** Whether the object's bucket can hold objects (S3 Object Lock); asked once per bucket. */
  holdsObjects?(key: string): Promise<boolean>;
  /** Whether the store holds the object (undefined: its bucket has no Object Lock, or the object is missing). */
  legalHoldOf?(key: string): Promise<boolean | undefined>;
  /**
   * Copies `from` to `to` inside the store when it can (both on one S3 service, within a single
   * CopyObject's 5 GiB): true when it did, false when the bytes must stream through instead.
   */
  copyWithin?(from: string, to: string, bytes: number): Promise<boolean>;
  /** Throws when the store cannot be reached (for /readyz). */
  probe(): Promise<void>;
  /**
   * Direct uploads (clients send bytes to the store itself): present on stores a client can
   * reach with a signed request (S3). The local-directory store has none; the API then signs
   * its own URLs and takes the bytes (src/arrivals/direct/).
   */
  readonly presigner?: ObjectPresigner;
}

/** A request the client makes to the store as given: the URL and every header it must send. */
export interface SignedRequest {
  method: 'PUT' | 'GET';
  url: string;
  headers: Record<string, string>;
  expiresAt: Date;
}

export interface ObjectPresigner {
  /**
   * A GET of the object whose answer carries this Content-Disposition and Content-Type: both
   * are in the signed query, so a client cannot change them. Range requests work.
   */
  presignGet(key: string, o: { contentDisposition: string; contentType: string; expiresSeconds: number }): Promise<SignedRequest>;
  /** One PUT of exactly these bytes: the signature covers the length, type and SHA-256 (base64). */
  presignPut(key: string, o: { bytes: number; sha256Base64: string; contentType: string; expiresSeconds: number }): Promise<SignedRequest>;
  /** A multipart upload whose parts each carry a SHA-256 the store checks. */
  beginCheckedParts(key: string, contentType: string): Promise<string>;
  /** A part's PUT; with `bytes` and `sha256Base64` the store refuses any other bytes (without, any part goes). */
  presignPart(
    key: string,
    uploadId: string,
    partNumber: number,
    o: { bytes?: number; sha256Base64?: string; expiresSeconds: number },
  ): Promise<SignedRequest>;
  /** The parts the store holds, in order. */
  listParts(key: string, uploadId: string): Promise<{ partNumber: number; etag: string; bytes: number; sha256Base64?: string }[]>;
  /** listParts, or null when the multipart is gone because it was completed (the object is there). */
  partsUnlessCompleted(
    key: string,
    uploadId: string,
  ): Promise<{ partNumber: number; etag: string; bytes: number; sha256Base64?: string }[] | null>;
  /** Completes with these parts only if no object exists at `key` yet (retry-safe: done is done). */
  completeCheckedParts(key: string, uploadId: string, parts: { partNumber: number; etag: string; sha256Base64?: string }[]): Promise<void>;
  /** Size and stored SHA-256 (base64; undefined when the store kept none) of an object. */
  checksum(key: string): Promise<{ bytes: number; sha256Base64?: string; composite: boolean } | undefined>;
}

/** `olderThan` for aborting multipart uploads whatever their age. */
export const ANY_AGE = new Date(8.64e15);
