// A key lookup in flight while the key is revoked must not put the revoked key back into
// the answering replica's cache (it used to, for the cache's 30 s).
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { SCOPES, type Credential, type Principal } from '../../src/credentials';
import type { Pool } from '../../src/db/pool';
import type { AppEnv } from '../../src/http/env';
import { CredentialCache, bearerAuth } from '../../src/api/middleware/auth';
import { onError } from '../../src/api/problem-handler';

const TOKEN = 'onc_test_token_0123456789';
const principal: Principal = { kind: 'key', id: 'k1', label: 'test', scopes: SCOPES };

function appWith(lookup: (token: string) => Promise<Credential | undefined>, cache: CredentialCache) {
  const app = new Hono<AppEnv>();
  app.use('*', bearerAuth({ pool: {} as Pool, cache, lookup }));
  app.get('/who', (c) => c.text(c.get('tenantId')));
  app.onError(onError);
  return app;
}

const call = (app: Hono<AppEnv>) => app.request('/who', { headers: { authorization: `Bearer ${TOKEN}` } });

describe('API key cache and revocation', () => {
  it('a lookup that read the key before its revocation does not cache it: the next request is refused', async () => {
    let revoked = false;
    let lookups = 0;
    let releaseFirst!: () => void;
    const firstRead = new Promise<void>((resolve) => (releaseFirst = resolve));
    const cache = new CredentialCache();
    const app = appWith(async () => {
      lookups++;
      const sawRevoked = revoked;
      if (lookups === 1) await firstRead; // the database answered "active"; the answer is slow to come back
      return sawRevoked ? undefined : { tenantId: 't1', principal };
    }, cache);

    const inFlight = call(app);
    await new Promise((r) => setTimeout(r, 10));
    revoked = true; // DELETE /v1/api-keys/k1 commits on this replica ...
    cache.forget('k1'); // ... and evicts
    releaseFirst();
    expect((await inFlight).status).toBe(200); // began before the revocation

    const after = await call(app);
    expect(after.status).toBe(401);
    expect(lookups).toBe(2);
  });

  it('without a revocation in between, a lookup is cached (one database read for many requests)', async () => {
    let lookups = 0;
    const app = appWith(async () => {
      lookups++;
      return { tenantId: 't1', principal };
    }, new CredentialCache());
    for (let i = 0; i < 5; i++) expect((await call(app)).status).toBe(200);
    expect(lookups).toBe(1);
  });

  it("a tenant's deletion evicts every credential of that tenant, and only those", async () => {
    let closed = false;
    let lookups = 0;
    const cache = new CredentialCache();
    const app = new Hono<AppEnv>();
    app.use(
      '*',
      bearerAuth({
        pool: {} as Pool,
        cache,
        lookup: async (token) => {
          lookups++;
          if (token === TOKEN) return closed ? undefined : { tenantId: 't1', principal };
          return { tenantId: 't2', principal: { ...principal, id: 'k2' } };
        },
      }),
    );
    app.get('/who', (c) => c.text(c.get('tenantId')));
    app.onError(onError);
    const as = (token: string) => app.request('/who', { headers: { authorization: `Bearer ${token}` } });
    const other = 'onc_other_token_0123456789';
    expect((await as(TOKEN)).status).toBe(200);
    expect((await as(other)).status).toBe(200);
    closed = true; // the tenant's close committed; this replica evicts its keys
    cache.forgetTenant('t1');
    expect((await as(TOKEN)).status).toBe(401);
    expect(await (await as(other)).text()).toBe('t2');
    expect(lookups).toBe(3); // t2's key stayed cached
  });
});
