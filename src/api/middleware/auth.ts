// Bearer credential → tenant and principal. Runs before anything else on /v1; API keys and
// upload tokens are looked up by their SHA-256 hash and the answer cached briefly (the replay path stays one
// query). Revoking a credential through this process evicts it at once, and a lookup that
// was in flight while it did cannot put it back (a revocation bumps the cache's generation;
// lookups begun before it are not cached); other replicas notice within the cache time.
import type { MiddlewareHandler } from 'hono';
import type { Credential } from '../../credentials';
import type { Pool } from '../../db/pool';
import { dependency, problem } from '../../errors';
import { lookupApiKey } from '../../tenants';
import { lookupUploadToken, UPLOAD_TOKEN_PREFIX } from '../../tokens/upload-tokens';
import type { AppEnv } from '../../http/env';
import { header } from '../../http/headers';

type CredentialLookup = (token: string) => Promise<Credential | undefined>;

export class CredentialCache {
  private readonly entries = new Map<string, Credential & { until: number }>();
  private revocations = 0;

  constructor(
    readonly ttlMs = 30_000,
    private readonly maxEntries = 10_000,
  ) {}

  get(token: string): Credential | undefined {
    const hit = this.entries.get(token);
    return hit && hit.until > Date.now() ? hit : undefined;
  }

  /** Taken before a database lookup; `set` with it is ignored if a credential was revoked since. */
  generation(): number {
    return this.revocations;
  }

  set(token: string, value: Credential, generation: number): void {
    if (generation !== this.revocations) return;
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(token, { ...value, until: Date.now() + this.ttlMs });
  }

  /** Evicts the credential (an API key or an upload token) with this id. */
  forget(id: string): void {
    this.forgetWhere((e) => e.principal.id === id);
  }

  /** Evicts every credential of a tenant (its deletion began). */
  forgetTenant(tenantId: string): void {
    this.forgetWhere((e) => e.tenantId === tenantId);
  }

  private forgetWhere(match: (e: Credential) => boolean): void {
    this.revocations++;
    for (const [token, e] of this.entries) if (match(e)) this.entries.delete(token);
  }
}

export function bearerAuth(opts: { pool: Pool; cache: CredentialCache; lookup?: CredentialLookup }): MiddlewareHandler<AppEnv> {
  const lookup: CredentialLookup =
    opts.lookup ??
    ((token) => (token.startsWith(UPLOAD_TOKEN_PREFIX) ? lookupUploadToken(opts.pool, token) : lookupApiKey(opts.pool, token)));
  return async function bearerAuth(c, next) {
    const inProcess = c.env?.inProcessCredential;
    if (inProcess) {
      c.set('tenantId', inProcess.tenantId);
      c.set('principal', inProcess.principal);
      return next();
    }
    const authorization = header(c, 'authorization');
    const m = authorization ? /^Bearer\s+([A-Za-z0-9._~+/=-]{16,512})\s*$/i.exec(authorization) : null;
    if (!m) throw problem('unauthorized', 'Send Authorization: Bearer <api key>.');
    const token = m[1]!;
    let found = opts.cache.get(token);
    if (!found) {
      const generation = opts.cache.generation();
      found = await dependency('database_unavailable', () => lookup(token));
      if (!found) throw problem('unauthorized', 'The API key or upload token is not valid (unknown, revoked or expired).');
      opts.cache.set(token, found, generation);
    }
    c.set('tenantId', found.tenantId);
    c.set('principal', found.principal);
    await next();
  };
}
