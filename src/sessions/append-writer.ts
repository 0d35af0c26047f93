// Writes one append (a tus or RUFH PATCH, or the bytes of a creation) into a session. Bytes are hashed (the running
// SHA-256 this process holds, ./running-hash.ts) and gathered into whole parts of `partBytes`; each part is sent to the
// store and then acknowledged in Postgres in one statement (offset, part list, tail). When the body ends, what is
// buffered becomes a part too if S3 takes it as one (5 MiB or more), and when the body's length is known its last part
// grows to take a remainder below that; bytes that still end below a part are kept as a small "tail" object in the store
// and acknowledged too; the next PATCH, on any replica, reads the tail back into its first part. So appends of any
// size, and the ones after a cut mid-append, store whole parts and no tail to write and read back. So an acknowledged
// byte is always in the store and named by the row, and a PATCH killed mid-way loses only
// what it had not yet acknowledged. With Upload-Checksum nothing is acknowledged until the
// whole body is in and verified (refused, the offset unchanged, otherwise). Two part buffers
// take turns: while one part goes to the store, the body keeps arriving into the other. On
// a store that takes a part as a stream (S3), a part the body declares it will fill is sent
// while it arrives, so the PUT overlaps the receiving; the buffer still holds its bytes, and
// a part cut short or refused is sent again from it. That stream reads the part buffer
// itself as it fills (./filling-part.ts), so what waits for the store is bytes in the buffer,
// not a queue of socket chunks.
import { createHash, type Hash } from 'node:crypto';
import { Readable } from 'node:stream';
import type { Pool } from '../db/pool';
import { acknowledge, type SessionPart, type SessionRow } from '../db/queries/sessions';
import { leaseLost, type Lease } from './lease';
import { Problem, problem } from '../errors';
import { HeadBytes } from '../upload/staged-copy';
import { onClientGone } from '../upload/client-gone';
import type { ObjectStore } from '../storage/store';
import { noteStreamedBytes } from '../upload/gc-pacer';
import { HASH_HELD_IN_PROCESS, type RunningHashes } from './running-hash';
import { FillingPart } from './filling-part';

export interface WriterDeps {
  pool: Pool;
  store: ObjectStore;
  /** Whole-part size (≥ 5 MiB for S3); a PATCH holds two buffers of this plus 5 MiB. */
  partBytes: number;
  leaseSeconds: number;
  hashes: RunningHashes;
}

export interface WriteResult {
  offset: number;
  /** Every byte of the upload is acknowledged. */
  complete: boolean;
  /** The client cut the body off (what arrived before is kept). */
  cut: boolean;
}

/** A digest of one append's body, checked before any of it is acknowledged. */
export interface BodyChecksum {
  algorithm: 'sha1' | 'sha256' | 'sha512';
  digest: Buffer;
  /** Answered when the body does not match. */
  mismatch: () => Problem;
}

/** Told each newly acknowledged offset (a mode may report progress to its client). */
export type OnAcknowledged = (offset: number) => void;

/** How one append is written: its checksum, who hears of progress, and its length when declared. */
export interface ChunkOptions {
  checksum?: BodyChecksum;
  onAcknowledged?: OnAcknowledged;
  /** The body's declared length: its last part then takes a remainder too small to be a part. */
  bodyBytes?: number;
}

export async function writeChunk(
  deps: WriterDeps,
  session: SessionRow,
  lease: Lease,
  body: Readable,
  opts: ChunkOptions,
): Promise<WriteResult> {
  const writer = await PatchWriter.open(deps, session, lease, opts);
  // Losing the lease (taken over after a stall) or the client ends the body's iteration.
  const cut = () => {
    if (!body.destroyed) body.destroy(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }));
  };
  lease.onLost(cut);
  const stopWatching = onClientGone(body, cut);
  try {
    return await writer.finish(await writer.readBody(body));
  } finally {
    stopWatching();
    await writer.close();
  }
}

/** One PATCH's state: the part being filled, the part being stored, and what is acknowledged. */
class PatchWriter {
  private readonly length: number;
  private acked: number;
  private tailKey: string | null;
  private tailBytes: number;
  private parts: SessionPart[];
  /** The file offset of buf[0]. */
  private bufStart: number;
  private current = 0;
  private buf: Buffer;
  private filled = 0;
  /** The number the part being filled will have. */
  private nextPart: number;
  /** The part being filled, already on its way to the store (putPartStreamed). */
  private streaming: { body: FillingPart; etag: Promise<string> } | undefined;
  /** The part being stored (and, without a checksum, then acknowledged); at most one, so the buffer it reads is never the one being filled. */
  private sending: Promise<void> | undefined;
  private readonly staleTails: string[] = [];
  private readonly check: Hash | undefined;
  private readonly checksum: BodyChecksum | undefined;
  private readonly onAcknowledged: OnAcknowledged | undefined;
  /** The file offset where the body ends, when its length is declared. */
  private readonly bodyEnd: number | undefined;
  /** The first bytes are kept once, by the PATCH that starts at offset 0. */
  private readonly head: HeadBytes | null;

  private constructor(
    private readonly deps: WriterDeps,
    private readonly session: SessionRow,
    private readonly lease: Lease,
    opts: ChunkOptions,
    private readonly pooled: readonly [Buffer, Buffer],
    /** Null when this process does not hold the session's hash at its offset: the digest is read back at completion. */
    private readonly sha: Hash | null,
  ) {
    this.checksum = opts.checksum;
    this.onAcknowledged = opts.onAcknowledged;
    this.length = Number(session.upload_length);
    this.acked = Number(session.upload_offset);
    this.bodyEnd = opts.bodyBytes !== undefined ? this.acked + opts.bodyBytes : undefined;
    this.tailKey = session.tail_key;
    this.tailBytes = Number(session.tail_bytes);
    this.parts = [...session.parts];
    this.nextPart = this.parts.length + 1;
    this.bufStart = this.acked - this.tailBytes;
    this.buf = pooled[0].subarray(0, Math.max(1, this.cap()));
    this.check = opts.checksum ? createHash(opts.checksum.algorithm) : undefined;
    this.head = session.head ? null : new HeadBytes();
  }

  /** Step 1: pooled buffers, the running hash, and the session's tail read back into the first part. */
  static async open(deps: WriterDeps, session: SessionRow, lease: Lease, opts: ChunkOptions): Promise<PatchWriter> {
    const sha = deps.hashes.resume(session.id, Number(session.upload_offset));
    // A body's last part may be up to MIN_PART_BYTES - 1 over a whole part (see cap()).
    const size = deps.partBytes + MIN_PART_BYTES;
    const w = new PatchWriter(deps, session, lease, opts, [takePartBuffer(size), takePartBuffer(size)], sha);
    if (w.tailBytes > 0) w.filled = await readTail(deps.store, w.tailKey!, w.buf, w.tailBytes);
    return w;
  }

  /** Step 2: the body into whole parts, each stored (and acknowledged) as it fills; false when the client cut it off. */
  async readBody(body: Readable): Promise<boolean> {
    try {
      // Leaving the loop early (a body past Upload-Length) must not destroy the request: its
      // socket would reset before the client read the 413; it is drained instead.
      for await (const chunk of body.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
        this.lease.progressed();
        noteStreamedBytes(chunk.length);
        await this.take(chunk);
      }
      return true;
    } catch (err) {
      // A body cut off by the client still leaves what arrived; anything else is thrown.
      if (!isCutOff(err, body)) throw err;
      return false;
    }
  }

  private async take(chunk: Buffer): Promise<void> {
    let pos = 0;
    while (pos < chunk.length) {
      const room = this.cap() - this.filled;
      if (room <= 0) throw problem('payload_too_large', `The body goes past Upload-Length (${this.length} bytes).`);
      const piece = chunk.subarray(pos, pos + Math.min(room, chunk.length - pos));
      this.head?.add(piece, this.bufStart + this.filled);
      if (!this.streaming) this.stream();
      piece.copy(this.buf, this.filled);
      this.sha?.update(piece);
      this.check?.update(piece);
      this.filled += piece.length;
      this.streaming?.body.filledTo(this.filled);
      pos += piece.length;
      if (this.filled === this.cap()) await this.launchPart();
    }
  }

  /** Step 3: the verdict on Upload-Checksum, then the last part or the tail, and the acknowledgement. */
  async finish(ended: boolean): Promise<WriteResult> {
    if (this.sending) await this.sending;
    if (this.check) {
      // Unverifiable (cut off) or wrong: nothing of this append is acknowledged.
      if (!ended) return this.result(true);
      if (!this.check.digest().equals(this.checksum!.digest)) throw this.checksum!.mismatch();
    }
    const end = this.bufStart + this.filled;
    if (this.filled > 0 && (end === this.length || (this.filled >= MIN_PART_BYTES && end > this.acked))) {
      await this.launchPart();
      await this.sending;
    } else if (this.filled > 0 && end > this.acked) await this.storeTail(end);
    if (this.bufStart + this.filled > this.acked) await this.ackAt(this.bufStart + this.filled, this.sha?.copy());
    return this.result(!ended);
  }

  /** Step 4: the buffers go back, once no part being stored reads them. */
  async close(): Promise<void> {
    this.dropStream();
    await this.sending?.catch(() => {}); // its failure was answered where it was awaited
    for (const b of this.pooled) givePartBuffer(b);
  }

  private result(cut: boolean): WriteResult {
    return { offset: this.acked, complete: this.acked === this.length, cut };
  }

  /** The size of the part being filled: a whole part, or the rest of a body of known length when less than a part would follow it. */
  private cap(): number {
    let part = this.deps.partBytes;
    if (this.bodyEnd !== undefined && this.bodyEnd - (this.bufStart + part) < MIN_PART_BYTES)
      part = Math.max(part, this.bodyEnd - this.bufStart);
    return Math.min(part, this.length - this.bufStart);
  }

  /**
   * Starts sending the part being filled while it arrives, when the store takes a stream and
   * the body declares it will fill the part; its bytes so far (a tail read back) go first.
   */
  private stream(): void {
    const { store } = this.deps;
    const bytes = this.cap();
    if (this.streaming || !store.putPartStreamed || this.bodyEnd === undefined || this.bufStart + bytes > this.bodyEnd) return;
    const body = new FillingPart(this.buf.subarray(0, bytes));
    const { storage_key: key, multipart_id: uploadId } = this.session;
    const partNumber = this.nextPart;
    const etag = this.lease.begin(() => store.putPartStreamed!(key, uploadId, partNumber, body, bytes));
    etag.catch(() => {}); // a failed stream is sent again from the buffer
    this.streaming = { body, etag };
    body.filledTo(this.filled);
  }

  /** The streamed part is not going to be whole: abort it (the store keeps nothing of it). */
  private dropStream(): void {
    this.streaming?.body.destroy(new Error('the part was not filled'));
    this.streaming = undefined;
  }

  /** The filled buffer goes to the store as the next part; the other buffer takes the body meanwhile. */
  private async launchPart(): Promise<void> {
    if (this.sending) await this.sending;
    const partNumber = this.nextPart++;
    const bytes = this.buf.subarray(0, this.filled);
    const endOffset = this.bufStart + this.filled;
    // The hash at the part's end: what this process holds once the part is acknowledged.
    const shaAtEnd = this.sha?.copy();
    const { session, deps } = this;
    // A streamed part of exactly these bytes has all it needs: it ends by itself once sent.
    const streamed = this.streaming?.body.bytes === bytes.length ? this.streaming : undefined;
    if (streamed) this.streaming = undefined;
    else this.dropStream();
    this.sending = (async () => {
      const etag = await this.lease.write(
        async () =>
          (streamed && (await streamed.etag.catch(() => undefined))) ??
          deps.store.putPart(session.storage_key, session.multipart_id, partNumber, bytes),
      );
      this.parts = [...this.parts, { partNumber, etag, bytes: bytes.length }];
      if (this.tailKey) this.staleTails.push(this.tailKey);
      this.tailKey = null;
      this.tailBytes = 0;
      if (!this.check) await this.ackAt(endOffset, shaAtEnd);
    })();
    this.sending.catch(() => {}); // observed at the next part or at the end
    this.bufStart = endOffset;
    this.filled = 0;
    this.current = 1 - this.current;
    this.buf = this.pooled[this.current]!.subarray(0, Math.max(1, this.cap()));
  }

  /** Bytes below a whole part, kept as an object of their own (named by the acknowledgement). */
  private async storeTail(end: number): Promise<void> {
    this.dropStream();
    const key = `${this.session.storage_key}.tail.${end}`;
    const filled = this.filled;
    // No copy: the buffer goes back to the pool only after this write has finished.
    await this.lease.write(() =>
      this.deps.store.put(key, Readable.from([this.buf.subarray(0, filled)]), {
        contentType: 'application/octet-stream',
        contentLength: filled,
      }),
    );
    if (this.tailKey && this.tailKey !== key) this.staleTails.push(this.tailKey);
    this.tailKey = key;
    this.tailBytes = filled;
  }

  /** Offset, parts and tail in one statement, guarded by the lease and the offset it started from; then the hash over them is held. */
  private async ackAt(toOffset: number, sha: Hash | undefined): Promise<void> {
    const ok = await acknowledge(this.deps.pool, {
      id: this.session.id,
      owner: this.lease.owner,
      fromOffset: this.acked,
      toOffset,
      parts: this.parts,
      tailKey: this.tailKey,
      tailBytes: this.tailBytes,
      sha256State: HASH_HELD_IN_PROCESS,
      head: this.head && this.head.value.length > 0 ? this.head.value : null,
      leaseSeconds: this.deps.leaseSeconds,
    });
    // Our lease ran out and another request moved the session: this one stops here.
    if (!ok) throw leaseLost();
    this.acked = toOffset;
    if (sha) this.deps.hashes.hold(this.session.id, toOffset, sha);
    this.onAcknowledged?.(toOffset);
    // A tail left behind is unnamed: the session's end deletes every tail.
    for (const key of this.staleTails.splice(0)) await this.deps.store.delete(key).catch(() => {});
  }
}

/** S3's smallest part but the last. */
const MIN_PART_BYTES = 5 * 1024 * 1024;

// Part buffers are reused: a fresh 8 MiB buffer per PATCH is external memory V8 frees only
// when it gets round to it, which showed as tens of MiB of peak RSS over a 1 GiB upload.
const freeBuffers: Buffer[] = [];
const MAX_FREE_BUFFERS = 4;

function takePartBuffer(bytes: number): Buffer {
  const i = freeBuffers.findIndex((b) => b.length === bytes);
  return i >= 0 ? freeBuffers.splice(i, 1)[0]! : Buffer.allocUnsafeSlow(bytes);
}

function givePartBuffer(buf: Buffer): void {
  if (freeBuffers.length < MAX_FREE_BUFFERS) freeBuffers.push(buf);
}

async function readTail(store: ObjectStore, key: string, buf: Buffer, expected: number): Promise<number> {
  const stream = await store.get(key);
  if (!stream) throw bytesLost(`The stored tail of this upload is missing (${expected} bytes acknowledged).`);
  let n = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    if (n + chunk.length > buf.length) throw bytesLost(`The stored tail of this upload is larger than a part.`);
    chunk.copy(buf, n);
    n += chunk.length;
  }
  if (n !== expected) throw bytesLost(`The stored tail of this upload has ${n} bytes; ${expected} were acknowledged.`);
  return n;
}

function isCutOff(err: unknown, body: Readable): boolean {
  // Our own refusal (a body past Upload-Length) is an answer, not a cut.
  if (err instanceof Problem) return false;
  const code = (err as { code?: string }).code;
  return (
    (body as { complete?: boolean }).complete === false ||
    code === 'ERR_STREAM_PREMATURE_CLOSE' ||
    code === 'ECONNRESET' ||
    (err as Error).message === 'aborted'
  );
}

/** The store no longer holds what the session acknowledged: retrying cannot help (not a 503). */
export function bytesLost(detail: string) {
  return problem('stored_bytes_lost', detail);
}
