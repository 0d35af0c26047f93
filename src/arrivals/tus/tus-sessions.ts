// tus sessions: created in the session registry with the tus route and expiry and a
// multipart in the store; written by PATCHes under the session's lease (./session-writer.ts);
// completed by the session core once the last byte is acknowledged (the parts assembled,
// the whole-file SHA-256 taken from the saved hash state); terminated by DELETE.
import { Readable } from 'node:stream';
import { createSHA256 } from 'hash-wasm';
import type { Pool } from '../../db/pool';
import { idleExpiry, type SessionRow } from '../../db/queries/sessions';
import { dependency, problem } from '../../errors';
import { deleteTails } from '../../sessions/cleanup';
import { completeSession } from '../../sessions/complete';
import { withLease } from '../../sessions/lease';
import type { NewSessionRequest, SessionKind, SessionRegistry } from '../../sessions/registry';
import type { ObjectStore } from '../../storage/store';
import type { UploadOutcome, UploadReceiver } from '../../upload/receive';
import { stagedCopy } from '../../upload/staged-copy';
import type { StagedCopy } from '../../upload/types';
import type { ChecksumAlgorithm } from './protocol';
import { writeChunk, type WriteResult } from './session-writer';

/** The route recorded in a tus session's fingerprint: a key first used here is refused elsewhere. */
export const TUS_ROUTE = '/v1/tus';

export interface TusSessionsDeps {
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

export class TusSessions {
  constructor(private readonly deps: TusSessionsDeps) {}

  /** How tus sessions are made: a multipart in the store, the tus route, the tus expiry. */
  private get kind(): SessionKind {
    return {
      mode: 'tus',
      route: TUS_ROUTE,
      begin: (key, contentType) => this.deps.store.beginParts(key, contentType),
      idleSeconds: this.deps.idleSeconds,
      partBytes: null,
    };
  }

  /** The key's session: created once; the same request again gets the same session (replayed). */
  create(r: NewSessionRequest): Promise<{ session: SessionRow; replayed: boolean }> {
    return this.deps.registry.create(r, this.kind);
  }

  /** The session; with `tokenId`, only one that upload token created. */
  find(tenantId: string, id: string, tokenId?: string): Promise<SessionRow> {
    return this.deps.registry.find(tenantId, id, 'tus', tokenId);
  }

  /**
   * One PATCH: under the session's lease, from the acknowledged offset; the final bytes
   * complete the session and commit it (answered within `waitMs`, else "processing").
   */
  async write(
    tenantId: string,
    id: string,
    offset: number,
    body: Readable,
    checksum: { algorithm: ChecksumAlgorithm; digest: Buffer } | undefined,
    waitMs: number,
    /** The body's declared length, when sent: one that would pass Upload-Length is refused unread. */
    bodyBytes?: number,
  ): Promise<{ write: WriteResult; outcome?: UploadOutcome; session: SessionRow }> {
    const { write, session } = await withLease(
      this.deps.pool,
      tenantId,
      id,
      'tus',
      { ...this.lease, renew: true },
      async (leased, lease) => {
        if (offset !== Number(leased.upload_offset))
          throw problem('upload_offset_mismatch', `Upload-Offset is ${offset} but the upload is at ${leased.upload_offset}.`, {
            extra: { uploadOffset: Number(leased.upload_offset) },
          });
        if (bodyBytes !== undefined && offset + bodyBytes > Number(leased.upload_length)) {
          throw problem('payload_too_large', `${bodyBytes} bytes at offset ${offset} pass Upload-Length (${leased.upload_length}).`);
        }
        const written = leased.state === 'open' ? await writeChunk(this.deps, leased, lease, body, checksum) : { offset, complete: true };
        return { write: written, session: leased };
      },
    );
    if (!write.complete) return { write, session };
    return { write, outcome: await this.complete(tenantId, id, waitMs), session };
  }

  /** The session core's completion, with the parts assembled and the saved hash checked. */
  complete(tenantId: string, id: string, waitMs: number): Promise<UploadOutcome> {
    return completeSession(
      { pool: this.deps.pool, receiver: this.deps.receiver, registry: this.deps.registry },
      { tenantId, id, mode: 'tus', idleSeconds: this.deps.idleSeconds },
      waitMs,
      (s) => this.assemble(s),
    );
  }

  /** Assembles the object and checks the whole-file SHA-256 (the session goes when it does not match). */
  private async assemble(s: SessionRow): Promise<StagedCopy> {
    const length = Number(s.upload_length);
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
      if (head?.bytes !== length) throw new Error(`assembled object has ${head?.bytes} bytes, expected ${length}`);
      await deleteTails(this.deps.store, s.storage_key);
    });
    const sha = await createSHA256();
    if (s.sha256_state) sha.load(s.sha256_state);
    else sha.init();
    const sha256 = sha.digest('hex');
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

  /** tus termination: the session, its bytes and its run go, and the key is free. */
  async terminate(tenantId: string, id: string): Promise<void> {
    await withLease(this.deps.pool, tenantId, id, 'tus', this.lease, async (leased) => {
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
