// Upload tokens: a bearer an app's backend mints for one end user and one purpose (at most
// so many bytes, of these types, this many uploads, until then). Opaque and stored like API
// keys (the hash only), so the same credential cache and revocation apply; the row is also
// where the commits are counted (src/db/queries/upload-tokens.ts).
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Credential } from '../credentials';
import type { Queryable } from '../db/pool';
import { findUnrevokedUploadToken, insertUploadToken, type UploadTokenRow } from '../db/queries/upload-tokens';
import type { UploadGrant } from './grant';

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
  /** Hosts it may import from (POST /v1/imports); absent: it may not import. */
  importHosts?: string[];
  /** The storage target (id) its uploads go to. */
  storageTarget?: string;
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
    import_hosts: limits.importHosts?.map((h) => h.toLowerCase()) ?? null,
    storage_target: limits.storageTarget ?? null,
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
    ...(row.import_hosts ? { importHosts: row.import_hosts } : {}),
    ...(row.storage_target ? { storageTarget: row.storage_target } : {}),
  };
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
