// Writes one PATCH body into a resumable session. Bytes are hashed (running SHA-256 whose
// state is saved) and gathered into whole parts of `partBytes`; each part is sent to the
// store and then acknowledged in Postgres in one statement (offset, part list, SHA-256
// state). Bytes left below a whole part when the body ends — S3 refuses parts under 5 MiB
// but the last — are kept as a small "tail" object in the store and acknowledged too; the
// next PATCH, on any replica, reads the tail back into its first part. So an acknowledged
// byte is always in the store and named by the row, and a PATCH killed mid-way loses only
// what it had not yet acknowledged. With Upload-Checksum nothing is acknowledged until the
// whole body is in and verified (460 and the offset unchanged otherwise). Two part buffers
// take turns: while one part goes to the store, the body keeps arriving into the other.
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { createSHA256 } from 'hash-wasm';
import type { Pool } from '../../db/pool';
import { acknowledge, type SessionPart, type SessionRow } from '../../db/queries/sessions';
import { leaseLost, type Lease } from '../../sessions/lease';
import { Problem, problem } from '../../errors';
import { HeadBytes } from '../../upload/staged-copy';
import type { ObjectStore } from '../../storage/store';
import { noteAcknowledgedBytes, noteStreamedBytes } from '../../upload/gc-pacer';
import type { ChecksumAlgorithm } from './protocol';

export interface WriterDeps {
  pool: Pool;
  store: ObjectStore;
  /** Whole-part size (≥ 5 MiB for S3); also the most a PATCH holds in memory. */
  partBytes: number;
  leaseSeconds: number;
}

export interface WriteResult {
  offset: number;
  complete: boolean;
}

export async function writeChunk(
  deps: WriterDeps,
  session: SessionRow,
  lease: Lease,
  body: Readable,
  checksum?: { algorithm: ChecksumAlgorithm; digest: Buffer },
): Promise<WriteResult> {
  const length = Number(session.upload_length);
  let acked = Number(session.upload_offset);
  let tailKey = session.tail_key;
  let tailBytes = Number(session.tail_bytes);
  let parts: SessionPart[] = [...session.parts];
  let bufStart = acked - tailBytes; // file offset of buf[0]
  const cap = () => Math.min(deps.partBytes, length - bufStart);
  const pooled = [takePartBuffer(deps.partBytes), takePartBuffer(deps.partBytes)] as const;
  let current = 0;
  let buf = pooled[current]!.subarray(0, Math.max(1, cap()));
  let filled = tailBytes > 0 ? await readTail(deps.store, tailKey!, buf, tailBytes) : 0;
  const sha = freeHashers.pop() ?? (await createSHA256());
  if (session.sha256_state) sha.load(session.sha256_state);
  else sha.init();
  const check = checksum ? createHash(checksum.algorithm) : undefined;
  // The first bytes are kept once, by the PATCH that starts at offset 0.
  const head = session.head ? null : new HeadBytes();
  const staleTails: string[] = [];

  // Progress keeps the lease; losing it (taken over after a stall) stops this PATCH before
  // its next store write (lease.write), and its acknowledgement would be refused anyway.
  lease.onLost(() => {
    if (!body.destroyed) body.destroy(Object.assign(new Error('lease lost'), { code: 'ECONNRESET' }));
  });
  // The part being stored (and, without a checksum, then acknowledged); at most one, so the
  // buffer it reads is never the one being filled.
  let sending: Promise<void> | undefined;
  const launchPart = async () => {
    if (sending) await sending;
    const partNumber = parts.length + 1;
    const bytes = buf.subarray(0, filled);
    const endOffset = bufStart + filled;
    // The hash state at the part's end: what its acknowledgement records.
    const shaState = sha.save();
    sending = (async () => {
      const etag = await lease.write(() => deps.store.putPart(session.storage_key, session.multipart_id, partNumber, bytes));
      parts = [...parts, { partNumber, etag, bytes: bytes.length }];
      if (tailKey) staleTails.push(tailKey);
      tailKey = null;
      tailBytes = 0;
      if (!check) await ackAt(endOffset, shaState);
    })();
    sending.catch(() => {}); // observed at the next part or at the end
    bufStart = endOffset;
    filled = 0;
    current = 1 - current;
    buf = pooled[current]!.subarray(0, Math.max(1, cap()));
  };
  const ack = () => ackAt(bufStart + filled, sha.save());
  const ackAt = async (toOffset: number, sha256State: Uint8Array) => {
    const ok = await acknowledge(deps.pool, {
      id: session.id,
      owner: lease.owner,
      fromOffset: acked,
      toOffset,
      parts,
      tailKey,
      tailBytes,
      sha256State,
      head: head && head.value.length > 0 ? head.value : null,
      leaseSeconds: deps.leaseSeconds,
    });
    // Our lease ran out and another request moved the session: this one stops here.
    if (!ok) throw leaseLost();
    acked = toOffset;
    for (const key of staleTails.splice(0)) await deps.store.delete(key).catch(() => {});
  };

  // A client that goes away mid-body may show up only on its socket — closed, or ended
  // (the server allows half-open connections, so a FIN alone closes nothing): end the
  // iteration then, or it would wait for bytes that never come.
  const socket = (body as { socket?: import('node:net').Socket }).socket;
  const onGone = () => {
    if ((body as { complete?: boolean }).complete === false && !body.destroyed)
      body.destroy(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }));
  };
  socket?.once('close', onGone);
  socket?.once('end', onGone);
  body.once('aborted', onGone);
  if (socket?.destroyed || socket?.readableEnded) onGone();
  let ended = false;
  try {
    try {
      // Leaving the loop early (a body past Upload-Length) must not destroy the request: its
      // socket would reset before the client read the 413; it is drained instead.
      for await (const chunk of body.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
        lease.progressed();
        noteStreamedBytes(chunk.length);
        let pos = 0;
        while (pos < chunk.length) {
          const room = cap() - filled;
          if (room <= 0) throw problem('payload_too_large', `The body goes past Upload-Length (${length} bytes).`);
          const piece = chunk.subarray(pos, pos + Math.min(room, chunk.length - pos));
          const at = bufStart + filled;
          head?.add(piece, at);
          piece.copy(buf, filled);
          sha.update(piece);
          check?.update(piece);
          filled += piece.length;
          pos += piece.length;
          if (filled === cap()) await launchPart();
        }
      }
      ended = true;
    } catch (err) {
      // A body cut off by the client still leaves what arrived; anything else is thrown.
      if (!isCutOff(err, body)) throw err;
    }
    if (sending) await sending;
    if (check) {
      // Unverifiable (cut off) or wrong: nothing of this PATCH is acknowledged.
      if (!ended) return { offset: acked, complete: acked === length };
      if (!check.digest().equals(checksum!.digest))
        throw problem(
          'upload_checksum_mismatch',
          `The body does not match Upload-Checksum (${checksum!.algorithm}); the offset stays ${acked}.`,
        );
    }
    if (filled > 0 && bufStart + filled === length) {
      await launchPart();
      await sending;
    } else if (filled > 0 && bufStart + filled > acked) {
      const key = `${session.storage_key}.tail.${bufStart + filled}`;
      // No copy: the buffer goes back to the pool only after this write has finished.
      await lease.write(() =>
        deps.store.put(key, Readable.from([buf.subarray(0, filled)]), { contentType: 'application/octet-stream', contentLength: filled }),
      );
      if (tailKey && tailKey !== key) staleTails.push(tailKey);
      tailKey = key;
      tailBytes = filled;
    }
    if (bufStart + filled > acked) await ack();
    noteAcknowledgedBytes(acked - Number(session.upload_offset));
    return { offset: acked, complete: acked === length };
  } finally {
    // A part still being stored reads its buffer: the buffers go back only after it.
    await sending?.catch(() => {});
    for (const b of pooled) givePartBuffer(b);
    if (freeHashers.length < MAX_FREE_BUFFERS) freeHashers.push(sha);
    socket?.off('close', onGone);
    socket?.off('end', onGone);
    body.off('aborted', onGone);
  }
}

// Part buffers are reused: a fresh 8 MiB buffer per PATCH is external memory V8 frees only
// when it gets round to it, which showed as tens of MiB of peak RSS over a 1 GiB upload.
const freeBuffers: Buffer[] = [];
const MAX_FREE_BUFFERS = 4;
// Likewise the WebAssembly SHA-256 instances (each holds its own memory).
const freeHashers: Awaited<ReturnType<typeof createSHA256>>[] = [];

function takePartBuffer(bytes: number): Buffer {
  const i = freeBuffers.findIndex((b) => b.length === bytes);
  return i >= 0 ? freeBuffers.splice(i, 1)[0]! : Buffer.allocUnsafeSlow(bytes);
}

function givePartBuffer(buf: Buffer): void {
  if (freeBuffers.length < MAX_FREE_BUFFERS) freeBuffers.push(buf);
}

async function readTail(store: ObjectStore, key: string, buf: Buffer, expected: number): Promise<number> {
  const stream = await store.get(key);
  if (!stream) throw new Error(`tail object ${key} is missing`);
  let n = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    if (n + chunk.length > buf.length) throw new Error(`tail object ${key} is larger than a part`);
    chunk.copy(buf, n);
    n += chunk.length;
  }
  if (n !== expected) throw new Error(`tail object ${key} has ${n} bytes, expected ${expected}`);
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
