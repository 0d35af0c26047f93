// Bearer API key → tenant. Runs before anything else on /v1; keys are looked up by their
// SHA-256 hash and the answer cached briefly (the replay path stays one query). Revoking a
// key through this process evicts it at once, and a lookup that was in flight while it did
// cannot put it back (a revocation bumps the cache's generation; lookups begun before it are
// not cached); other replicas notice within the cache time.
import type { MiddlewareHandler } from 'hono';
import type { Pool } from '../../db/pool';
import { dependency, problem } from '../../errors';
import { lookupApiKey } from '../../tenants';
import type { AppEnv } from '../env';
import { header } from '../headers';

type KeyLookup = (token: string) => Promise<{ tenantId: string; keyId: string } | undefined>;

export class ApiKeyCache {
  private readonly entries = new Map<string, { tenantId: string; keyId: string; until: number }>();
  private revocations = 0;

  constructor(
    readonly ttlMs = 30_000,
    private readonly maxEntries = 10_000,
  ) {}

  get(token: string): { tenantId: string; keyId: string } | undefined {
    const hit = this.entries.get(token);
    return hit && hit.until > Date.now() ? hit : undefined;
  }

  /** Taken before a database lookup; `set` with it is ignored if a key was revoked since. */
  generation(): number {
    return this.revocations;
  }

  set(token: string, value: { tenantId: string; keyId: string }, generation: number): void {
    if (generation !== this.revocations) return;
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(token, { ...value, until: Date.now() + this.ttlMs });
  }

  forgetKey(keyId: string): void {
    this.revocations++;
    for (const [token, e] of this.entries) if (e.keyId === keyId) this.entries.delete(token);
  }
}

export function bearerAuth(opts: { pool: Pool; cache: ApiKeyCache; lookup?: KeyLookup }): MiddlewareHandler<AppEnv> {
  const lookup: KeyLookup = opts.lookup ?? ((token) => lookupApiKey(opts.pool, token));
  return async function bearerAuth(c, next) {
    const authorization = header(c, 'authorization');
    const m = authorization ? /^Bearer\s+([A-Za-z0-9._~+/=-]{16,512})\s*$/i.exec(authorization) : null;
    if (!m) throw problem('unauthorized', 'Send Authorization: Bearer <api key>.');
    const token = m[1]!;
    let found = opts.cache.get(token);
    if (!found) {
      const generation = opts.cache.generation();
      found = await dependency('database_unavailable', () => lookup(token));
      if (!found) throw problem('unauthorized', 'The API key is not valid.');
      opts.cache.set(token, found, generation);
    }
    c.set('tenantId', found.tenantId);
    await next();
  };
}
