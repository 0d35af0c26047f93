// The scope each route needs: declared in its OpenAPI definition (`requires`) and enforced
// by route() from that same declaration, so the document and the checks cannot differ.
import type { RouteConfig } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { SCOPES, type Scope } from '../credentials';
import { problem } from '../errors';
import type { AppEnv } from './env';

/** The OpenAPI security scheme of an API key holding `scope` (component names allow no colon). */
export function schemeOf(scope: Scope): string {
  return `key.${scope.replace(':', '.')}`;
}

const scopeOfScheme = new Map<string, Scope>(SCOPES.map((s) => [schemeOf(s), s]));

/** A route's `security`: an API key holding `scope`. */
export function requires(scope: Scope): NonNullable<RouteConfig['security']> {
  return [{ [schemeOf(scope)]: [] }];
}

/** The scope a route's `security` names, if any. */
export function scopeOf(security: RouteConfig['security']): Scope | undefined {
  for (const requirement of security ?? [])
    for (const name of Object.keys(requirement)) if (scopeOfScheme.has(name)) return scopeOfScheme.get(name);
  return undefined;
}

/** 403 insufficient_scope unless the caller holds `scope`. */
export function assertScope(c: Context<AppEnv>, scope: Scope): void {
  const principal = c.get('principal');
  if (!principal) throw problem('unauthorized', 'Send Authorization: Bearer <api key>.');
  if (!principal.scopes.includes(scope))
    throw problem('insufficient_scope', `This API key does not hold the scope ${scope}.`, { extra: { scope } });
}
