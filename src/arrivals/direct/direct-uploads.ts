// Direct uploads: the client sends the bytes to where the plan's signed requests point (its
// key's target, ./targets.ts: the S3 store it goes to, or the API's own PUT on the local one) and
// the API then commits them. The session is a row of the session core (mode 'direct') owned
// by the Idempotency-Key, started with the key's upload workflow like a tus session, so the
// key rule, the expiry (the workflow's timer aborts it and frees the key) and the commit
// (completeSession) are the same.
import type { Readable } from 'node:stream';
import { findSharedObject } from '../../db/queries/records';
import { parseAddress } from '../../storage/address';
import { findSessionById, idleExpiry, type SessionRow } from '../../db/queries/sessions';
import { dependency, problem } from '../../errors';
import { completeSession } from '../../sessions/complete';
import type { SessionKind } from '../../sessions/registry';
import type { SignedRequest } from '../../storage/store';
import type { UploadOutcome } from '../../upload/receive';
import type { DeclaredUpload, StagedCopy } from '../../upload/types';
import { readStoredHead, stagedCopy } from '../../upload/staged-copy';
import type { SignedModeDeps } from '../signed-mode';
import { hexToBase64, partCount, type DirectTargets, type SignedQuery } from './targets';
import { currentPrincipal, formatParent, parseParent, type Parent } from '../../tokens/parent';
import { assertParentMay, parentAccess } from '../../http/scopes';

/** What the credential behind the embedded store's signed PUT must hold now: what planning it took. */
const DIRECT_PUTS = parentAccess('uploads:write', { uploadToken: 'own-sessions' });

/** The route in a direct session's fingerprint: a key first used here is refused elsewhere. */
export const DIRECT_ROUTE = '/v1/direct-uploads';

export interface DirectUploadsDeps extends SignedModeDeps {
  /** Where each session's bytes go: the S3 store its key lives in, or the API's own signed PUT. */
  targets: DirectTargets;
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
  /** `waitMs`: how long an instant upload's commit may take before the plan answers (state completing). */
  /** `by`: the credential planning it (src/tokens/parent.ts), which the embedded store's signed PUT acts as. */
  async plan(
    r: DeclaredUpload & { bytes: number; sha256: string },
    waitMs: number,
    by: Parent,
  ): Promise<{ plan: DirectPlan; replayed: boolean }> {
    const kind: SessionKind = {
      mode: 'direct',
      route: DIRECT_ROUTE,
      begin: async (key, contentType) => (await this.deps.targets.of(key)).begin(key, contentType, r.bytes),
      idleSeconds: this.deps.expirySeconds,
    };
    const { session, replayed } = await this.deps.sessions.create({ upload: r, uploadMetadata: '', metadata: {} }, kind);
    if (session.state === 'open') {
      // Instant upload: a deduping tenant already stores these bytes on the session's target; nothing moves.
      const { targetId } = parseAddress(session.storage_key);
      const shared = await dependency('database_unavailable', () =>
        findSharedObject(this.deps.pool, r.tenantId, r.sha256, r.bytes, targetId),
      );
      if (shared) {
        const outcome = await this.complete(r.tenantId, session.id, waitMs, (s) => this.sharedCopy(s, shared));
        const now = await this.deps.sessions.find(r.tenantId, session.id, 'direct');
        // No part will come: the plan's multipart upload (if any) goes.
        if (now.state === 'committed' && now.multipart_id)
          await this.deps.store.abortParts(now.storage_key, now.multipart_id).catch(() => {}); // the store's multipart expiry ends it
        const plan = await this.view(now, by);
        if (outcome.kind === 'answer' && outcome.response.status < 300)
          plan.committedUpload = JSON.parse(outcome.response.body) as Record<string, unknown>;
        return { plan, replayed };
      }
    }
    return { plan: await this.view(session, by), replayed };
  }

  /** The copy of an instant upload: the object already stored with the declared bytes. */
  private async sharedCopy(s: SessionRow, storageKey: string): Promise<StagedCopy> {
    const head = await dependency('storage_unavailable', () => this.deps.store.head(storageKey));
    if (!head || head.bytes !== Number(s.upload_length))
      throw problem('direct_upload_incomplete', 'The stored copy of these bytes is gone; upload them.');
    return stagedCopy({
      attemptId: s.id,
      fingerprint: s.fingerprint,
      storageKey,
      bytes: head.bytes,
      sha256: s.declared_sha256!,
      head: await this.readHead(storageKey),
    });
  }

  /** The plan, for the credential `by` asking; an upload token finds only the plans it made. */
  async find(tenantId: string, id: string, by: Parent): Promise<DirectPlan> {
    return this.view(await this.deps.sessions.find(tenantId, id, 'direct', by.kind === 'token' ? by.id : undefined), by);
  }

  /** A signed URL for part `n` of a multipart plan; the store checks the part against `sha256Base64`. */
  async partRequest(
    tenantId: string,
    id: string,
    n: number,
    sha256Base64: string,
  ): Promise<SignedRequest & { partNumber: number; bytes: number }> {
    const s = await this.deps.sessions.find(tenantId, id, 'direct');
    const partBytes = Number(s.part_bytes ?? 0);
    if (!partBytes) throw problem('not_found', 'This direct upload is one PUT, not multipart: use its `upload` request.');
    const count = partCount(Number(s.upload_length), partBytes);
    if (!Number.isInteger(n) || n < 1 || n > count) throw problem('not_found', `Part numbers of this upload run from 1 to ${count}.`);
    if (s.state !== 'open') throw problem('upload_committed', 'This direct upload is completing or complete; no more parts are taken.');
    const bytes = n < count ? partBytes : Number(s.upload_length) - partBytes * (count - 1);
    const signed = await dependency('storage_unavailable', async () =>
      (await this.deps.targets.of(s.storage_key)).partRequest(s, n, { bytes, sha256Base64, expiresSeconds: this.urlSeconds(s) }),
    );
    return { ...signed, partNumber: n, bytes };
  }

  /**
   * The embedded store's PUT: checks the signature, then streams the body to the session's
   * object; a body of another length or SHA-256 leaves nothing behind.
   */
  async receiveObject(id: string, signed: SignedQuery, body: Readable): Promise<void> {
    const { selfSigned } = this.deps.targets;
    selfSigned.checkSignature(id, signed);
    const s = await dependency('database_unavailable', () => findSessionById(this.deps.pool, id, 'direct'));
    if (!s) throw problem('not_found', 'No such direct upload (it may have expired).');
    // Only the URLs of a session no store signs for point here.
    if ((await dependency('storage_unavailable', () => this.deps.targets.of(s.storage_key))) !== selfSigned)
      throw problem('not_found', 'No such direct upload.');
    // The URL acts as the credential that planned the upload, as it stands now.
    const parent = parseParent(signed.by);
    if (!parent) throw problem('signature_invalid', 'The URL names no credential that asked for it; get the plan again.');
    const current = await dependency('database_unavailable', () => currentPrincipal(this.deps.pool, s.tenant_id, parent));
    assertParentMay(parent, current, DIRECT_PUTS);
    if (s.state !== 'open') throw problem('upload_committed', 'This direct upload is completing or complete; its object is not replaced.');
    await selfSigned.receive(s, body);
  }

  /**
   * Verifies the object in the store and commits it like any upload: the answer is the
   * upload JSON, stored under the key; a complete sent again gets the same answer.
   */
  async complete(
    tenantId: string,
    id: string,
    waitMs: number,
    verify: (s: SessionRow) => Promise<StagedCopy> = (s) => this.verify(s),
  ): Promise<UploadOutcome> {
    return completeSession(
      { pool: this.deps.pool, receiver: this.deps.receiver, registry: this.deps.sessions },
      { tenantId, id, mode: 'direct', idleSeconds: this.deps.expirySeconds },
      waitMs,
      verify,
    );
  }

  /** The object is there, whole, with the declared SHA-256 (or the parts' checksums for multipart). */
  private async verify(s: SessionRow): Promise<StagedCopy> {
    const length = Number(s.upload_length);
    const stored = await dependency('storage_unavailable', async () => (await this.deps.targets.of(s.storage_key)).stored(s));
    if (!stored)
      throw problem(
        'direct_upload_incomplete',
        'The object has not been uploaded yet: PUT it with the request of the plan, then complete.',
      );
    if (stored.bytes !== length || (!stored.composite && stored.sha256Base64 !== hexToBase64(s.declared_sha256!))) {
      // Not what was declared (a store that does not check checksums): it goes, the session stays open.
      await this.deps.store.delete(s.storage_key).catch(() => {}); // the next PUT overwrites it
      throw problem(
        'checksum_mismatch',
        `The stored object (${stored.bytes} bytes) does not match the declared size and SHA-256; upload it again.`,
      );
    }
    return stagedCopy({
      attemptId: s.id,
      fingerprint: s.fingerprint,
      storageKey: s.storage_key,
      bytes: length,
      sha256: s.declared_sha256!,
      head: await this.readHead(s.storage_key),
    });
  }

  private readHead(key: string): Promise<Buffer> {
    return dependency('storage_unavailable', () => readStoredHead(this.deps.store, key));
  }

  private async view(s: SessionRow, by: Parent): Promise<DirectPlan> {
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
    if (s.part_bytes)
      plan.multipart = { partBytes: Number(s.part_bytes), partCount: partCount(Number(s.upload_length), Number(s.part_bytes)) };
    else plan.upload = await this.objectRequest(s, by);
    return plan;
  }

  private objectRequest(s: SessionRow, by: Parent): Promise<SignedRequest> {
    return dependency('storage_unavailable', async () =>
      (await this.deps.targets.of(s.storage_key)).putRequest(s, this.urlSeconds(s), formatParent(by)),
    );
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
