// Bearer API key → tenant. Runs before anything else on /v1; keys are looked up by their
// SHA-256 hash and the answer cached briefly (the replay path stays one query).
import type { MiddlewareHandler } from 'hono';
import type { Pool } from '../../db/pool';
import { dependency, problem } from '../../errors';
import { tenantForApiKey } from '../../tenants';
import type { AppEnv } from '../env';

export function bearerAuth(opts: { pool: Pool; cacheMs?: number; cacheSize?: number }): MiddlewareHandler<AppEnv> {
  const cacheMs = opts.cacheMs ?? 30_000;
  const cacheSize = opts.cacheSize ?? 10_000;
  const cache = new Map<string, { tenantId: string; until: number }>();

  return async function bearerAuth(c, next) {
    const header = c.req.header('authorization');
    const m = header ? /^Bearer\s+([A-Za-z0-9._~+/=-]{16,512})\s*$/i.exec(header) : null;
    if (!m) throw problem('unauthorized', 'Send Authorization: Bearer <api key>.');
    const token = m[1]!;
    const hit = cache.get(token);
    let tenantId = hit && hit.until > Date.now() ? hit.tenantId : undefined;
    if (!tenantId) {
      tenantId = await dependency('database_unavailable', () => tenantForApiKey(opts.pool, token));
      if (!tenantId) throw problem('unauthorized', 'The API key is not valid.');
      if (cache.size >= cacheSize) cache.delete(cache.keys().next().value!);
      cache.set(token, { tenantId, until: Date.now() + cacheMs });
    }
    c.set('tenantId', tenantId);
    await next();
  };
}
