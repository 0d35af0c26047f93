// Upload tokens: a bearer an app's backend mints for one end user and one purpose (at most
// so many bytes, of these types, this many uploads, until then). Opaque and stored like API
// keys (the hash only), so the same credential cache and revocation apply; the row is also
// where the commits are counted (src/db/queries/upload-tokens.ts).
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Credential } from '../credentials';
import type { Queryable } from '../db/pool';
import { findUnrevokedUploadToken, insertUploadToken, type UploadTokenRow } from '../db/queries/upload-tokens';
import { problem, Problem } from '../errors';
import type { UploadGrant } from '../upload/types';
import { CHECKED_TYPES } from '../upload/sniff';
import { DEFAULT_PIPELINE } from '../pipelines/steps';

export const UPLOAD_TOKEN_PREFIX = 'oup_';

const hash = (token: string) => createHash('sha256').update(token).digest();

export interface UploadTokenLimits {
  expiresInSeconds: number;
  maxBytes?: number;
  allowedTypes?: string[];
  maxUploads?: number;
  subject?: string;
  metadata?: Record<string, string>;
  /** The pipeline its uploads run (checked to be declared). */
  pipeline?: string;
}

export async function mintUploadToken(
  db: Queryable,
  tenantId: string,
  limits: UploadTokenLimits,
): Promise<{ token: string; row: UploadTokenRow }> {
  const token = `${UPLOAD_TOKEN_PREFIX}${randomBytes(24).toString('base64url')}`;
  const row = await insertUploadToken(db, hash(token), {
    id: randomUUID(),
    tenant_id: tenantId,
    expires_at: new Date(Date.now() + limits.expiresInSeconds * 1000),
    max_bytes: limits.maxBytes ?? null,
    allowed_types: limits.allowedTypes?.map((t) => t.toLowerCase()) ?? null,
    max_uploads: limits.maxUploads ?? null,
    subject: limits.subject ?? null,
    metadata: limits.metadata ?? null,
    pipeline: limits.pipeline ?? null,
  });
  return { token, row };
}

export function grantOf(row: UploadTokenRow): UploadGrant {
  return {
    tokenId: row.id,
    subject: row.subject,
    metadata: row.metadata,
    maxBytes: row.max_bytes === null ? null : Number(row.max_bytes),
    allowedTypes: row.allowed_types,
    maxUploads: row.max_uploads,
    expiresAt: row.expires_at.toISOString(),
    ...(row.pipeline ? { pipeline: row.pipeline } : {}),
  };
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

/** The tenant and grant of an unrevoked upload token (its expiry is the route guard's to check). */
export async function lookupUploadToken(db: Queryable, token: string): Promise<Credential | undefined> {
  const row = await findUnrevokedUploadToken(db, hash(token));
  return row && credentialOf(row);
}

/** What a token's row stands for as a caller. */
export function credentialOf(row: UploadTokenRow): Credential {
  return { tenantId: row.tenant_id, principal: { kind: 'token', id: row.id, scopes: [], grant: grantOf(row) } };
}

/** Whether `type` is one of `allowed` (exact, or its `family/*`); any type when null. */
export function typeAllowed(allowed: readonly string[] | null, type: string): boolean {
  if (!allowed) return true;
  const t = type.toLowerCase();
  return allowed.some((a) => a === t || (a.endsWith('/*') && t.startsWith(a.slice(0, -1))));
}

/** Before a body byte is read: the declared length (when known) and type. 413 / 415. */
export function checkDeclared(grant: UploadGrant | undefined, declared: { bytes?: number; contentType: string }): void {
  if (!grant) return;
  if (declared.bytes !== undefined && grant.maxBytes !== null && declared.bytes > grant.maxBytes)
    throw problem('payload_too_large', `The upload token allows at most ${grant.maxBytes} bytes; this upload declares ${declared.bytes}.`);
  if (!typeAllowed(grant.allowedTypes, declared.contentType))
    throw problem(
      'type_not_allowed',
      `The upload token does not allow ${declared.contentType}; it allows ${grant.allowedTypes!.join(', ')}.`,
    );
}

/** Whether `err` is checkArrived's refusal: the bytes broke the token's limits. */
export function isLimitRefusal(err: unknown): boolean {
  return err instanceof Problem && (err.code === 'type_not_allowed' || err.code === 'payload_too_large');
}

/**
 * On the bytes that arrived: their real length, and their type as the first bytes show it.
 * Bytes recognised as a type must be an allowed type; bytes declared as a recognisable type
 * (PNG, PDF, …) but not recognised are not that type.
 */
export function checkArrived(
  grant: UploadGrant | undefined,
  arrived: { bytes: number; sniffedType: string | null; contentType: string },
): void {
  if (!grant) return;
  if (grant.maxBytes !== null && arrived.bytes > grant.maxBytes)
    throw problem('payload_too_large', `The upload token allows at most ${grant.maxBytes} bytes; ${arrived.bytes} arrived.`);
  if (!grant.allowedTypes) return;
  const actual = arrived.sniffedType ?? (CHECKED_TYPES.has(arrived.contentType.toLowerCase()) ? null : arrived.contentType);
  if (actual === null || !typeAllowed(grant.allowedTypes, actual))
    throw problem(
      'type_not_allowed',
      `The file's content is ${actual ?? `not ${arrived.contentType}`}; the upload token allows ${grant.allowedTypes.join(', ')}.`,
    );
}
