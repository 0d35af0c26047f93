// What an upload token grants (its limits, its pipeline) and the checks a new upload passes
// against them before any byte. Pure: the doors' intake, the session core and the API share it.
import { problem } from '../errors';
import type { SecretBox } from '../secret-box';
import { DEFAULT_PIPELINE } from '../pipelines/steps';

/** What an upload token allows and names (src/tokens/upload-tokens.ts). */
export interface UploadGrant {
  tokenId: string;
  /** The app's end user the uploads are for. */
  subject: string | null;
  metadata: Record<string, string> | null;
  maxBytes: number | null;
  /** Media types (`image/png`) or families (`image/*`); null: any. */
  allowedTypes: string[] | null;
  maxUploads: number | null;
  expiresAt: string;
  /** The pipeline every upload made with it runs. */
  pipeline?: string;
  /** Hosts it may import from (an entry `*.example.com` covers its subdomains); absent: none. */
  importHosts?: string[];
  /** The storage target (id) every upload made with it is stored in. */
  storageTarget?: string;
}

/**
 * What OncelySubject holds for an upload made with a token: a keyed hash of the tenant and the
 * subject (HMAC under SECRETS_KEY, 128 bits), so an operator who knows the subject can find
 * its runs (`oncely subject-tag`) and nobody reads the subject from Temporal.
 */
export function subjectTag(box: Pick<SecretBox, 'sign'>, tenantId: string, subject: string): string {
  return box.sign('subject-tag', `${tenantId}\n${subject}`).slice(0, 22);
}

/** Whether `host` is one of `hosts` (an entry `*.example.com` covers its subdomains). */
export function hostListed(hosts: readonly string[], host: string): boolean {
  const h = host.toLowerCase().replace(/\.$/, '');
  return hosts.some((listed) => (listed.startsWith('*.') ? h.endsWith(listed.slice(1)) : h === listed));
}

/** 401 when the grant's token is past its expiry (nothing new starts with it; replays and its own sessions may go on). */
export function assertGrantLive(grant: UploadGrant | undefined): void {
  if (grant && Date.parse(grant.expiresAt) <= Date.now())
    throw problem('unauthorized', `The upload token expired at ${grant.expiresAt}; get a new one.`);
}

/**
 * The pipeline an upload runs: the one it names (undefined: the tenant's default), which,
 * with a token made for one pipeline, must be that one (403 otherwise); naming none is
 * naming the token's.
 */
export function grantedPipeline(grant: UploadGrant | undefined, requested: string | undefined): string | undefined {
  if (!grant?.pipeline) return requested;
  const pinned = grant.pipeline === DEFAULT_PIPELINE ? undefined : grant.pipeline;
  if (requested !== undefined && requested !== pinned)
    throw problem('pipeline_not_allowed', `This upload token uploads with pipeline "${grant.pipeline}" only.`, {
      extra: { pipeline: grant.pipeline },
    });
  return pinned;
}

/** An upload's metadata and tags (src/upload/types.ts UploadLabels, which this layer cannot import). */
interface Labels {
  metadata?: Record<string, unknown>;
  tags?: string[];
}

/**
 * An upload's labels with the token's metadata merged over them: the token's keys are fixed,
 * so sending one with another value is refused (403); sending it with the same value is fine.
 */
export function grantedLabels(grant: UploadGrant | undefined, labels: Labels | undefined): Labels | undefined {
  if (!grant?.metadata || Object.keys(grant.metadata).length === 0) return labels;
  for (const [key, value] of Object.entries(grant.metadata)) {
    const sent = labels?.metadata?.[key];
    if (sent !== undefined && sent !== value)
      throw problem('metadata_not_allowed', `This upload token fixes metadata "${key}" to "${value}".`, { extra: { key } });
  }
  return { ...labels, metadata: { ...labels?.metadata, ...grant.metadata } };
}

/** Whether `type` is one of `allowed` (exact, or its `family/*`); any type when null. */
export function typeAllowed(allowed: readonly string[] | null, type: string): boolean {
  if (!allowed) return true;
  const t = type.toLowerCase();
  return allowed.some((a) => a === t || (a.endsWith('/*') && t.startsWith(a.slice(0, -1))));
}

/** Before a body byte is read: the declared length and type (each when known). 413 / 415. */
export function checkDeclared(grant: UploadGrant | undefined, declared: { bytes?: number; contentType?: string }): void {
  if (!grant) return;
  if (declared.bytes !== undefined && grant.maxBytes !== null && declared.bytes > grant.maxBytes)
    throw problem('payload_too_large', `The upload token allows at most ${grant.maxBytes} bytes; this upload declares ${declared.bytes}.`);
  if (declared.contentType !== undefined && !typeAllowed(grant.allowedTypes, declared.contentType))
    throw problem(
      'type_not_allowed',
      `The upload token does not allow ${declared.contentType}; it allows ${grant.allowedTypes!.join(', ')}.`,
    );
}
