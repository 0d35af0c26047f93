// Resumable sessions under one key: creation (the key owns the session; the key's upload
// workflow is started with it), writes (src/resumable/session-writer.ts), completion (the
// same commit as a one-request upload: the assembled object is offered to the key's
// workflow as its copy) and termination. State lives in Postgres; the workflow owns the
// lifecycle (it expires an idle session and frees the key).
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { createSHA256 } from 'hash-wasm';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { Pool } from '../db/pool';
import { findKeyAnswer } from '../db/queries/idempotency-keys';
import { deleteSession, findSession, idleExpiry, findSessionByKey, insertSessionOrGet, moveSession, releaseLease, sessionExists, takeLease, type SessionMode, type SessionRow } from '../db/queries/resumable';
import { countLive, QuotaReached } from '../db/queries/quotas';
import { dependency, problem } from '../errors';
import type { ObjectStore } from '../storage/store';
import { keyStoragePrefix, uploadWorkflowId } from '../temporal/ids';
import { fingerprint } from '../upload/fingerprint';
import type { UploadOutcome, UploadReceiver } from '../upload/receive';
import { stagedCopy } from '../upload/staged-copy';
import type { UploadRequest } from '../upload/types';
import { uploadWorkflow } from '../../workflows/upload';
import { deleteTails, discardSessionObjects } from './cleanup';
import { writeChunk, type WriteResult } from './session-writer';
import type { ChecksumAlgorithm } from './tus-protocol';

/** The route recorded in a session's fingerprint: a key first used here is refused elsewhere. */
export const RESUMABLE_ROUTE = '/v1/tus';

export interface SessionsDeps {
  pool: Pool;
  store: ObjectStore;
  temporal: Client;
  receiver: UploadReceiver;
  idleSeconds: number;
  partBytes: number;
  leaseSeconds: number;
  /** A PATCH with no progress for this long may be taken over by a new one. */
  stallSeconds: number;
  /** Sessions of every mode a tenant may have open (not yet committed) at once. */
  maxOpenSessions: number;
}

export interface NewSessionRequest {
  tenantId: string;
  key: string;
  uploadLength: number;
  uploadMetadata: string;
  metadata: Record<string, string>;
  contentType: string;
  fileName: string | null;
  declaredSha256: string | null;
}

/** How a session of another mode (direct uploads) differs from a tus session at creation. */
export interface SessionKind {
  mode: SessionMode;
  /** Recorded in the fingerprint: a key first used by one mode is refused by another. */
  route: string;
  /** Starts what holds the bytes in the store; returns its id ('' when there is none). */
  begin: (storageKey: string, contentType: string) => Promise<string>;
  idleSeconds: number;
  partBytes: number | null;
}

export class ResumableSessions {
  constructor(private readonly deps: SessionsDeps) {}

  /** The key's session: created once; the same request again gets the same session (replayed). */
  async create(r: NewSessionRequest, kind: SessionKind = this.tus): Promise<{ session: SessionRow; replayed: boolean }> {
    // The whole Upload-Metadata counts (canonical: sorted pairs), as do length, type, name, hash.
    const extra = JSON.stringify(Object.entries(r.metadata).sort(([a], [b]) => (a < b ? -1 : 1)));
    const fp = fingerprint({ method: 'POST', route: kind.route, tenantId: r.tenantId, contentLength: r.uploadLength, contentType: r.contentType, sha256: r.declaredSha256, fileName: r.fileName, extra });
    const db = this.deps.pool;
    const existing = await dependency('database_unavailable', () => findSessionByKey(db, r.tenantId, r.key));
    if (existing) return { session: this.sameRequest(existing, fp), replayed: true };
    const held = await dependency('database_unavailable', () => findKeyAnswer(db, r.tenantId, r.key));
    if (held?.expired) throw problem('idempotency_key_expired', 'This Idempotency-Key was used and has expired; use a new key.', { extra: { uploadId: held.upload_id } });
    if (held) throw reuse();
    // Checked again under the tenant's lock at insert; this one spares the store a multipart.
    if ((await dependency('database_unavailable', () => countLive(db, r.tenantId, 'open_sessions'))) >= this.deps.maxOpenSessions) throw tooManySessions(this.deps.maxOpenSessions);

    const id = randomUUID();
    const storageKey = `${keyStoragePrefix(r.tenantId, r.key)}${id}`;
    const multipartId = await dependency('storage_unavailable', () => kind.begin(storageKey, r.contentType));
    const abort = () => (multipartId ? this.deps.store.abortParts(storageKey, multipartId).catch(() => {}) : undefined);
    const { row, created } = await dependency('database_unavailable', () =>
      insertSessionOrGet(db, {
        id, tenant_id: r.tenantId, idempotency_key: r.key, fingerprint: fp, upload_length: r.uploadLength, upload_metadata: r.uploadMetadata,
        content_type: r.contentType, file_name: r.fileName, declared_sha256: r.declaredSha256, storage_key: storageKey, multipart_id: multipartId,
        mode: kind.mode, part_bytes: kind.partBytes,
      }, this.deps.maxOpenSessions).catch((err: unknown) => {
        throw err instanceof QuotaReached ? tooManySessions(err.limit) : err;
      }),
    ).catch(async (err: unknown) => {
      await abort();
      throw err;
    });
    if (!created) {
      // A concurrent creation with this key won: use its session (or refuse another request).
      await abort();
      return { session: this.sameRequest(row, fp), replayed: true };
    }
    try {
      await this.startWorkflow(row, kind.idleSeconds);
    } catch (err) {
      // The key's run (if any) is another request's: only this session goes.
      await this.discard(row, { endRun: false });
      throw err;
    }
    return { session: row, replayed: false };
  }

  /** Starts (or finds) the key's workflow; refuses when the key's run is another request's. */
  private async startWorkflow(s: SessionRow, idleSeconds: number): Promise<void> {
    const workflowId = uploadWorkflowId(s.tenant_id, s.idempotency_key);
    const options = this.deps.receiver.startOptions(uploadRequest(s), workflowId, { resumable: { sessionId: s.id, idleSeconds } });
    const startOrFind = () =>
      dependency('temporal_unavailable', async () => {
        const handle = await this.deps.temporal.withDeadline(Date.now() + 8_000, () => this.deps.temporal.workflow.start(uploadWorkflow, options));
        return handle.describe();
      });
    let described = await startOrFind();
    // The run of an earlier session of this key that just expired or was terminated (its
    // row is gone) may still be closing: once it has, this session's run starts.
    for (let i = 0; i < 50 && described.memo?.fingerprint !== s.fingerprint && described.status.name === 'RUNNING' && (await this.sessionGone(described.memo?.sessionId)); i++) {
      await new Promise((r) => setTimeout(r, 200));
      described = await startOrFind();
    }
    if (described.memo?.fingerprint !== s.fingerprint) throw reuse();
  }

  private async sessionGone(sessionId: unknown): Promise<boolean> {
    return typeof sessionId === 'string' && !(await sessionExists(this.deps.pool, sessionId));
  }

  /** How tus sessions are made: a multipart in the store, the tus route, the tus expiry. */
  private get tus(): SessionKind {
    return { mode: 'tus', route: RESUMABLE_ROUTE, begin: (key, contentType) => this.deps.store.beginParts(key, contentType), idleSeconds: this.deps.idleSeconds, partBytes: null };
  }

  async find(tenantId: string, id: string, mode: SessionMode = 'tus'): Promise<SessionRow> {
    const s = await dependency('database_unavailable', () => findSession(this.deps.pool, tenantId, id, mode));
    if (!s) throw problem('not_found', 'No such upload (it may have expired or been terminated).');
    return s;
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
    const owner = randomUUID();
    const leased = await this.lease(tenantId, id, owner);
    let write: WriteResult;
    try {
      if (offset !== Number(leased.upload_offset)) throw problem('upload_offset_mismatch', `Upload-Offset is ${offset} but the upload is at ${leased.upload_offset}.`, { extra: { uploadOffset: Number(leased.upload_offset) } });
      if (bodyBytes !== undefined && offset + bodyBytes > Number(leased.upload_length)) {
        throw problem('payload_too_large', `${bodyBytes} bytes at offset ${offset} pass Upload-Length (${leased.upload_length}).`);
      }
      write = leased.state === 'open' ? await writeChunk(this.deps, leased, owner, body, checksum) : { offset, complete: true };
    } finally {
      await releaseLease(this.deps.pool, id, owner).catch(() => {});
    }
    if (!write.complete) return { write, session: leased };
    return { write, outcome: await this.complete(tenantId, id, waitMs), session: leased };
  }

  /** Assembles the object, checks the whole-file SHA-256 and commits it like any upload. */
  async complete(tenantId: string, id: string, waitMs: number): Promise<UploadOutcome> {
    const db = this.deps.pool;
    await dependency('database_unavailable', () => moveSession(db, id, ['open'], 'completing'));
    const s = await this.find(tenantId, id);
    const length = Number(s.upload_length);
    await dependency('storage_unavailable', async () => {
      if (s.parts.length === 0) {
        await this.deps.store.put(s.storage_key, Readable.from([]), { contentType: s.content_type, contentLength: 0 });
        await this.deps.store.abortParts(s.storage_key, s.multipart_id);
      } else await this.deps.store.completeParts(s.storage_key, s.multipart_id, s.parts.map((p) => ({ partNumber: p.partNumber, etag: p.etag })));
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
      await this.discard(s, { object: true });
      throw problem('checksum_mismatch', `The declared SHA-256 is ${s.declared_sha256} but the uploaded bytes hash to ${sha256}.`);
    }
    const copy = stagedCopy({ attemptId: s.id, fingerprint: s.fingerprint, storageKey: s.storage_key, bytes: length, sha256, head: s.head ?? Buffer.alloc(0) });
    const outcome = await this.deps.receiver.deliver(uploadRequest(s), copy, waitMs, { resumable: { sessionId: s.id, idleSeconds: this.deps.idleSeconds } });
    if (outcome.kind === 'answer') await moveSession(db, id, ['completing'], 'committed').catch(() => {});
    return outcome;
  }

  /** tus termination: the session, its bytes and its run go, and the key is free. */
  async terminate(tenantId: string, id: string): Promise<void> {
    const owner = randomUUID();
    const leased = await this.lease(tenantId, id, owner);
    if (leased.state !== 'open') {
      await releaseLease(this.deps.pool, id, owner).catch(() => {});
      throw problem('upload_committed', 'This upload is complete; it is not terminated.');
    }
    await this.discard(leased);
  }

  /** The session under this request's write lease: 404 when it does not exist, 423 while another holds it. */
  private async lease(tenantId: string, id: string, owner: string): Promise<SessionRow> {
    const leased = await dependency('database_unavailable', () => takeLease(this.deps.pool, tenantId, id, owner, this.deps.leaseSeconds, this.deps.stallSeconds));
    if (leased?.mode === 'tus') return leased;
    if (leased) {
      // A direct upload's id: not a tus upload.
      await releaseLease(this.deps.pool, id, owner).catch(() => {});
      throw problem('not_found', 'No such upload (it may have expired or been terminated).');
    }
    await this.find(tenantId, id);
    throw problem('upload_locked', 'Another request is writing to this upload; retry shortly.');
  }

  /** The session, its bytes and (unless `endRun: false`) its run go; the key is free. */
  async discard(s: SessionRow, opts: { object?: boolean; endRun?: boolean } = {}): Promise<void> {
    await dependency('database_unavailable', () => deleteSession(this.deps.pool, s.id));
    await dependency('storage_unavailable', () => discardSessionObjects(this.deps.store, s, opts));
    if (opts.endRun === false) return;
    // Ending the run frees the key (its reuse policy allows a new run after a failed one).
    await this.deps.temporal.workflow
      .getHandle(uploadWorkflowId(s.tenant_id, s.idempotency_key))
      .terminate('resumable session ended without a commit')
      .catch((err: unknown) => {
        if (!(err instanceof WorkflowNotFoundError)) throw problem('temporal_unavailable', undefined, { cause: err });
      });
  }

  private sameRequest(s: SessionRow, fp: string): SessionRow {
    if (s.fingerprint !== fp) throw reuse();
    return s;
  }

  /** When an idle session expires, as an HTTP date (for Upload-Expires). */
  expiresAt(s: SessionRow): Date {
    return idleExpiry(s, this.deps.idleSeconds);
  }
}

function tooManySessions(limit: number) {
  return problem('too_many_sessions', `This tenant already has ${limit} open upload sessions (tus, direct, Uppy); complete or terminate one, or retry later with the same Idempotency-Key.`, { extra: { limit } });
}

function reuse() {
  return problem('idempotency_key_reuse', 'This Idempotency-Key was already used with a different upload (length, type, name, SHA-256 or mode); use a new key.');
}

export function uploadRequest(s: SessionRow): UploadRequest {
  return {
    tenantId: s.tenant_id,
    idempotencyKey: s.idempotency_key,
    fingerprint: s.fingerprint,
    contentType: s.content_type,
    fileName: s.file_name,
    declaredBytes: Number(s.upload_length),
    declaredSha256: s.declared_sha256,
  };
}
