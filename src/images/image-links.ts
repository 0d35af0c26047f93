// Signed image URLs: `GET /v1/images/{uploadId}/{spec}?expires=…&signature=…`, served by the
// API on both stores without the API key (the variant may not exist until the URL is first
// fetched). The HMAC (SECRETS_KEY) covers the tenant, the upload, the spec as stored (its
// canonical option string, `f_auto` left to Accept), the API key that asked for it (`by`,
// src/tokens/parent.ts: the URL serves while that key may read) and the expiry: none can change.
import { problem } from '../errors';
import type { SecretBox } from '../secret-box';

const SIGN_PURPOSE = 'image';

export interface ImageLink {
  url: string;
  expiresAt: Date;
}

const signedData = (tenantId: string, uploadId: string, spec: string, by: string) => [tenantId, uploadId, spec, by].join('\n');

export function signImageUrl(box: SecretBox, tenantId: string, uploadId: string, spec: string, by: string, seconds: number): ImageLink {
  const { expires, signature } = box.signUntil(SIGN_PURPOSE, signedData(tenantId, uploadId, spec, by), seconds);
  const query = new URLSearchParams({ by, expires: String(expires), signature });
  return { url: `/v1/images/${uploadId}/${spec}?${query}`, expiresAt: new Date(expires * 1000) };
}

/** 403 signature_invalid unless this server signed exactly this URL and it still lasts. */
export function checkImageUrl(
  box: SecretBox,
  tenantId: string,
  uploadId: string,
  spec: string,
  signed: { by: string; expires: string | undefined; signature: string | undefined },
): void {
  const check = box.checkUntil(SIGN_PURPOSE, signedData(tenantId, uploadId, spec, signed.by), signed.expires, signed.signature);
  if (check === 'invalid') throw problem('signature_invalid', 'The image URL is not one this server signed (or it was changed).');
  if (check === 'expired') throw problem('signature_invalid', 'The image URL has expired; ask for a new one.');
}
