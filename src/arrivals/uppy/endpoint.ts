// A companion endpoint (`/uppy/{token}/…`, minted by POST /v1/uppy-endpoints) as a
// credential: whom it serves, what it may do, and the check every request under it passes.
// Shared by Uppy's S3 routes (this door) and its URL plugin (the import wing).
import type { Context, MiddlewareHandler } from 'hono';
import type { Pool } from '../../db/pool';
import type { AppEnv } from '../../http/env';
import { actAsParent, assertTokenLive, parentAccess, type Access } from '../../http/scopes';
import { currentPrincipal, type Parent } from '../../tokens/parent';

/** Whom a companion endpoint serves: a tenant, through the API key or upload token that minted it (its parent). */
export interface CompanionOwner {
  tenantId: string;
  parent: Parent;
  /** The parent's id when it is an upload token: the endpoint sees only that token's files. */
  tokenId?: string;
}

export function companionOwner(tenantId: string, parent: Parent): CompanionOwner {
  return { tenantId, parent, ...(parent.kind === 'token' ? { tokenId: parent.id } : {}) };
}

/** What reads a companion token: whom it was minted for and by; 403 when forged, expired or naming no parent. */
export interface EndpointOwners {
  ownerOf(token: string): CompanionOwner;
}

/** What the companion's multipart and form routes ask of the endpoint's parent; its own files finish past a token's expiry. */
export const COMPANION_UPLOADS = parentAccess('uploads:write', { uploadToken: 'own-sessions' });
/** What the URL routes and progress sockets ask: they import, as POST /v1/imports does. */
export const COMPANION_IMPORTS = parentAccess('imports:create', { uploadToken: 'own-sessions' });

/**
 * A companion endpoint's requests (`/uppy/{token}/…`) act as the credential that minted it,
 * checked now on every request (src/tokens/parent.ts), before anything else.
 */
export function companionAuth(deps: { uppy: EndpointOwners; pool: Pool }, access: Access): MiddlewareHandler<AppEnv> {
  return async function companionAuth(c, next) {
    const o = deps.uppy.ownerOf(c.req.param('token') ?? '');
    await actAsParent(c, o.tenantId, o.parent, () => currentPrincipal(deps.pool, o.tenantId, o.parent), access);
    await next();
  };
}

/**
 * Whom a companion endpoint serves (set by companionAuth). `starting`: a file is started, which
 * an upload token past its expiry may not do (a file started before may finish, as a tus session does).
 */
export function endpointOwner(c: Context<AppEnv>, starting: boolean): CompanionOwner {
  if (starting) assertTokenLive(c);
  return companionOwner(c.get('tenantId'), c.get('parent'));
}
