// The routes @uppy/aws-s3 6.x calls on a "companion" (`companionEndpoint`), served by
// Oncely under the same key rule: the Idempotency-Key rides in Uppy's file metadata
// (`idempotencyKey`), so an unmodified Uppy setup gets exactly-once.
//  - Multipart (Uppy's large files): a session of mode 'uppy' owned by the key; the parts
//    go straight to the store under presigned URLs; `complete` completes the multipart
//    server-side (only if no object exists yet), hashes the object once (Uppy sends no
//    checksums, so this is the only way to know its SHA-256) and runs the same commit.
//  - One request (`GET /s3/params`): Uppy then POSTs a form and never calls back, so the
//    form goes to Oncely's own form endpoint (which commits inline), not to the store.
// Uppy sends no Authorization header to a companion, so the endpoint URL carries a
// credential of its own: a tenant-scoped token the page gets from POST /v1/uppy-endpoints.
import { createHash } from 'node:crypto';
import { findSessionByUploadId, type SessionRow } from '../../db/queries/sessions';
import { dependency, problem } from '../../errors';
import { completeSession } from '../../sessions/complete';
import type { UploadOutcome } from '../../upload/receive';
import type { DeclaredUpload, StagedCopy } from '../../upload/types';
import { HeadBytes, stagedCopy } from '../../upload/staged-copy';
import type { SignedModeDeps } from '../signed-mode';
import { formatParent, parseParent, type Parent } from '../../tokens/parent';
import { companionOwner, type CompanionOwner, type EndpointOwners } from './endpoint';

export const UPPY_ROUTE = '/uppy/s3';
const TOKEN_PURPOSE = 'uppy-companion';

export type UppyCompanionDeps = SignedModeDeps;

export class UppyCompanion implements EndpointOwners {
  constructor(private readonly deps: UppyCompanionDeps) {}

  /** A companion endpoint for one tenant, naming its parent, valid for the session expiry. */
  mintEndpoint(tenantId: string, parent: Parent): { companionEndpoint: string; expiresAt: Date } {
    const subject = `${tenantId}.${formatParent(parent)}`;
    const { expires, signature } = this.deps.box.signUntil(TOKEN_PURPOSE, subject, this.deps.expirySeconds);
    return { companionEndpoint: `/uppy/${subject}.${expires}.${signature}`, expiresAt: new Date(expires * 1000) };
  }

  /** Whom a companion token was minted for and by; 403 when forged, expired or naming no parent. */
  ownerOf(token: string): CompanionOwner {
    const parts = token.split('.');
    const [exp, sig] = parts.slice(-2);
    const subject = parts.slice(0, -2);
    const check = subject.length === 2 ? this.deps.box.checkUntil(TOKEN_PURPOSE, subject.join('.'), exp, sig) : 'invalid';
    if (check === 'invalid') throw problem('signature_invalid', 'This companion endpoint is not one this server minted.');
    if (check === 'expired')
      throw problem('signature_invalid', 'This companion endpoint has expired; get a new one from POST /v1/uppy-endpoints.');
    const [tenantId = '', named] = subject;
    // Endpoints minted by an upload token before they named their parent's kind carry its bare id.
    const parent = parseParent(named) ?? parseParent(`t-${named}`);
    if (!parent)
      throw problem('signature_invalid', 'This companion endpoint names no credential; get a new one from POST /v1/uppy-endpoints.');
    return companionOwner(tenantId, parent);
  }

  /** POST /s3/multipart: the key's session (the same file again gets the same upload id). */
  /** `metadata`: what identifies the file besides its name and type (Uppy knows no hash): its string metadata. */
  async createMultipart(file: DeclaredUpload, metadata: Record<string, string>): Promise<{ key: string; uploadId: string }> {
    const { session } = await this.deps.sessions.create(
      { upload: file, uploadMetadata: '', metadata },
      {
        mode: 'uppy',
        route: UPPY_ROUTE, // Parts without checksums: the store's own multipart (the one tus uses).
        // A store the client cannot reach is 501, found once the upload is admitted (its limits answer first).
        begin: async (storageKey, type) => {
          await this.needsPresigner(storageKey);
          return { multipartId: await this.deps.store.beginParts(storageKey, type), partBytes: null };
        },
        idleSeconds: this.deps.expirySeconds,
      },
    );
    if (session.state !== 'open') throw problem('upload_committed', 'This file is already uploaded under its key.');
    return { key: session.storage_key, uploadId: session.multipart_id };
  }

  async partUrl(
    owner: CompanionOwner,
    uploadId: string,
    objectKey: string,
    n: number,
  ): Promise<{ url: string; expires: number; headers: Record<string, string> }> {
    const s = await this.session(owner, uploadId, objectKey);
    if (!Number.isInteger(n) || n < 1 || n > 10_000) throw problem('not_found', 'Part numbers run from 1 to 10000.');
    if (s.state !== 'open') throw problem('upload_committed', 'This upload is completing or complete; no more parts are taken.');
    const expiresSeconds = this.deps.urlSeconds;
    const presigner = await this.needsPresigner(s.storage_key);
    const signed = await dependency('storage_unavailable', () =>
      presigner.presignPart(s.storage_key, s.multipart_id, n, { expiresSeconds }),
    );
    return { url: signed.url, expires: expiresSeconds, headers: signed.headers };
  }

  async listParts(
    owner: CompanionOwner,
    uploadId: string,
    objectKey: string,
  ): Promise<{ PartNumber: number; ETag: string; Size: number }[]> {
    const s = await this.session(owner, uploadId, objectKey);
    if (s.state !== 'open') return [];
    const presigner = await this.needsPresigner(s.storage_key);
    const parts = await dependency('storage_unavailable', () => presigner.listParts(s.storage_key, s.multipart_id));
    return parts.map((p) => ({ PartNumber: p.partNumber, ETag: p.etag, Size: p.bytes }));
  }

  /** Completes the multipart with Uppy's part list, then the same commit as any upload. */
  async complete(owner: CompanionOwner, uploadId: string, objectKey: string, parts: unknown, waitMs: number): Promise<UploadOutcome> {
    const s = await this.session(owner, uploadId, objectKey);
    const list = parseParts(parts);
    return completeSession(
      { pool: this.deps.pool, receiver: this.deps.receiver, registry: this.deps.sessions },
      { tenantId: owner.tenantId, id: s.id, mode: 'uppy', idleSeconds: this.deps.expirySeconds },
      waitMs,
      (leased) => this.verify(leased, list),
    );
  }

  /** DELETE: Uppy cancelled the file; the session, its parts and its run go, and the key is free. */
  async abort(owner: CompanionOwner, uploadId: string, objectKey: string): Promise<void> {
    const s = await this.session(owner, uploadId, objectKey);
    if (s.state !== 'open') throw problem('upload_committed', 'This upload is complete; it is not aborted.');
    await this.deps.sessions.discard(s);
  }

  private async verify(s: SessionRow, parts: { partNumber: number; etag: string }[]): Promise<StagedCopy> {
    const presigner = await this.needsPresigner(s.storage_key);
    await dependency('storage_unavailable', () => presigner.completeCheckedParts(s.storage_key, s.multipart_id, parts));
    // Uppy sends no checksums: the object is read once to learn its SHA-256 (constant memory).
    const stream = await dependency('storage_unavailable', () => this.deps.store.get(s.storage_key));
    if (!stream) throw problem('direct_upload_incomplete', 'The object is not in the store.');
    const hash = createHash('sha256');
    let bytes = 0;
    const head = new HeadBytes();
    await dependency('storage_unavailable', async () => {
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        hash.update(chunk);
        bytes += chunk.length;
        head.add(chunk);
      }
    });
    return stagedCopy({
      attemptId: s.id,
      fingerprint: s.fingerprint,
      storageKey: s.storage_key,
      bytes,
      sha256: hash.digest('hex'),
      head: head.value,
    });
  }

  private async session(owner: CompanionOwner, uploadId: string, objectKey: string): Promise<SessionRow> {
    const s = await dependency('database_unavailable', () => findSessionByUploadId(this.deps.pool, owner.tenantId, uploadId, 'uppy'));
    // The object key must be the session's own: a client cannot point at another object; an
    // upload token's endpoint reaches only the sessions it created.
    if (!s || s.storage_key !== objectKey || (owner.tokenId !== undefined && s.upload_grant?.tokenId !== owner.tokenId))
      throw problem('not_found', 'No such upload (it may have expired or been aborted).');
    return s;
  }

  /** The presigner of the store `storageKey` goes to (the instance's, or a tenant's S3 target); 501 where it cannot sign. */
  private async needsPresigner(storageKey: string) {
    const presigner = await dependency('storage_unavailable', async () =>
      this.deps.store.presignerFor ? this.deps.store.presignerFor(storageKey) : this.deps.store.presigner,
    );
    if (!presigner)
      throw problem(
        'direct_upload_unsupported',
        "Multipart uploads straight to the store need an S3 store (the instance's or a storage target); on the embedded store use tus (/v1/tus) or Uppy without multipart.",
      );
    return presigner;
  }
}

function parseParts(parts: unknown): { partNumber: number; etag: string }[] {
  if (!Array.isArray(parts) || parts.length === 0 || parts.length > 10_000)
    throw problem('body_invalid', 'Send {"parts": [{"PartNumber": 1, "ETag": "…"}, …]}.');
  const list = parts.map((p: unknown) => {
    const o = p as { PartNumber?: unknown; ETag?: unknown };
    if (!Number.isInteger(o?.PartNumber) || typeof o.ETag !== 'string' || o.ETag.length > 200)
      throw problem('body_invalid', 'Each part needs an integer PartNumber and a string ETag.');
    return { partNumber: o.PartNumber as number, etag: o.ETag };
  });
  return list.sort((a, b) => a.partNumber - b.partNumber);
}
