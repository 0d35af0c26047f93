// Tenants and API keys over HTTP, under the one idempotency rule: the same request with the
// same key creates one tenant / one key and replays the first answer (the new token
// included); the stored answer is sealed, so the key table never holds a token in plain
// text; a different request under the key is 422; bad input changes nothing; revocation bites.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATOR_TENANT_ID } from '../../src/tenants';
import { SCOPES, type Scope } from '../../src/credentials';
import { schemeOf } from '../../src/http/scopes';
import { startTestStack, type TestStack } from '../helpers/stack';
import { getJson } from '../helpers/http';
import { eventually } from '../helpers/inspect';

const ADMIN_TOKEN = `admin-${randomUUID()}`;
let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack('apikeys', { env: { ADMIN_TOKEN } });
});
afterAll(() => stack?.stop());

async function post(path: string, body: unknown, opts: { token?: string; key?: string; raw?: string } = {}) {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  if (opts.key) headers['idempotency-key'] = opts.key;
  const res = await fetch(`${stack.url}${path}`, { method: 'POST', headers, body: opts.raw ?? JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: text ? JSON.parse(text) : undefined };
}

const count = async (sql: string, params: unknown[]) => Number((await stack.runtime.pool.query(sql, params)).rows[0].n);
const tenantsNamed = (name: string) => count('SELECT count(*) AS n FROM tenants WHERE name = $1', [name]);

describe('GET /admin/tenants', () => {
  it('pages every tenant once with its usage, refuses bad paging and a tenant key', async () => {
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const made = await stack.createTenant(`listed-${randomUUID()}`);
    const body = Buffer.from('counted');
    const up = await fetch(`${stack.url}/v1/uploads`, {
      method: 'POST',
      headers: { authorization: `Bearer ${made.apiKey}`, 'idempotency-key': randomUUID(), 'content-type': 'text/plain' },
      body,
    });
    expect(up.status).toBe(201);
    const seen: { tenantId: string; usage: { uploads: number; bytes: number } }[] = [];
    let cursor: string | null = null;
    do {
      const page = (await (
        await fetch(`${stack.url}/admin/tenants?limit=2${cursor ? `&cursor=${cursor}` : ''}`, { headers: admin })
      ).json()) as {
        items: typeof seen;
        nextCursor: string | null;
      };
      expect(page.items.length).toBeLessThanOrEqual(2);
      seen.push(...page.items);
      cursor = page.nextCursor;
    } while (cursor);
    expect(new Set(seen.map((t) => t.tenantId)).size).toBe(seen.length);
    expect(seen.find((t) => t.tenantId === made.tenantId)?.usage).toMatchObject({ uploads: 1, bytes: body.length, pendingDeletions: 0 });
    expect(seen.some((t) => t.tenantId === '00000000-0000-0000-0000-000000000000')).toBe(false);
    for (const q of ['limit=0', 'limit=101', `cursor=${Buffer.from('Not A Cursor!').toString('base64url')}`]) {
      const res = await fetch(`${stack.url}/admin/tenants?${q}`, { headers: admin });
      expect(res.status, q).toBe(400);
      expect(((await res.json()) as { error: string }).error).toBe('query_invalid');
    }
    expect((await fetch(`${stack.url}/admin/tenants`, { headers: { authorization: `Bearer ${made.apiKey}` } })).status).toBe(401);
  });
});

describe('POST /admin/tenants', () => {
  it('creates one tenant per Idempotency-Key and replays its answer, token included, from a sealed row', async () => {
    const name = `Acme ${randomUUID()}`;
    const key = `tenant-${randomUUID()}`;
    const first = await post('/admin/tenants', { name }, { token: ADMIN_TOKEN, key });
    expect(first.status).toBe(201);
    expect(first.json.apiKey.key).toMatch(/^onc_/);
    const again = await post('/admin/tenants', { name }, { token: ADMIN_TOKEN, key });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.text).toBe(first.text);
    expect(await tenantsNamed(name)).toBe(1);

    const row = (
      await stack.runtime.pool.query('SELECT response_body FROM idempotency_keys WHERE tenant_id = $1 AND key = $2', [
        OPERATOR_TENANT_ID,
        key,
      ])
    ).rows[0];
    expect(row.response_body).toMatch(/^sealed:v1:/);
    expect(row.response_body).not.toContain(first.json.apiKey.key);

    // The token works, and belongs to the new tenant.
    const keys = await getJson(`${stack.url}/v1/api-keys`, first.json.apiKey.key);
    expect(keys.status).toBe(200);
    expect(keys.json.data).toEqual([expect.objectContaining({ id: first.json.apiKey.id, label: 'initial', revokedAt: null })]);
    // Never used when made; its use is recorded (to the minute) and listed.
    expect(first.json.apiKey.lastUsedAt).toBeNull();
    const used = await eventually(async () => {
      const k = (await getJson(`${stack.url}/v1/api-keys`, first.json.apiKey.key)).json.data[0];
      return k.lastUsedAt ? (k as { lastUsedAt: string }) : undefined;
    });
    expect(Math.abs(Date.parse(used.lastUsedAt) - Date.now())).toBeLessThan(60_000);
  });

  it('refuses another request under a used key (422) and creates nothing', async () => {
    const key = `tenant-${randomUUID()}`;
    const name = `Beta ${randomUUID()}`;
    expect((await post('/admin/tenants', { name }, { token: ADMIN_TOKEN, key })).status).toBe(201);
    const other = await post('/admin/tenants', { name: `${name} 2` }, { token: ADMIN_TOKEN, key });
    expect(other.status).toBe(422);
    expect(other.json.error).toBe('idempotency_key_reuse');
    expect(await tenantsNamed(`${name} 2`)).toBe(0);
  });

  it('concurrent copies create exactly one tenant', async () => {
    const key = `tenant-${randomUUID()}`;
    const name = `Gamma ${randomUUID()}`;
    const answers = await Promise.all(Array.from({ length: 6 }, () => post('/admin/tenants', { name }, { token: ADMIN_TOKEN, key })));
    for (const a of answers) expect([201, 409]).toContain(a.status);
    const created = answers.filter((a) => a.status === 201);
    expect(new Set(created.map((a) => a.text)).size).toBe(1);
    expect(await tenantsNamed(name)).toBe(1);
  });

  it('answers bad input and bad tokens with problems and changes nothing', async () => {
    const before = await count('SELECT count(*) AS n FROM tenants', []);
    const cases = [
      { body: { name: 'x' }, token: undefined, status: 401, error: 'unauthorized' },
      { body: { name: 'x' }, token: `${ADMIN_TOKEN}-wrong`, status: 401, error: 'unauthorized' },
      { body: { name: '' }, token: ADMIN_TOKEN, status: 400, error: 'body_invalid' },
      { body: { nom: 'x' }, token: ADMIN_TOKEN, status: 400, error: 'body_invalid' },
      { body: { name: 'x'.repeat(201) }, token: ADMIN_TOKEN, status: 400, error: 'body_invalid' },
      { raw: '{"name": ', token: ADMIN_TOKEN, status: 400, error: 'body_invalid' },
    ];
    for (const c of cases) {
      const r = await post('/admin/tenants', c.body, { token: c.token, raw: c.raw, key: `bad-${randomUUID()}` });
      expect(r.status, JSON.stringify(c)).toBe(c.status);
      expect(r.headers.get('content-type')).toContain('application/problem+json');
      expect(r.json.error).toBe(c.error);
    }
    // A tenant API key is not an operator token.
    const { apiKey } = await stack.createTenant();
    expect((await post('/admin/tenants', { name: 'x' }, { token: apiKey })).status).toBe(401);
    expect(await count('SELECT count(*) AS n FROM tenants', [])).toBe(before + 1);
  });
});

describe('/v1/api-keys', () => {
  it('creates one key per Idempotency-Key, replays it, and the replayed token works', async () => {
    const { apiKey } = await stack.createTenant();
    const key = `apikey-${randomUUID()}`;
    const answers = await Promise.all(Array.from({ length: 4 }, () => post('/v1/api-keys', { label: 'ci' }, { token: apiKey, key })));
    for (const a of answers) expect([201, 409]).toContain(a.status);
    const replay = await post('/v1/api-keys', { label: 'ci' }, { token: apiKey, key });
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    for (const a of answers.filter((x) => x.status === 201)) expect(a.text).toBe(replay.text);
    const list = await getJson(`${stack.url}/v1/api-keys`, apiKey);
    expect(list.json.data.map((k: { label: string }) => k.label)).toEqual(['initial', 'ci']);
    expect((await getJson(`${stack.url}/v1/api-keys`, replay.json.key)).status).toBe(200);
    // Polling the key shows the stored answer with the token redacted (shown once).
    const state = await getJson(`${stack.url}/v1/idempotency-keys/${key}`, apiKey);
    expect(state.json).toMatchObject({ state: 'completed', status: 201, response: { id: replay.json.id, key: '[redacted]' } });
    expect(
      JSON.stringify((await stack.runtime.pool.query('SELECT response_body FROM idempotency_keys WHERE key = $1', [key])).rows),
    ).not.toContain(replay.json.key);
  });

  it('revokes a key at once, only within its tenant', async () => {
    const a = await stack.createTenant();
    const b = await stack.createTenant();
    const extra = await post('/v1/api-keys', { label: 'temp' }, { token: a.apiKey });
    expect((await getJson(`${stack.url}/v1/api-keys`, extra.json.key)).status).toBe(200); // now cached
    const foreign = await fetch(`${stack.url}/v1/api-keys/${extra.json.id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${b.apiKey}` },
    });
    expect(foreign.status).toBe(404);
    const revoke = await fetch(`${stack.url}/v1/api-keys/${extra.json.id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${a.apiKey}` },
    });
    expect(revoke.status).toBe(204);
    const after = await getJson(`${stack.url}/v1/api-keys`, extra.json.key);
    expect(after.status).toBe(401);
    const again = await fetch(`${stack.url}/v1/api-keys/${extra.json.id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${a.apiKey}` },
    });
    expect(again.status).toBe(404);
  });

  it('refuses a bad body with 400 and creates no key', async () => {
    const { tenantId, apiKey } = await stack.createTenant();
    for (const raw of ['not json', '{"label": 42}', JSON.stringify({ label: 'y'.repeat(101) })]) {
      const r = await post('/v1/api-keys', undefined, { token: apiKey, raw });
      expect(r.status, raw).toBe(400);
      expect(r.json.error).toBe('body_invalid');
    }
    expect(await count('SELECT count(*) AS n FROM api_keys WHERE tenant_id = $1', [tenantId])).toBe(1);
  });
});

describe('a request under the key still running (claimed, not yet answered)', () => {
  it('answers copies 409 with Retry-After, shows processing, and takes over a claim whose request died', async () => {
    const { tenantId, apiKey } = await stack.createTenant();
    const db = stack.runtime.pool;
    // A finished request gives the fingerprint and route of this exact request (the key is not part of either).
    const done = `claim-done-${randomUUID()}`;
    expect((await post('/v1/api-keys', { label: 'ci' }, { token: apiKey, key: done })).status).toBe(201);
    const key = `claim-open-${randomUUID()}`;
    await db.query(
      `INSERT INTO idempotency_keys (tenant_id, key, fingerprint, route, created_at, expires_at)
       SELECT tenant_id, $3, fingerprint, route, now(), expires_at FROM idempotency_keys WHERE tenant_id = $1 AND key = $2`,
      [tenantId, done, key],
    );

    const copy = await post('/v1/api-keys', { label: 'ci' }, { token: apiKey, key });
    expect(copy.status).toBe(409);
    expect(copy.json.error).toBe('idempotency_in_progress');
    expect(copy.headers.get('retry-after')).toBe('1');
    const state = await getJson(`${stack.url}/v1/idempotency-keys/${key}`, apiKey);
    expect(state.json).toMatchObject({ state: 'processing', workflowId: null });
    expect(state.headers.get('retry-after')).toBe('1');
    const keysBefore = await count('SELECT count(*) AS n FROM api_keys WHERE tenant_id = $1', [tenantId]);

    // The claiming request died a while ago: the next copy takes the key over and runs.
    await db.query(`UPDATE idempotency_keys SET created_at = now() - interval '2 minutes' WHERE tenant_id = $1 AND key = $2`, [
      tenantId,
      key,
    ]);
    const takeover = await post('/v1/api-keys', { label: 'ci' }, { token: apiKey, key });
    expect(takeover.status, takeover.text).toBe(201);
    expect(await count('SELECT count(*) AS n FROM api_keys WHERE tenant_id = $1', [tenantId])).toBe(keysBefore + 1);
    expect((await post('/v1/api-keys', { label: 'ci' }, { token: apiKey, key })).text).toBe(takeover.text);
  });
});

describe('restricted keys', () => {
  let tenant: { tenantId: string; apiKey: string };
  const keyWith = async (scopes: string[]) => {
    const res = await post('/v1/api-keys', { label: `${scopes.length} scopes ${randomUUID()}`, scopes }, { token: tenant.apiKey });
    expect(res.status, res.text).toBe(201);
    expect(res.json.scopes).toEqual(scopes);
    return res.json.key as string;
  };
  beforeAll(async () => {
    tenant = await stack.createTenant('scoped');
  });

  it('each scope allows exactly the routes the OpenAPI document gives it (table-driven over /openapi.json)', async () => {
    const doc = (await getJson(`${stack.url}/openapi.json`)).json;
    const byScheme = new Map(SCOPES.map((s) => [schemeOf(s), s]));
    const routes: { method: string; path: string; scope: Scope }[] = [];
    const open: string[] = [];
    for (const [p, ops] of Object.entries(doc.paths as Record<string, Record<string, { security?: Record<string, unknown>[] }>>)) {
      for (const [method, op] of Object.entries(ops)) {
        const schemes = (op.security ?? []).flatMap((r) => Object.keys(r));
        const scopes = schemes.filter((s) => byScheme.has(s)).map((s) => byScheme.get(s)!);
        if (p.startsWith('/v1/') && !op.security) open.push(`${method.toUpperCase()} ${p}`);
        else if (p.startsWith('/v1/')) expect(scopes, `${method} ${p} declares one scope`).toHaveLength(1);
        if (scopes.length === 1) routes.push({ method: method.toUpperCase(), path: p, scope: scopes[0]! });
      }
    }
    // Under /v1 only what carries its own credential (a signature) or discovers the protocol is open.
    expect(open.sort()).toEqual([
      'GET /v1/downloads/{id}',
      'GET /v1/images/{id}/{spec}',
      'OPTIONS /v1/resumable-uploads',
      'OPTIONS /v1/tus',
      'OPTIONS /v1/uploads',
      'PUT /v1/direct-uploads/{id}/object',
    ]);
    expect(routes.length).toBeGreaterThanOrEqual(30);
    const keys = new Map<Scope, { only: string; allBut: string }>();
    for (const s of new Set(routes.map((r) => r.scope))) {
      keys.set(s, { only: await keyWith([s]), allBut: await keyWith(SCOPES.filter((o) => o !== s)) });
    }
    const call = (r: (typeof routes)[number], token: string) =>
      fetch(`${stack.url}${r.path.replaceAll(/\{(\w+)\}/g, (_m, name: string) => (name === 'n' ? '1' : randomUUID()))}`, {
        method: r.method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: ['POST', 'PUT', 'PATCH'].includes(r.method) ? '{}' : undefined,
      });
    for (const r of routes) {
      const { only, allBut } = keys.get(r.scope)!;
      const allowed = await call(r, only);
      const allowedBody = r.method === 'HEAD' ? '' : await allowed.text();
      expect(allowed.status === 403 && allowedBody.includes('insufficient_scope'), `${r.method} ${r.path} with ${r.scope}`).toBe(false);
      const refused = await call(r, allBut);
      expect(refused.status, `${r.method} ${r.path} without ${r.scope}`).toBe(403);
      if (r.method !== 'HEAD') expect(await refused.json()).toMatchObject({ error: 'insufficient_scope', scope: r.scope });
    }
  });

  it('a key gives a new key only scopes it holds; without a list the new key holds what the maker holds', async () => {
    const manager = await keyWith(['keys:manage']);
    const escalate = await post('/v1/api-keys', { scopes: ['keys:manage', 'uploads:write'] }, { token: manager });
    expect(escalate.status).toBe(403);
    expect(escalate.json).toMatchObject({ error: 'insufficient_scope', scope: 'uploads:write' });
    const plain = await post('/v1/api-keys', { label: 'same' }, { token: manager });
    expect(plain.json.scopes).toEqual(['keys:manage']);
    const listed = await getJson(`${stack.url}/v1/api-keys`, manager);
    const initial = listed.json.data.find((k: { label: string }) => k.label === 'initial');
    expect(initial.scopes).toEqual([...SCOPES]);
    for (const bad of [{ scopes: [] }, { scopes: ['uploads:write', 'uploads:write'] }, { scopes: ['root'] }, { scopes: 'uploads:write' }]) {
      const res = await post('/v1/api-keys', bad, { token: tenant.apiKey });
      expect(res.status, JSON.stringify(bad)).toBe(400);
      expect(res.json.error).toBe('body_invalid');
    }
    const upload = await fetch(`${stack.url}/v1/uploads`, {
      method: 'POST',
      headers: { authorization: `Bearer ${manager}`, 'idempotency-key': `scoped-${randomUUID()}` },
      body: 'not allowed',
    });
    expect(upload.status).toBe(403);
    expect(await upload.json()).toMatchObject({ error: 'insufficient_scope', scope: 'uploads:write' });
    expect(await count('SELECT count(*) AS n FROM uploads WHERE tenant_id = $1', [tenant.tenantId])).toBe(0);
  });
});
