// Direct uploads: the client sends the bytes to the store itself (a presigned S3 PUT, or a
// multipart upload whose parts are presigned one by one) and the API never carries them.
// The session is a row of the sessions table (mode 'direct') owned by the Idempotency-Key,
// started with the key's upload workflow like a tus session, so the key rule, the expiry
// (the workflow's timer aborts it and frees the key) and the commit are the same. On the
// local-directory store (the embedded default) the API signs URLs to itself instead
// (HMAC under SECRETS_KEY) and takes the bytes, checking length and SHA-256 as they stream.
import type { Readable } from 'node:stream';
import { findSharedObject } from '../../db/queries/records';
import { findSessionById, idleExpiry, type SessionRow } from '../../db/queries/sessions';
import { dependency, problem } from '../../errors';
import { completeSession } from '../../sessions/complete';
import type { SessionKind } from '../../sessions/registry';
import type { SignedRequest } from '../../storage/store';
import { BodyMeter } from '../../upload/body-meter';
import type { UploadOutcome } from '../../upload/receive';
import type { StagedCopy } from '../../upload/types';
import { readStoredHead, stagedCopy } from '../../upload/staged-copy';
import type { SignedModeDeps } from '../signed-mode';

/** The route in a direct session's fingerprint: a key first used here is refused elsewhere. */
export const DIRECT_ROUTE = '/v1/direct-uploads';
const SIGN_PURPOSE = 'direct-upload-object';
/** S3 allows at most 10,000 parts per multipart upload. */
const MAX_PARTS = 10_000;
const MiB = 1024 * 1024;

export interface DirectUploadsDeps extends SignedModeDeps {
  /** Above this a plan is multipart (S3 only; one PUT may carry at most 5 GiB). */
  singlePutMaxBytes: number;
  partBytes: number;
}

export interface DirectPlanRequest {
  tenantId: string;
  /** How long an instant upload's commit may take before the plan answers (state completing). */
  waitMs: number;
  key: string;
  bytes: number;
  sha256: string;
  contentType: string;
  fileName: string | null;
}

export interface DirectPlan {
  id: string;
  idempotencyKey: string;
  state: SessionRow['state'];
  bytes: number;
  sha256: string;
  contentType: string;
  fileName: string | null;
  expiresAt: string;
  /** One PUT of the whole file (absent on multipart plans and once completing). */
  upload?: SignedRequest;
  /** A multipart plan: ask `POST …/parts/{n}` for each part's URL, n = 1..partCount. */
  multipart?: { partBytes: number; partCount: number };
  /** An instant upload (the tenant dedupes and has these bytes already): the committed upload, no bytes to send. */
  committedUpload?: Record<string, unknown>;
}

export class DirectUploads {
  constructor(private readonly deps: DirectUploadsDeps) {}

  /** The key's session: created once; the same request again gets it again, with fresh URLs. */
  async plan(r: DirectPlanRequest): Promise<{ plan: DirectPlan; replayed: boolean }> {
    const presigner = this.deps.store.presigner;
    const multipart = presigner !== undefined && r.bytes > Math.min(this.deps.singlePutMaxBytes, 5 * 1024 * MiB);
    const kind: SessionKind = {
      mode: 'direct',
      route: DIRECT_ROUTE,
      begin: multipart ? (key, contentType) => presigner.beginCheckedParts(key, contentType) : async () => '',
      idleSeconds: this.deps.expirySeconds,
      partBytes: multipart ? partBytesFor(r.bytes, this.deps.partBytes) : null,
    };
    const { session, replayed } = await this.deps.sessions.create(
      { tenantId: r.tenantId, key: r.key, uploadLength: r.bytes, uploadMetadata: '', metadata: {}, contentType: r.contentType, fileName: r.fileName, declaredSha256: r.sha256 },
      kind,
    );
    if (session.state === 'open') {
      // Instant upload: a deduping tenant already stores these bytes; nothing moves.
      const shared = await dependency('database_unavailable', () => findSharedObject(this.deps.pool, r.tenantId, r.sha256, r.bytes));
      if (shared) {
        const outcome = await this.complete(r.tenantId, session.id, r.waitMs, (s) => this.sharedCopy(s, shared));
        const now = await this.deps.sessions.find(r.tenantId, session.id, 'direct');
        // No part will come: the plan's multipart upload (if any) goes.
        if (now.state === 'committed' && now.multipart_id) await this.deps.store.abortParts(now.storage_key, now.multipart_id).catch(() => {});
        const plan = await this.view(now);
        if (outcome.kind === 'answer' && outcome.response.status < 300) plan.committedUpload = JSON.parse(outcome.response.body) as Record<string, unknown>;
        return { plan, replayed };
      }
    }
    return { plan: await this.view(session), replayed };
  }

  /** The copy of an instant upload: the object already stored with the declared bytes. */
  private async sharedCopy(s: SessionRow, storageKey: string): Promise<StagedCopy> {
    const head = await dependency('storage_unavailable', () => this.deps.store.head(storageKey));
    if (!head || head.bytes !== Number(s.upload_length)) throw problem('direct_upload_incomplete', 'The stored copy of these bytes is gone; upload them.');
    return stagedCopy({ attemptId: s.id, fingerprint: s.fingerprint, storageKey, bytes: head.bytes, sha256: s.declared_sha256!, head: await this.readHead(storageKey) });
  }

  async find(tenantId: string, id: string): Promise<DirectPlan> {
    return this.view(await this.deps.sessions.find(tenantId, id, 'direct'));
  }

  /** A signed URL for part `n` of a multipart plan; the store checks the part against `sha256Base64`. */
  async partRequest(tenantId: string, id: string, n: number, sha256Base64: string): Promise<SignedRequest & { partNumber: number; bytes: number }> {
    const s = await this.deps.sessions.find(tenantId, id, 'direct');
    const partBytes = Number(s.part_bytes ?? 0);
    if (!partBytes || !this.deps.store.presigner) throw problem('not_found', 'This direct upload is one PUT, not multipart: use its `upload` request.');
    const count = partCount(Number(s.upload_length), partBytes);
    if (!Number.isInteger(n) || n < 1 || n > count) throw problem('not_found', `Part numbers of this upload run from 1 to ${count}.`);
    if (s.state !== 'open') throw problem('upload_committed', 'This direct upload is completing or complete; no more parts are taken.');
    const bytes = n < count ? partBytes : Number(s.upload_length) - partBytes * (count - 1);
    const signed = await dependency('storage_unavailable', () =>
      this.deps.store.presigner!.presignPart(s.storage_key, s.multipart_id, n, { bytes, sha256Base64, expiresSeconds: this.urlSeconds(s) }),
    );
    return { ...signed, partNumber: n, bytes };
  }

  /**
   * The embedded store's PUT: checks the signature, then streams the body to the session's
   * object; a body of another length or SHA-256 leaves nothing behind.
   */
  async receiveObject(id: string, expires: string | undefined, signature: string | undefined, body: Readable): Promise<void> {
    const exp = Number(expires);
    if (!expires || !signature || !Number.isInteger(exp) || !this.deps.box.verify(SIGN_PURPOSE, `${id}\n${exp}`, signature)) {
      throw problem('signature_invalid', 'The URL is not one this server signed (or it was changed).');
    }
    if (exp * 1000 < Date.now()) throw problem('signature_invalid', 'The URL has expired; create the direct upload again with the same Idempotency-Key for a fresh one.');
    const s = await dependency('database_unavailable', () => findSessionById(this.deps.pool, id, 'direct'));
    if (!s) throw problem('not_found', 'No such direct upload (it may have expired).');
    if (s.state !== 'open') throw problem('upload_committed', 'This direct upload is completing or complete; its object is not replaced.');
    const meter = new BodyMeter(Number(s.upload_length), s.declared_sha256 ?? undefined);
    const onAbort = () => meter.abort();
    body.once('aborted', onAbort);
    body.once('error', onAbort);
    body.pipe(meter);
    try {
      await this.deps.store.put(s.storage_key, meter, { contentType: s.content_type, contentLength: Number(s.upload_length) });
    } catch (err) {
      throw meter.failure ?? err;
    } finally {
      body.off('aborted', onAbort);
      body.off('error', onAbort);
      body.unpipe(meter);
    }
  }

  /**
   * Verifies the object in the store and commits it like any upload: the answer is the
   * upload JSON, stored under the key; a complete sent again gets the same answer.
   */
  async complete(tenantId: string, id: string, waitMs: number, verify: (s: SessionRow) => Promise<StagedCopy> = (s) => this.verify(s)): Promise<UploadOutcome> {
    return completeSession({ pool: this.deps.pool, receiver: this.deps.receiver }, { tenantId, id, mode: 'direct', idleSeconds: this.deps.expirySeconds }, waitMs, verify);
  }

  /** The object is there, whole, with the declared SHA-256 (or the parts' checksums for multipart). */
  private async verify(s: SessionRow): Promise<StagedCopy> {
    const length = Number(s.upload_length);
    const presigner = this.deps.store.presigner;
    if (presigner && s.multipart_id) {
      const parts = await dependency('storage_unavailable', () => presigner.listParts(s.storage_key, s.multipart_id).catch(async (err: unknown) => {
        // Completed by an earlier complete whose answer was lost: the object is there.
        if ((err as { name?: string }).name === 'NoSuchUpload' && (await presigner.checksum(s.storage_key))) return null;
        throw err;
      }));
      if (parts) {
        const partBytes = Number(s.part_bytes);
        const count = partCount(length, partBytes);
        const missing: number[] = [];
        for (let n = 1; n <= count; n++) {
          const p = parts.find((x) => x.partNumber === n);
          const want = n < count ? partBytes : length - partBytes * (count - 1);
          if (!p || p.bytes !== want || !p.sha256Base64) missing.push(n);
        }
        if (missing.length > 0) throw problem('direct_upload_incomplete', `Parts not uploaded yet: ${summarize(missing)}.`, { extra: { missingParts: missing.slice(0, 100) } });
        await dependency('storage_unavailable', () => presigner.completeCheckedParts(s.storage_key, s.multipart_id, parts.filter((p) => p.partNumber <= count)));
      }
    }
    const stored = presigner
      ? await dependency('storage_unavailable', () => presigner.checksum(s.storage_key))
      : await dependency('storage_unavailable', async () => {
          const head = await this.deps.store.head(s.storage_key);
          // The API wrote it itself, after checking length and SHA-256 on the way in.
          return head && { bytes: head.bytes, sha256Base64: hexToBase64(s.declared_sha256!), composite: false };
        });
    if (!stored) throw problem('direct_upload_incomplete', 'The object has not been uploaded yet: PUT it with the request of the plan, then complete.');
    if (stored.bytes !== length || (!stored.composite && stored.sha256Base64 !== hexToBase64(s.declared_sha256!))) {
      // Not what was declared (a store that does not check checksums): it goes, the session stays open.
      await this.deps.store.delete(s.storage_key).catch(() => {});
      throw problem('checksum_mismatch', `The stored object (${stored.bytes} bytes) does not match the declared size and SHA-256; upload it again.`);
    }
    return stagedCopy({ attemptId: s.id, fingerprint: s.fingerprint, storageKey: s.storage_key, bytes: length, sha256: s.declared_sha256!, head: await this.readHead(s.storage_key) });
  }

  private readHead(key: string): Promise<Buffer> {
    return dependency('storage_unavailable', () => readStoredHead(this.deps.store, key));
  }

  private async view(s: SessionRow): Promise<DirectPlan> {
    const plan: DirectPlan = {
      id: s.id,
      idempotencyKey: s.idempotency_key,
      state: s.state,
      bytes: Number(s.upload_length),
      sha256: s.declared_sha256!,
      contentType: s.content_type,
      fileName: s.file_name,
      expiresAt: this.expiresAt(s).toISOString(),
    };
    if (s.state !== 'open') return plan;
    if (s.part_bytes) plan.multipart = { partBytes: Number(s.part_bytes), partCount: partCount(Number(s.upload_length), Number(s.part_bytes)) };
    else plan.upload = await this.objectRequest(s);
    return plan;
  }

  private async objectRequest(s: SessionRow): Promise<SignedRequest> {
    const expiresSeconds = this.urlSeconds(s);
    const presigner = this.deps.store.presigner;
    if (presigner) {
      return dependency('storage_unavailable', () =>
        presigner.presignPut(s.storage_key, { bytes: Number(s.upload_length), sha256Base64: hexToBase64(s.declared_sha256!), contentType: s.content_type, expiresSeconds }),
      );
    }
    const expires = Math.floor(Date.now() / 1000) + expiresSeconds;
    const signature = this.deps.box.sign(SIGN_PURPOSE, `${s.id}\n${expires}`);
    // Relative to the API (the embedded default serves the bytes itself).
    const url = `/v1/direct-uploads/${s.id}/object?expires=${expires}&signature=${signature}`;
    return { method: 'PUT', url, headers: { 'content-length': String(s.upload_length), 'content-type': s.content_type }, expiresAt: new Date(expires * 1000) };
  }

  /** A URL never outlives its session. */
  private urlSeconds(s: SessionRow): number {
    const left = Math.floor((this.expiresAt(s).getTime() - Date.now()) / 1000);
    return Math.max(1, Math.min(this.deps.urlSeconds, left));
  }

  private expiresAt(s: SessionRow): Date {
    // As the workflow's expiry check counts it: from the last change of the session.
    return idleExpiry(s, this.deps.expirySeconds);
  }
}

/** The configured part size, raised (to whole MiB) when the file would need more than 10,000 parts. */
export function partBytesFor(bytes: number, configured: number): number {
  const needed = Math.ceil(bytes / MAX_PARTS / MiB) * MiB;
  return Math.max(configured, needed);
}

export function partCount(bytes: number, partBytes: number): number {
  return Math.max(1, Math.ceil(bytes / partBytes));
}

function hexToBase64(hex: string): string {
  return Buffer.from(hex, 'hex').toString('base64');
}

function summarize(ns: number[]): string {
  return ns.length <= 10 ? ns.join(', ') : `${ns.slice(0, 10).join(', ')} and ${ns.length - 10} more`;
}
