// The mode-neutral session core's registry: a session of any mode (tus, direct, Uppy) is a
// row owned by its Idempotency-Key, created once (the same request again gets the same
// session; another is refused with 422), under the tenant's open-session cap, with the
// key's upload workflow started beside it; found, and discarded (row, bytes, run). Writes
// and completion live in the modes (src/arrivals/*) and in ./lease.ts and ./complete.ts.
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { Pool } from '../db/pool';
import { findKeyAnswer } from '../db/queries/idempotency-keys';
import { deleteSession, findSession, findSessionByKey, insertSessionOrGet, sessionExists, type SessionRow } from '../db/queries/sessions';
import { countLive, QuotaReached } from '../db/queries/quotas';
import { dependency, problem } from '../errors';
import type { SessionMode } from '../modes';
import type { ObjectStore } from '../storage/store';
import { uploadWorkflowId } from '../temporal/ids';
import type { Placement } from '../placement/placement';
import { fingerprint } from '../upload/fingerprint';
import type { UploadReceiver } from '../upload/receive';
import type { DeclaredUpload, UploadRequest } from '../upload/types';

import type { UploadWorkflow } from '../temporal/definitions';
import { discardSessionObjects, endSessionRun } from './cleanup';
import { noSuchSession } from './lease';
import { workflowTypes } from '../temporal/names';
import { activeTraceparent } from '../telemetry/context';

export interface RegistryDeps {
  pool: Pool;
  store: ObjectStore;
  temporal: Client;
  receiver: UploadReceiver;
  /** Refuses a new session its caller, token or pipeline does not admit (the doors' intake); a replay is not asked. */
  admit: (upload: DeclaredUpload) => Promise<void>;
  /** Ends an admitted upload's reservation under the byte quotas when its session was not created. */
  release: (upload: DeclaredUpload) => Promise<void>;
  /** Which storage target a new session's object goes to. */
  placement: Pick<Placement, 'prefixFor'>;
  /** Sessions of every mode a tenant may have open (not yet committed) at once. */
  maxOpenSessions: number;
}

export interface NewSessionRequest {
  /** What the door declared, under its caller (`bytes`: Upload-Length; absent for Uppy, which declares none). */
  upload: DeclaredUpload;
  /** tus's Upload-Metadata as sent (answered on HEAD). */
  uploadMetadata: string;
  /** What identifies the file besides its declared fields (counted in the fingerprint). */
  metadata: Record<string, string>;
}

/** What a mode decides at creation. */
export interface SessionKind {
  mode: SessionMode;
  /** Recorded in the fingerprint: a key first used by one mode is refused by another. */
  route: string;
  /**
   * Starts what holds the bytes in the store: its multipart id ('' when there is none) and the
   * part size the client sends in (null: the mode's own appends, or one PUT).
   */
  begin: (storageKey: string, contentType: string) => Promise<{ multipartId: string; partBytes: number | null }>;
  idleSeconds: number;
}

export class SessionRegistry {
  constructor(private readonly deps: RegistryDeps) {}

  /** The key's session: created once; the same request again gets the same session (replayed). */
  async create(r: NewSessionRequest, kind: SessionKind): Promise<{ session: SessionRow; replayed: boolean }> {
    const u = r.upload;
    const uploadLength = u.bytes ?? 0;
    // The whole Upload-Metadata counts (canonical: sorted pairs), as do length, type, name, hash.
    const extra = JSON.stringify(Object.entries(r.metadata).sort(([a], [b]) => (a < b ? -1 : 1)));
    const fp = fingerprint({
      method: 'POST',
      route: kind.route,
      tenantId: u.tenantId,
      contentLength: uploadLength,
      contentType: u.contentType,
      sha256: u.sha256,
      fileName: u.fileName,
      extra,
      expiresAt: u.expiresAt,
      pipeline: u.pipeline,
      labels: u.labels,
      storageTarget: u.storageTarget,
    });
    const db = this.deps.pool;
    const existing = await dependency('database_unavailable', () => findSessionByKey(db, u.tenantId, u.key));
    if (existing) return { session: this.sameRequest(existing, fp), replayed: true };
    const held = await dependency('database_unavailable', () => findKeyAnswer(db, u.tenantId, u.key));
    if (held?.expired)
      throw problem('idempotency_key_expired', 'This Idempotency-Key was used and has expired; use a new key.', {
        extra: { uploadId: held.upload_id },
      });
    if (held) throw reuse();
    await this.deps.admit(u);
    try {
      return await this.open(r, kind, fp);
    } catch (err) {
      // Refused after its admission: its reservation goes too (a session that holds the key keeps it).
      await this.deps.release(u);
      throw err;
    }
  }

  /** A new session for an admitted request: its store object begun, its row, its run. */
  private async open(r: NewSessionRequest, kind: SessionKind, fp: string): Promise<{ session: SessionRow; replayed: boolean }> {
    const u = r.upload;
    const db = this.deps.pool;
    const uploadLength = u.bytes ?? 0;
    // Checked again under the tenant's lock at insert; this one spares the store a multipart.
    if ((await dependency('database_unavailable', () => countLive(db, u.tenantId, 'open_sessions'))) >= this.deps.maxOpenSessions)
      throw tooManySessions(this.deps.maxOpenSessions);

    const id = randomUUID();
    const keyPrefix = await this.deps.placement.prefixFor({
      tenantId: u.tenantId,
      idempotencyKey: u.key,
      storageTarget: u.storageTarget,
      pinnedTarget: u.grant?.storageTarget,
    });
    const storageKey = `${keyPrefix}${id}`;
    const { multipartId, partBytes } = await dependency('storage_unavailable', () => kind.begin(storageKey, u.contentType));
    // A multipart no row names: the store's multipart expiry (and housekeeping) ends it.
    const abort = () => (multipartId ? this.deps.store.abortParts(storageKey, multipartId).catch(() => {}) : undefined);
    const { row, created } = await dependency('database_unavailable', () =>
      insertSessionOrGet(
        db,
        {
          id,
          tenant_id: u.tenantId,
          idempotency_key: u.key,
          fingerprint: fp,
          upload_length: uploadLength,
          upload_metadata: r.uploadMetadata,
          content_type: u.contentType,
          file_name: u.fileName,
          declared_sha256: u.sha256,
          expires_at: u.expiresAt ?? null,
          upload_grant: u.grant ?? null,
          pipeline: u.pipeline ?? null,
          labels: u.labels ?? null,
          storage_key: storageKey,
          multipart_id: multipartId,
          mode: kind.mode,
          part_bytes: partBytes,
          traceparent: activeTraceparent(),
        },
        this.deps.maxOpenSessions,
      ).catch((err: unknown) => {
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
        const handle = await this.deps.temporal.withDeadline(Date.now() + 8_000, () =>
          this.deps.temporal.workflow.start<UploadWorkflow>(workflowTypes.upload, options),
        );
        return handle.describe();
      });
    let described = await startOrFind();
    // The run of an earlier session of this key that just expired or was terminated (its
    // row is gone) may still be closing: once it has, this session's run starts.
    for (
      let i = 0;
      i < 50 &&
      described.memo?.fingerprint !== s.fingerprint &&
      described.status.name === 'RUNNING' &&
      (await this.sessionGone(described.memo?.sessionId));
      i++
    ) {
      await new Promise((r) => setTimeout(r, 200));
      described = await startOrFind();
    }
    if (described.memo?.fingerprint !== s.fingerprint) throw reuse();
  }

  private async sessionGone(sessionId: unknown): Promise<boolean> {
    return typeof sessionId === 'string' && !(await sessionExists(this.deps.pool, sessionId));
  }

  /** The session; with `tokenId`, only one that upload token created. */
  async find(tenantId: string, id: string, mode: SessionMode, tokenId?: string): Promise<SessionRow> {
    const s = await dependency('database_unavailable', () => findSession(this.deps.pool, tenantId, id, mode));
    if (!s || (tokenId !== undefined && s.upload_grant?.tokenId !== tokenId)) throw noSuchSession();
    return s;
  }

  /** The session, its bytes and (unless `endRun: false`) its run go; the key is free. */
  async discard(s: SessionRow, opts: { object?: boolean; endRun?: boolean } = {}): Promise<void> {
    await dependency('database_unavailable', () => deleteSession(this.deps.pool, s.id));
    await dependency('storage_unavailable', () => discardSessionObjects(this.deps.store, s, opts));
    if (opts.endRun === false) return;
    await dependency('temporal_unavailable', () => endSessionRun(this.deps.temporal, s));
  }

  private sameRequest(s: SessionRow, fp: string): SessionRow {
    if (s.fingerprint !== fp) throw reuse();
    return s;
  }
}

function tooManySessions(limit: number) {
  return problem(
    'too_many_sessions',
    `This tenant already has ${limit} open upload sessions (tus, direct, Uppy); complete or terminate one, or retry later with the same Idempotency-Key.`,
    { extra: { limit } },
  );
}

function reuse() {
  return problem(
    'idempotency_key_reuse',
    'This Idempotency-Key was already used with a different upload (length, type, name, SHA-256 or mode); use a new key.',
  );
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
    ...(s.expires_at ? { expiresAt: s.expires_at.toISOString() } : {}),
    ...(s.upload_grant ? { grant: s.upload_grant } : {}),
    ...(s.pipeline ? { pipeline: s.pipeline } : {}),
    ...(s.labels ? { labels: s.labels } : {}),
    mode: s.mode,
  };
}
