// URLs that fetch an upload (or a rendition) without the API key until they expire. On a
// store clients can reach (S3) it is a presigned GetObject whose Content-Disposition and
// Content-Type are in the signed query; on the embedded store it is the API's own
// `GET /v1/downloads/{id}`, signed with SECRETS_KEY over the upload, the rendition, the
// disposition and the expiry, so none of them can be changed. A presigned S3 URL cannot be
// revoked: it works until it expires or the object is deleted.
import { problem } from '../errors';
import type { SecretBox } from '../secret-box';
import type { ObjectStore } from '../storage/store';
import { presentation, type Disposition } from './disposition';
import type { Servable } from './serve';

const SIGN_PURPOSE = 'download';

export interface DownloadLink {
  url: string;
  expiresAt: Date;
  /** What the answer will say: `attachment` for scripts and markup whatever was asked. */
  disposition: Disposition;
}

/** What a signed URL of the API names (its query, besides the signature). */
export interface SignedDownload {
  uploadId: string;
  rendition: string | undefined;
  disposition: Disposition;
  /** The API key that asked for the URL (src/tokens/parent.ts): the URL serves while that key could. */
  by: string;
}

export class DownloadLinks {
  constructor(private readonly deps: { store: ObjectStore; box: SecretBox }) {}

  /** A URL for `obj` (an upload of `tenantId`); a path of the API when the store signs none itself. */
  async create(tenantId: string, what: SignedDownload, obj: Servable, expiresSeconds: number): Promise<DownloadLink> {
    const presigner = this.deps.store.presigner;
    if (presigner) {
      const shown = presentation(obj.contentType, obj.fileName, what.disposition, false);
      const signed = await presigner.presignGet(obj.storageKey, {
        contentDisposition: shown.contentDisposition,
        contentType: shown.contentType,
        expiresSeconds,
      });
      return { url: signed.url, expiresAt: signed.expiresAt, disposition: shown.disposition };
    }
    const { disposition } = presentation(obj.contentType, obj.fileName, what.disposition, true);
    const { expires, signature } = this.deps.box.signUntil(SIGN_PURPOSE, signedData(tenantId, { ...what, disposition }), expiresSeconds);
    const query = new URLSearchParams({
      ...(what.rendition ? { rendition: what.rendition } : {}),
      disposition,
      by: what.by,
      expires: String(expires),
      signature,
    });
    return { url: `/v1/downloads/${what.uploadId}?${query}`, expiresAt: new Date(expires * 1000), disposition };
  }

  /** Checks a signed URL of the API for an upload of `tenantId`; 403 when forged, changed or expired. */
  check(tenantId: string, what: SignedDownload, expires: string | undefined, signature: string | undefined): void {
    const check = this.deps.box.checkUntil(SIGN_PURPOSE, signedData(tenantId, what), expires, signature);
    if (check === 'invalid') throw problem('signature_invalid', 'The download URL is not one this server signed (or it was changed).');
    if (check === 'expired') throw problem('signature_invalid', 'The download URL has expired; ask for a new one.');
  }
}

function signedData(tenantId: string, w: SignedDownload): string {
  return [tenantId, w.uploadId, w.rendition ?? '', w.disposition, w.by].join('\n');
}
