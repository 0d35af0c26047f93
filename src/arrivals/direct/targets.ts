// Where a direct upload's bytes go, chosen per session by the store its key lives in (as
// tusd's composer picks a store):
// - presigned: an S3 store (the instance's or a tenant's storage target), through URLs whose
//   signatures cover the key, length and SHA-256 (one PUT, or checked parts above the
//   single-PUT size);
// - self-signed: the API's own PUT route (the local-directory store has no URLs of its own),
//   signed with SECRETS_KEY; the API streams the body to the store, checking length and
//   SHA-256 on the way.
import type { Readable } from 'node:stream';
import type { SessionRow } from '../../db/queries/sessions';
import { dependency, problem } from '../../errors';
import type { SecretBox } from '../../secret-box';
import type { ObjectPresigner, ObjectStore, SignedRequest } from '../../storage/store';
import { BodyMeter } from '../../upload/body-meter';
import { onClientGone } from '../../upload/client-gone';

const MiB = 1024 * 1024;
/** S3 allows at most 10,000 parts per multipart upload, and at most 5 GiB in one PUT. */
const MAX_PARTS = 10_000;
const MAX_SINGLE_PUT = 5 * 1024 * MiB;

/** What the store holds at a session's key: its size and SHA-256 (base64; composite for multipart). */
export interface StoredObject {
  bytes: number;
  sha256Base64?: string;
  composite: boolean;
}

/** A plan begun in the store: its multipart ('' for none) and its part size (null: one PUT). */
export interface BegunPlan {
  multipartId: string;
  partBytes: number | null;
}

export interface DirectTarget {
  /** Plans a file of `bytes` at the key: one PUT, or parts (their multipart begun). */
  begin(storageKey: string, contentType: string, bytes: number): Promise<BegunPlan>;
  /** The signed PUT of a one-PUT plan, for the credential `by` (src/tokens/parent.ts) that asked for it. */
  putRequest(s: SessionRow, expiresSeconds: number, by: string): Promise<SignedRequest>;
  /** The signed PUT of part n of a plan in parts. */
  partRequest(s: SessionRow, n: number, o: { bytes: number; sha256Base64: string; expiresSeconds: number }): Promise<SignedRequest>;
  /**
   * Finishes what the client sent (a multipart's parts all present and checked are
   * completed) and tells what is stored, or undefined when nothing is yet.
   */
  stored(s: SessionRow): Promise<StoredObject | undefined>;
}

export class PresignedTarget implements DirectTarget {
  constructor(
    private readonly presigner: ObjectPresigner,
    private readonly opts: { singlePutMaxBytes: number; partBytes: number },
  ) {}

  async begin(storageKey: string, contentType: string, bytes: number): Promise<BegunPlan> {
    if (bytes <= Math.min(this.opts.singlePutMaxBytes, MAX_SINGLE_PUT)) return { multipartId: '', partBytes: null };
    // The configured part size, raised (to whole MiB) when the file would need more than 10,000 parts.
    const partBytes = Math.max(this.opts.partBytes, Math.ceil(bytes / MAX_PARTS / MiB) * MiB);
    return { multipartId: await this.presigner.beginCheckedParts(storageKey, contentType), partBytes };
  }

  putRequest(s: SessionRow, expiresSeconds: number): Promise<SignedRequest> {
    return this.presigner.presignPut(s.storage_key, {
      bytes: Number(s.upload_length),
      sha256Base64: hexToBase64(s.declared_sha256!),
      contentType: s.content_type,
      expiresSeconds,
    });
  }

  partRequest(s: SessionRow, n: number, o: { bytes: number; sha256Base64: string; expiresSeconds: number }): Promise<SignedRequest> {
    return this.presigner.presignPart(s.storage_key, s.multipart_id, n, o);
  }

  async stored(s: SessionRow): Promise<StoredObject | undefined> {
    if (s.multipart_id) {
      const parts = await dependency('storage_unavailable', () => this.presigner.partsUnlessCompleted(s.storage_key, s.multipart_id));
      if (parts) {
        const length = Number(s.upload_length);
        const partBytes = Number(s.part_bytes);
        const count = partCount(length, partBytes);
        const missing: number[] = [];
        for (let n = 1; n <= count; n++) {
          const p = parts.find((x) => x.partNumber === n);
          const want = n < count ? partBytes : length - partBytes * (count - 1);
          if (!p || p.bytes !== want || !p.sha256Base64) missing.push(n);
        }
        if (missing.length > 0)
          throw problem('direct_upload_incomplete', `Parts not uploaded yet: ${summarize(missing)}.`, {
            extra: { missingParts: missing.slice(0, 100) },
          });
        await dependency('storage_unavailable', () =>
          this.presigner.completeCheckedParts(
            s.storage_key,
            s.multipart_id,
            parts.filter((p) => p.partNumber <= count),
          ),
        );
      }
    }
    return dependency('storage_unavailable', () => this.presigner.checksum(s.storage_key));
  }
}

const SIGN_PURPOSE = 'direct-upload-object';

/** What the embedded store's signed PUT carries in its query. */
export interface SignedQuery {
  by: string | undefined;
  expires: string | undefined;
  signature: string | undefined;
}

export class SelfSignedTarget implements DirectTarget {
  constructor(
    private readonly store: ObjectStore,
    private readonly box: SecretBox,
  ) {}

  begin(): Promise<BegunPlan> {
    return Promise.resolve({ multipartId: '', partBytes: null });
  }

  putRequest(s: SessionRow, expiresSeconds: number, by: string): Promise<SignedRequest> {
    const { expires, signature } = this.box.signUntil(SIGN_PURPOSE, `${s.id}\n${by}`, expiresSeconds);
    // A path of the API (made absolute by the route, from PUBLIC_URL or the request).
    const url = `/v1/direct-uploads/${s.id}/object?${new URLSearchParams({ by, expires: String(expires), signature })}`;
    return Promise.resolve({
      method: 'PUT',
      url,
      headers: { 'content-length': String(s.upload_length), 'content-type': s.content_type },
      expiresAt: new Date(expires * 1000),
    });
  }

  partRequest(): Promise<SignedRequest> {
    throw problem('not_found', 'This direct upload is one PUT, not multipart: use its `upload` request.');
  }

  async stored(s: SessionRow): Promise<StoredObject | undefined> {
    const head = await dependency('storage_unavailable', () => this.store.head(s.storage_key));
    // The API wrote it itself, after checking length and SHA-256 on the way in.
    return head ? { bytes: head.bytes, sha256Base64: hexToBase64(s.declared_sha256!), composite: false } : undefined;
  }

  /** Whether a URL's credential, expiry and signature are this server's for session `id` (403 when not, or expired). */
  checkSignature(id: string, signed: SignedQuery): void {
    const check = this.box.checkUntil(SIGN_PURPOSE, `${id}\n${signed.by ?? ''}`, signed.expires, signed.signature);
    if (check === 'invalid') throw problem('signature_invalid', 'The URL is not one this server signed (or it was changed).');
    if (check === 'expired')
      throw problem(
        'signature_invalid',
        'The URL has expired; create the direct upload again with the same Idempotency-Key for a fresh one.',
      );
  }

  /** The signed PUT's body into the session's object; another length or SHA-256 leaves nothing behind. */
  async receive(s: SessionRow, body: Readable): Promise<void> {
    const meter = new BodyMeter(Number(s.upload_length), s.declared_sha256 ?? undefined);
    const stopWatching = onClientGone(body, () => meter.abort());
    body.pipe(meter);
    try {
      await this.store.put(s.storage_key, meter, { contentType: s.content_type, contentLength: Number(s.upload_length) });
    } catch (err) {
      throw meter.failure ?? err;
    } finally {
      stopWatching();
      body.unpipe(meter);
    }
  }
}

/**
 * The target of each session's key: the store it lives in signs for it when it can (the
 * instance's S3 store, or a tenant's S3 target on either default), else the API's own PUT.
 */
export class DirectTargets {
  readonly selfSigned: SelfSignedTarget;
  private readonly presigned = new Map<ObjectPresigner, PresignedTarget>();

  constructor(
    private readonly store: ObjectStore,
    box: SecretBox,
    private readonly opts: { singlePutMaxBytes: number; partBytes: number },
  ) {
    this.selfSigned = new SelfSignedTarget(store, box);
  }

  async of(storageKey: string): Promise<DirectTarget> {
    const presigner = this.store.presignerFor ? await this.store.presignerFor(storageKey) : this.store.presigner;
    if (!presigner) return this.selfSigned;
    let target = this.presigned.get(presigner);
    if (!target) this.presigned.set(presigner, (target = new PresignedTarget(presigner, this.opts)));
    return target;
  }
}

export function partCount(bytes: number, partBytes: number): number {
  return Math.max(1, Math.ceil(bytes / partBytes));
}

export function hexToBase64(hex: string): string {
  return Buffer.from(hex, 'hex').toString('base64');
}

function summarize(ns: number[]): string {
  return ns.length <= 10 ? ns.join(', ') : `${ns.slice(0, 10).join(', ')} and ${ns.length - 10} more`;
}
