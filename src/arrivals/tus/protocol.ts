// tus 1.0.0 protocol details: the headers every answer carries, and parsers for the
// request headers the server reads. Pure functions; the routes use them.
import { problem } from '../../errors';
import type { BodyChecksum } from '../../sessions/append-writer';

/** The route recorded in a tus session's fingerprint: a key first used here is refused elsewhere. */
export const TUS_ROUTE = '/v1/tus';

export const TUS_VERSION = '1.0.0';
export const TUS_EXTENSIONS = ['creation', 'creation-with-upload', 'termination', 'expiration', 'checksum'];
export const TUS_CHECKSUM_ALGORITHMS = ['sha1', 'sha256'] as const;
export type ChecksumAlgorithm = (typeof TUS_CHECKSUM_ALGORITHMS)[number];

/** Request headers a tus client sends (allowed cross-origin). */
export const TUS_REQUEST_HEADERS = ['Tus-Resumable', 'Upload-Length', 'Upload-Metadata', 'Upload-Offset', 'Upload-Checksum'];
/** Answer headers a browser tus client must read (exposed cross-origin). */
export const TUS_RESPONSE_HEADERS = [
  'Tus-Resumable',
  'Tus-Version',
  'Tus-Extension',
  'Tus-Max-Size',
  'Tus-Checksum-Algorithm',
  'Upload-Offset',
  'Upload-Length',
  'Upload-Metadata',
  'Upload-Expires',
];

/** Upload-Metadata: comma-separated `key base64value` pairs (value optional). */
export function parseUploadMetadata(value: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!value || value.trim() === '') return out;
  for (const pair of value.split(',')) {
    const [key, encoded, extra] = pair.trim().split(' ');
    if (!key || extra !== undefined || !/^[\x21-\x2b\x2d-\x7e]+$/.test(key) || key in out) {
      throw problem('header_invalid', 'Upload-Metadata must be comma-separated "key base64value" pairs with distinct keys.');
    }
    if (encoded !== undefined && !/^[A-Za-z0-9+/]*={0,2}$/.test(encoded))
      throw problem('header_invalid', `Upload-Metadata value of ${key} is not base64.`);
    const decoded = encoded === undefined ? '' : Buffer.from(encoded, 'base64').toString('utf8');
    if (decoded.includes('\0')) throw problem('header_invalid', `Upload-Metadata value of ${key} contains NUL.`);
    out[key] = decoded;
  }
  return out;
}

export function parseUploadLength(value: string | undefined): number {
  if (value === undefined) throw problem('header_invalid', 'Send Upload-Length (deferred lengths are not supported).');
  if (!/^\d{1,16}$/.test(value.trim())) throw problem('header_invalid', 'Upload-Length must be a non-negative integer.');
  return Number(value.trim());
}

export function parseUploadOffset(value: string | undefined): number {
  if (value === undefined || !/^\d{1,16}$/.test(value.trim()))
    throw problem('header_invalid', 'Send Upload-Offset as a non-negative integer.');
  return Number(value.trim());
}

/** Upload-Checksum: `<algorithm> <base64 digest>` (a mismatch is tus's 460). */
export function parseUploadChecksum(value: string | undefined): BodyChecksum | undefined {
  if (value === undefined) return undefined;
  const [algorithm, encoded, extra] = value.trim().split(' ');
  if (!TUS_CHECKSUM_ALGORITHMS.includes(algorithm as ChecksumAlgorithm)) {
    throw problem('checksum_algorithm_unsupported', `Upload-Checksum algorithm must be one of ${TUS_CHECKSUM_ALGORITHMS.join(', ')}.`);
  }
  if (!encoded || extra !== undefined || !/^[A-Za-z0-9+/]+={0,2}$/.test(encoded))
    throw problem('header_invalid', 'Upload-Checksum must be "<algorithm> <base64 digest>".');
  return {
    algorithm: algorithm as ChecksumAlgorithm,
    digest: Buffer.from(encoded, 'base64'),
    mismatch: () => problem('upload_checksum_mismatch', `The body does not match Upload-Checksum (${algorithm}); nothing of it is kept.`),
  };
}

/** The version check every request but OPTIONS must pass (412 names the versions served). */
export function checkTusResumable(value: string | undefined): void {
  if (value !== TUS_VERSION)
    throw problem('tus_version_unsupported', `Send Tus-Resumable: ${TUS_VERSION}.`, { headers: { 'tus-version': TUS_VERSION } });
}
