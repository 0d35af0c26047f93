// "Resumable Uploads for HTTP" (draft-ietf-httpbis-resumable-upload) as Oncely speaks it:
// which interop versions, and what differs between them, in one table; parsers for the
// structured fields a request carries and builders for the ones an answer carries. Pure
// functions; ./routes.ts and ./contract.ts use them.
import { parseDictionary, parseItem, serializeDictionary } from 'structured-headers';
import { problem } from '../../errors';
import type { BodyChecksum } from '../../sessions/append-writer';

/** The route recorded in a RUFH session's fingerprint: a key first used here is refused elsewhere. */
export const RUFH_ROUTE = '/v1/uploads (resumable)';

/** The upload resources' path; creation is on POST /v1/uploads (an upgrade) or here. */
export const RUFH_PATH = '/v1/resumable-uploads';

/** The media type of an append from interop version 6 (draft -04) on. */
export const PARTIAL_UPLOAD = 'application/partial-upload';

/** What changes from one interop version to the next (draft change log, "Draft Version Identification"). */
export interface InteropVersion {
  version: number;
  /** Versions 3 (draft -01, iOS 17) says `Upload-Incomplete` with the opposite meaning. */
  completeness: 'upload-complete' | 'upload-incomplete';
  /** Appends must say Content-Type: application/partial-upload (6 and later). */
  partialUploadType: boolean;
  /** Upload-Limit exists (6 and later); its lifetime key was `expires` in 6, `max-age` from 7. */
  limit: null | { ageKey: 'expires' | 'max-age' };
}

const VERSIONS: readonly InteropVersion[] = [
  { version: 3, completeness: 'upload-incomplete', partialUploadType: false, limit: null },
  { version: 4, completeness: 'upload-complete', partialUploadType: false, limit: null },
  { version: 5, completeness: 'upload-complete', partialUploadType: false, limit: null },
  { version: 6, completeness: 'upload-complete', partialUploadType: true, limit: { ageKey: 'expires' } },
  { version: 7, completeness: 'upload-complete', partialUploadType: true, limit: { ageKey: 'max-age' } },
  { version: 8, completeness: 'upload-complete', partialUploadType: true, limit: { ageKey: 'max-age' } },
];

/** The interop versions served, oldest first (docs/doors/resumable.md and OPTIONS publish them). */
export const INTEROP_VERSIONS = VERSIONS.map((v) => v.version);
const NEWEST = VERSIONS[VERSIONS.length - 1]!;

/** Request headers a RUFH client sends (allowed cross-origin). */
export const RUFH_REQUEST_HEADERS = [
  'Upload-Complete',
  'Upload-Incomplete',
  'Upload-Draft-Interop-Version',
  'Upload-Length',
  'Upload-Offset',
  'Content-Disposition',
  'Content-Digest',
  'Repr-Digest',
];
/** Answer headers a browser RUFH client must read (exposed cross-origin). */
export const RUFH_RESPONSE_HEADERS = [
  'Upload-Complete',
  'Upload-Incomplete',
  'Upload-Draft-Interop-Version',
  'Upload-Draft-Interop-Versions',
  'Upload-Offset',
  'Upload-Length',
  'Upload-Limit',
];

/** How a request speaks the draft: its version's rules, and whether it may be sent 104s. */
export interface Dialect {
  v: InteropVersion;
  /** A matching interop version was sent: only then may 104 (Upload Resumption Supported) go out. */
  informational: boolean;
}

/** How a request with no interop version is read: the newest revision's rules, and no 104. */
export const NEWEST_DIALECT: Dialect = { v: NEWEST, informational: false };

type Headers = (name: string) => string | undefined;

/**
 * Whether a request speaks the draft, and which version. A known interop version, or a
 * completeness field with none (a client of the final RFC: the newest rules, no 104).
 * An unknown version that declares itself complete falls back to the plain one-request
 * upload (as the draft's upgrade allows); one that does not is refused, since its bytes
 * are not the whole file.
 */
export function dialectOf(header: Headers): Dialect | undefined {
  const sent = header('upload-draft-interop-version');
  if (sent === undefined) {
    return header('upload-complete') === undefined ? undefined : NEWEST_DIALECT;
  }
  const v = VERSIONS.find((x) => String(x.version) === sent.trim());
  if (v) return { v, informational: true };
  if (header('upload-complete')?.trim() === '?1' || header('upload-incomplete')?.trim() === '?0') return undefined;
  throw problem(
    'interop_version_unsupported',
    `Upload-Draft-Interop-Version ${sent} is not served; send one of ${INTEROP_VERSIONS.join(', ')}.`,
    {
      extra: { interopVersions: INTEROP_VERSIONS },
    },
  );
}

/** The request's completeness (Upload-Complete, or version 3's inverted Upload-Incomplete); required. */
export function parseComplete(header: Headers, d: Dialect): boolean {
  const name = d.v.completeness;
  const value = header(name);
  const flag = value === undefined ? undefined : sfBoolean(value);
  if (flag === undefined) throw problem('header_invalid', `Send ${name}: ?0 or ?1.`);
  return name === 'upload-complete' ? flag : !flag;
}

/** The completeness field of an answer, in the request's version. */
export function completeHeader(d: Dialect, complete: boolean): Record<string, string> {
  if (d.v.completeness === 'upload-incomplete') return { 'upload-incomplete': complete ? '?0' : '?1' };
  return { 'upload-complete': complete ? '?1' : '?0' };
}

/** A non-negative sf-integer field (Upload-Length, Upload-Offset); absent is undefined. */
export function parseSfInteger(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  let item: unknown;
  try {
    item = parseItem(value)[0];
  } catch {
    item = undefined;
  }
  if (typeof item !== 'number' || !Number.isSafeInteger(item) || item < 0)
    throw problem('header_invalid', `${name} must be a non-negative integer.`);
  return item;
}

/** The limits of an upload resource (Upload-Limit), in the request's version; none before 6. */
export function uploadLimit(d: Dialect, limits: { maxSize: number; maxAgeSeconds?: number }): Record<string, string> {
  const fields = new Map<string, number>([
    ['max-size', limits.maxSize],
    ['min-size', 0],
  ]);
  if (d.v.limit === null) return {};
  if (limits.maxAgeSeconds !== undefined) fields.set(d.v.limit.ageKey, Math.max(0, Math.floor(limits.maxAgeSeconds)));
  return { 'upload-limit': serializeDictionary(fields) };
}

/** The headers of an OPTIONS answer: the newest rules unless the client named its version. */
export function discoveryHeaders(d: Dialect | undefined, maxSize: number, maxAgeSeconds: number): Record<string, string> {
  const dialect = d ?? NEWEST_DIALECT;
  return {
    ...uploadLimit(dialect, { maxSize, maxAgeSeconds }),
    'upload-draft-interop-versions': INTEROP_VERSIONS.join(', '),
  };
}

const DIGESTS = { 'sha-256': 'sha256', 'sha-512': 'sha512' } as const;

/**
 * Content-Digest (RFC 9530) of one append: the strongest algorithm Oncely checks; others
 * are ignored, as the RFC lets a recipient do.
 */
export function parseContentDigest(value: string | undefined): BodyChecksum | undefined {
  const found = digests(value, 'Content-Digest');
  const name = found.has('sha-512') ? 'sha-512' : found.has('sha-256') ? 'sha-256' : undefined;
  if (!name) return undefined;
  return {
    algorithm: DIGESTS[name],
    digest: found.get(name)!,
    mismatch: () => problem('content_digest_mismatch', `The body does not match its Content-Digest (${name}); nothing of it is kept.`),
  };
}

/** Repr-Digest (RFC 9530) of the whole file: its sha-256 as hex, checked at completion like X-File-Sha256. */
export function parseReprDigest(value: string | undefined): string | null {
  const sha = digests(value, 'Repr-Digest').get('sha-256');
  return sha ? sha.toString('hex') : null;
}

function digests(value: string | undefined, name: string): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  if (value === undefined) return out;
  let dict: ReturnType<typeof parseDictionary>;
  try {
    dict = parseDictionary(value);
  } catch {
    throw problem('header_invalid', `${name} must be a dictionary of byte sequences, e.g. sha-256=:base64:.`);
  }
  for (const [alg, [item]] of dict) {
    if (!(item instanceof ArrayBuffer)) throw problem('header_invalid', `${name}'s ${alg} must be a byte sequence (:base64:).`);
    const bytes = Buffer.from(item);
    if (alg in DIGESTS && bytes.length !== (alg === 'sha-256' ? 32 : 64))
      throw problem('header_invalid', `${name}'s ${alg} has the wrong length.`);
    out.set(alg, bytes);
  }
  return out;
}

function sfBoolean(value: string): boolean | undefined {
  try {
    const [item] = parseItem(value);
    return typeof item === 'boolean' ? item : undefined;
  } catch {
    return undefined;
  }
}
