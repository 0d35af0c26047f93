// Sessions whose bytes arrive through the API as appends at an offset (tus, and the IETF
// resumable-upload draft): created in the registry with the mode's route and expiry and a
// multipart in the store; written under the session's lease (./append-writer.ts);
// completed by ./complete.ts once the last byte is acknowledged (the parts assembled, the
// whole-file SHA-256 from the running hash, ./running-hash.ts); terminated by the client.
import { Readable } from 'node:stream';
import type { Pool } from '../db/pool';
import { idleExpiry, type SessionRow } from '../db/queries/sessions';
import { dependency, problem, type Problem } from '../errors';
import { metrics } from '../metrics';
import type { ObjectStore } from '../storage/store';
import type { UploadOutcome, UploadReceiver } from '../upload/receive';
import { stagedCopy } from '../upload/staged-copy';
import type { StagedCopy } from '../upload/types';
import { bytesLost, writeChunk, type BodyChecksum, type OnAcknowledged, type WriteResult, type WriterDeps } from './append-writer';
import { deleteTails } from './cleanup';
import { completeSession } from './complete';
import { withLease } from './lease';
import { RunningHashes } from './running-hash';
import type { AppendedMode } from '../modes';
import type { NewSessionRequest, SessionKind, SessionRegistry } from './registry';

export interface AppendedSessionsDeps {
  mode: AppendedMode;
  /** Recorded in the fingerprint: a key first used by this mode is refused by another. */
  route: string;
  pool: Pool;
  store: ObjectStore;
  registry: SessionRegistry;
  receiver: UploadReceiver;
  idleSeconds: number;
  partBytes: number;
  leaseSeconds: number;
  /** A PATCH with no progress for this long may be taken over by a new one. */
  stallSeconds: number;
}

/** How one append ends the upload: tus completes when the last byte is in; RUFH when the client says so. */
export interface AppendOptions {
  /** 'when-full': once every byte is acknowledged; true: this append ends the upload; false: it does not. */
  completes: 'when-full' | boolean;
  checksum?: BodyChecksum;
  /** The body's declared length, when sent: one that would pass the upload's length is refused unread. */
  bodyBytes?: number;
  onAcknowledged?: OnAcknowledged;
  /** The mode's answer to an append at the wrong offset (default: 409 upload_offset_mismatch with `uploadOffset`). */
  offsetMismatch?: (expected: number, provided: number) => Problem;
  /** The mode's own checks of the append against its session, under the lease before any byte is read. */
  check?: (session: SessionRow) => void;
}

const offsetMismatch = (expected: number, provided: number) =>
  problem('upload_offset_mismatch', `Upload-Offset is ${provided} but the upload is at ${expected}.`, {
    extra: { uploadOffset: expected },
  });

export class AppendedSessions {
  /** What each append is written with, this process's running hashes included. */
  private readonly writer: WriterDeps;

  constructor(private readonly deps: AppendedSessionsDeps) {
    this.writer = { ...deps, hashes: new RunningHashes() };
  }

  get mode(): AppendedMode {
    return this.deps.mode;
  }

  /** How these sessions are made: a multipart in the store, the mode's route and expiry. */
  private get kind(): SessionKind {
    return {
      mode: this.deps.mode,
      route: this.deps.route,
      begin: async (key, contentType) => ({ multipartId: await this.deps.store.beginParts(key, contentType), partBytes: null }),
      idleSeconds: this.deps.idleSeconds,
    };
  }

  /** The key's session: created once; the same request again gets the same session (replayed). */
  create(r: NewSessionRequest): Promise<{ session: SessionRow; replayed: boolean }> {
    return this.deps.registry.create(r, this.kind);
  }

  /** The session; with `tokenId`, only one that upload token created. */
  find(tenantId: string, id: string, tokenId?: string): Promise<SessionRow> {
    return this.deps.registry.find(tenantId, id, this.deps.mode, tokenId);
  }

  /**
   * One append: under the session's lease, from the acknowledged offset; the append that
   * ends the upload completes the session and commits it (answered within `waitMs`, else
   * "processing").
   */
  async write(
    tenantId: string,
    id: string,
    offset: number,
    body: Readable,
    waitMs: number,
    opts: AppendOptions,
  ): Promise<{ write: WriteResult; outcome?: UploadOutcome; session: SessionRow }> {
    const { bodyBytes, checksum, onAcknowledged } = opts;
    const { write, session } = await withLease(
      this.deps.pool,
      tenantId,
      id,
      this.deps.mode,
      { ...this.lease, renew: true },
      async (leased, lease) => {
        // Complete (or completing) already: any append gets the upload's answer, its body unread.
        if (leased.state !== 'open')
          return { write: { offset: Number(leased.upload_offset), complete: true, cut: false }, session: leased };
        const at = Number(leased.upload_offset);
        if (offset !== at) throw (opts.offsetMismatch ?? offsetMismatch)(at, offset);
        opts.check?.(leased);
        if (bodyBytes !== undefined && offset + bodyBytes > Number(leased.upload_length)) {
          throw problem('payload_too_large', `${bodyBytes} bytes at offset ${offset} pass Upload-Length (${leased.upload_length}).`);
        }
        return {
          write: await writeChunk(this.writer, leased, lease, body, { checksum, onAcknowledged, bodyBytes }),
          session: leased,
        };
      },
    );
    const ends =
      session.state !== 'open' || (opts.completes === 'when-full' ? write.complete : opts.completes && write.complete && !write.cut);
    if (!ends) return { write, session };
    return { write, outcome: await this.complete(tenantId, id, waitMs), session };
  }

  /** The session core's completion, with the parts assembled and the whole-file hash checked. */
  complete(tenantId: string, id: string, waitMs: number): Promise<UploadOutcome> {
    return completeSession(
      { pool: this.deps.pool, receiver: this.deps.receiver, registry: this.deps.registry },
      { tenantId, id, mode: this.deps.mode, idleSeconds: this.deps.idleSeconds },
      waitMs,
      (s) => this.assemble(s),
    );
  }

  /** Assembles the object and checks the whole-file SHA-256 (the session goes when it does not match). */
  private async assemble(s: SessionRow): Promise<StagedCopy> {
    const length = Number(s.upload_length);
    const assembling = metrics.resumableAssembleSeconds.startTimer({ mode: this.deps.mode });
    await dependency('storage_unavailable', async () => {
      if (s.parts.length === 0) {
        await this.deps.store.put(s.storage_key, Readable.from([]), { contentType: s.content_type, contentLength: 0 });
        await this.deps.store.abortParts(s.storage_key, s.multipart_id);
      } else
        await this.deps.store.completeParts(
          s.storage_key,
          s.multipart_id,
          s.parts.map((p) => ({ partNumber: p.partNumber, etag: p.etag })),
        );
      const head = await this.deps.store.head(s.storage_key);
      if (head?.bytes !== length) throw bytesLost(`The assembled upload has ${head?.bytes ?? 0} bytes; ${length} were acknowledged.`);
      await deleteTails(this.deps.store, s.storage_key);
    });
    assembling();
    const sha256 = await dependency('storage_unavailable', () =>
      this.writer.hashes.digest(s.id, length, async () => {
        const stored = await this.deps.store.get(s.storage_key);
        if (!stored) throw bytesLost('The assembled upload is missing from the store.');
        return stored;
      }),
    );
    if (s.declared_sha256 && s.declared_sha256 !== sha256) {
      // Nothing is recorded and the key is free: the session, its object and its run go.
      await this.deps.registry.discard(s, { object: true });
      throw problem('checksum_mismatch', `The declared SHA-256 is ${s.declared_sha256} but the uploaded bytes hash to ${sha256}.`);
    }
    return stagedCopy({
      attemptId: s.id,
      fingerprint: s.fingerprint,
      storageKey: s.storage_key,
      bytes: length,
      sha256,
      head: s.head ?? Buffer.alloc(0),
    });
  }

  /** Termination by the client: the session, its bytes and its run go, and the key is free. */
  async terminate(tenantId: string, id: string): Promise<void> {
    await withLease(this.deps.pool, tenantId, id, this.deps.mode, this.lease, async (leased) => {
      if (leased.state !== 'open') throw problem('upload_committed', 'This upload is complete; it is not terminated.');
      await this.deps.registry.discard(leased);
    });
  }

  /** When an idle session expires, as an HTTP date (for Upload-Expires). */
  expiresAt(s: SessionRow): Date {
    return idleExpiry(s, this.deps.idleSeconds);
  }

  private get lease() {
    return { seconds: this.deps.leaseSeconds, stallSeconds: this.deps.stallSeconds };
  }
}
