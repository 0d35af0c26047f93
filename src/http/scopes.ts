// The scope each route needs: declared in its OpenAPI definition (`requires`) and enforced
// by route() from that same declaration, so the document and the checks cannot differ.
import type { RouteConfig } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { SCOPES, type Principal, type Scope } from '../credentials';
import { dependency, problem } from '../errors';
import type { AppEnv } from './env';
import type { Caller } from '../upload/types';
import { assertGrantLive } from '../tokens/grant';
import type { Parent } from '../tokens/parent';

/** The OpenAPI security scheme of an API key holding `scope` (component names allow no colon). */
export function schemeOf(scope: Scope): string {
  return `key.${scope.replace(':', '.')}`;
}

const scopeOfScheme = new Map<string, Scope>(SCOPES.map((s) => [schemeOf(s), s]));

/** The security scheme of an upload token (src/tokens/upload-tokens.ts). */
export const UPLOAD_TOKEN_SCHEME = 'uploadToken';

/** Where an expired upload token is still taken (its handler confines it; see requires). */
const outlivingTokens = new WeakSet<object>();

/**
 * A route's `security`: an API key holding `scope`, or (`uploadToken`) an upload token too.
 * Past its expiry a token is refused (401), except: `'own-sessions'`, where its own open
 * sessions finish until they expire, and `'replays'`, where the stored answer of its key is
 * replayed (the handler refuses anything new with `assertTokenLive`).
 */
export function requires(
  scope: Scope,
  opts: { uploadToken?: boolean | 'own-sessions' | 'replays' } = {},
): NonNullable<RouteConfig['security']> {
  const security = [{ [schemeOf(scope)]: [] }, ...(opts.uploadToken ? [{ [UPLOAD_TOKEN_SCHEME]: [] }] : [])];
  if (opts.uploadToken === 'own-sessions' || opts.uploadToken === 'replays') outlivingTokens.add(security);
  return security;
}

/** 401 when the caller is an upload token past its expiry. */
export function assertTokenLive(c: Context<AppEnv>): void {
  assertGrantLive(callingToken(c)?.grant);
}

/** The scope a route's `security` names, and whether it takes an upload token. */
export function accessOf(security: RouteConfig['security']): Access | undefined {
  const names = (security ?? []).flatMap((requirement) => Object.keys(requirement));
  const scope = names.map((n) => scopeOfScheme.get(n)).find((s) => s !== undefined);
  return (
    scope && { scope, uploadToken: names.includes(UPLOAD_TOKEN_SCHEME), tokenExpiryWaived: !!security && outlivingTokens.has(security) }
  );
}

export interface Access {
  scope: Scope;
  uploadToken: boolean;
  tokenExpiryWaived: boolean;
}

/** 403 insufficient_scope unless the caller holds `scope` (or is an upload token where one is taken). */
export function assertAccess(c: Context<AppEnv>, access: Access): void {
  assertMay(c.get('principal'), access);
}

/** assertAccess for a principal outside a route (a progress socket's upgrade). */
export function assertMay(principal: Principal | undefined, access: Access): void {
  if (!principal) throw problem('unauthorized', 'Send Authorization: Bearer <api key>.');
  if (principal.kind === 'token') {
    if (!access.uploadToken)
      throw problem(
        'insufficient_scope',
        `An upload token only uploads (and reads its own uploads); this needs an API key with ${access.scope}.`,
        { extra: { scope: access.scope } },
      );
    if (!access.tokenExpiryWaived) assertGrantLive(principal.grant);
    return;
  }
  if (!principal.scopes.includes(access.scope))
    throw problem('insufficient_scope', `This API key does not hold the scope ${access.scope}.`, { extra: { scope: access.scope } });
}

/** Who is uploading, as a pipeline's validation hook is told (a companion endpoint acts as the key or token that minted it). */
export function callerOf(c: Context<AppEnv>): Caller {
  const principal = c.get('principal');
  if (principal?.kind === 'key') return { kind: 'key', id: principal.id, label: principal.label };
  if (principal?.kind === 'token') return { kind: 'token', id: principal.id, subject: principal.grant.subject };
  return { kind: 'companion' };
}

/** The upload token calling, if it is one. */
export function callingToken(c: Context<AppEnv>) {
  const principal = c.get('principal');
  return principal?.kind === 'token' ? principal : undefined;
}

/** What a derived credential's route asks of its parent: as `requires` would declare it. */
export function parentAccess(scope: Scope, opts: Parameters<typeof requires>[1] = {}): Access {
  return accessOf(requires(scope, opts))!;
}

/**
 * A request made with a derived credential (src/tokens/parent.ts) acts as its parent: the
 * tenant and the parent's current principal are set on it and checked as the parent itself
 * would be. 401 when the parent is revoked or gone; 403 when it lacks the scope.
 */
export async function actAsParent(
  c: Context<AppEnv>,
  tenantId: string,
  parent: Parent,
  current: () => Promise<Principal | undefined>,
  access: Access,
): Promise<void> {
  c.set('tenantId', tenantId);
  c.set('parent', parent);
  const principal = await dependency('database_unavailable', current);
  assertParentMay(parent, principal, access);
  c.set('principal', principal!);
}

/** actAsParent's check, for a derived credential used outside a route. */
export function assertParentMay(parent: Parent, current: Principal | undefined, access: Access): void {
  if (!current)
    throw problem('unauthorized', `The ${parent.kind === 'key' ? 'API key' : 'upload token'} this credential was made with is revoked.`);
  assertMay(current, access);
}
