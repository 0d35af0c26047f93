// Every credential derived from another (a companion endpoint, a signed download, image or
// direct-PUT URL, a progress socket) acts as its parent: generated from one table of parents
// (API keys by scope, a revoked key, an upload token, a revoked token) × each derived kind ×
// each route it reaches, against a real stack on the embedded store (whose URLs are the API's
// own). A request the parent may make is refused only by what follows the credential check
// (a missing key, a bad URL: 400), or served (200, a socket); one it may not is 401 or 403.
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { png } from '../helpers/media';
import { sha256 } from '../helpers/http';
import { startStackOnStore, type TestStack } from '../helpers/stack';

type ParentName = 'all' | 'writeOnly' | 'readOnly' | 'writeAndImports' | 'revokedKey' | 'token' | 'revokedToken';
type DerivedKind = 'companion' | 'downloadUrl' | 'imageUrl' | 'directPut';

/** How each parent is made (a key's scopes, or a token), and whether it is revoked once it has minted. */
const PARENTS: Record<ParentName, { scopes?: string[]; token?: true; revoke?: true }> = {
  all: {},
  writeOnly: { scopes: ['uploads:write'] },
  readOnly: { scopes: ['uploads:read'] },
  writeAndImports: { scopes: ['uploads:write', 'imports:create'] },
  revokedKey: { revoke: true },
  token: { token: true },
  revokedToken: { token: true, revoke: true },
};

/** What minting each derived kind answers for each parent (before any revocation). */
const MINT: Record<DerivedKind, Record<ParentName, number>> = {
  companion: { all: 201, writeOnly: 201, readOnly: 403, writeAndImports: 201, revokedKey: 201, token: 201, revokedToken: 201 },
  downloadUrl: { all: 201, writeOnly: 403, readOnly: 201, writeAndImports: 403, revokedKey: 201, token: 403, revokedToken: 403 },
  imageUrl: { all: 201, writeOnly: 403, readOnly: 201, writeAndImports: 403, revokedKey: 201, token: 403, revokedToken: 403 },
  directPut: { all: 201, writeOnly: 201, readOnly: 403, writeAndImports: 201, revokedKey: 201, token: 201, revokedToken: 201 },
};

/** A route a derived credential reaches, and what it answers when the parent may (`allowed`). */
interface DerivedRoute {
  kind: DerivedKind;
  name: string;
  /** The scope the parent needs (a token is taken where `token`). */
  needs: string;
  token: boolean;
  allowed: number | 'socket';
  send(derived: string): Promise<number | 'socket'>;
}

let stack: TestStack;
let base: string;

async function call(
  method: string,
  pathname: string,
  opts: { key?: string; json?: unknown; headers?: Record<string, string>; body?: Buffer } = {},
) {
  const res = await fetch(new URL(pathname, base), {
    method,
    headers: {
      ...(opts.key ? { authorization: `Bearer ${opts.key}` } : {}),
      ...(opts.json !== undefined ? { 'content-type': 'application/json' } : {}),
      ...opts.headers,
    },
    body: opts.json !== undefined ? JSON.stringify(opts.json) : opts.body,
  });
  const text = await res.text();
  return { status: res.status, json: text && res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : undefined };
}

function socketStatus(url: string): Promise<number | 'socket'> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    ws.on('open', () => {
      ws.terminate();
      resolve('socket');
    });
    ws.on('unexpected-response', (_req, res) => {
      res.resume();
      resolve(res.statusCode!);
    });
    ws.on('error', reject);
  });
}

const ROUTES: DerivedRoute[] = [
  {
    kind: 'companion',
    name: 'GET s3/params',
    needs: 'uploads:write',
    token: true,
    allowed: 400,
    send: (e) => call('GET', `${e}/s3/params?filename=a.txt`).then((r) => r.status),
  },
  {
    kind: 'companion',
    name: 'POST s3/multipart',
    needs: 'uploads:write',
    token: true,
    allowed: 400,
    send: (e) => call('POST', `${e}/s3/multipart`, { json: { filename: 'a.bin', metadata: {} } }).then((r) => r.status),
  },
  {
    kind: 'companion',
    name: 'GET s3/multipart/{id}',
    needs: 'uploads:write',
    token: true,
    allowed: 404,
    send: (e) => call('GET', `${e}/s3/multipart/nope?key=nope`).then((r) => r.status),
  },
  {
    kind: 'companion',
    name: 'POST url/meta',
    needs: 'imports:create',
    token: true,
    allowed: 400,
    send: (e) => call('POST', `${e}/url/meta`, { json: { url: 'not a url' } }).then((r) => r.status),
  },
  {
    kind: 'companion',
    name: 'POST url/get',
    needs: 'imports:create',
    token: true,
    allowed: 400,
    send: (e) => call('POST', `${e}/url/get`, { json: { url: 'http://127.0.0.1:9/f', metadata: {} } }).then((r) => r.status),
  },
  {
    kind: 'companion',
    name: 'GET api/{socket} (upgrade)',
    needs: 'imports:create',
    token: true,
    allowed: 'socket',
    send: (e) => socketStatus(`${base.replace('http', 'ws')}${e}/api/${Buffer.from('no-such-key-0000000').toString('base64url')}`),
  },
  {
    kind: 'downloadUrl',
    name: 'GET /v1/downloads/{id}',
    needs: 'uploads:read',
    token: false,
    allowed: 200,
    send: (u) => call('GET', u).then((r) => r.status),
  },
  {
    kind: 'imageUrl',
    name: 'GET /v1/images/{id}/{spec}',
    needs: 'uploads:read',
    token: false,
    allowed: 200,
    send: (u) => call('GET', u).then((r) => r.status),
  },
  {
    kind: 'directPut',
    name: 'PUT /v1/direct-uploads/{id}/object',
    needs: 'uploads:write',
    token: true,
    allowed: 200,
    send: (u) => call('PUT', u, { body: DIRECT_BODY, headers: { 'content-type': 'application/octet-stream' } }).then((r) => r.status),
  },
];

const DIRECT_BODY = randomBytes(2048);

/** What a route answers a derived credential of `parent`: the parent's own check, now. */
function expected(route: DerivedRoute, parent: ParentName): number | 'socket' {
  const p = PARENTS[parent];
  if (p.revoke) return 401;
  if (p.token) return route.token ? route.allowed : 403;
  const scopes = p.scopes ?? ['uploads:write', 'uploads:read', 'imports:create'];
  return scopes.includes(route.needs) ? route.allowed : 403;
}

describe('derived credentials act as their parent, on every route they reach', () => {
  let owner: string;
  let imageId: string;
  const parents = new Map<ParentName, { bearer: string; revoke: () => Promise<void> }>();
  const derived = new Map<string, string>();

  beforeAll(async () => {
    stack = await startStackOnStore('local', 'derived_creds');
    base = stack.url;
    owner = (await stack.createTenant('derived')).apiKey;
    const picture = await png(32, 24);
    const up = await call('POST', '/v1/uploads', {
      key: owner,
      body: picture,
      headers: { 'idempotency-key': `derived-${randomUUID()}`, 'content-type': 'image/png', prefer: 'wait=60' },
    });
    expect(up.status).toBe(201);
    imageId = up.json.uploadId;
    for (const [name, p] of Object.entries(PARENTS) as [ParentName, (typeof PARENTS)[ParentName]][]) {
      if (p.token) {
        const t = await call('POST', '/v1/upload-tokens', { key: owner, json: { expiresInSeconds: 3600 } });
        expect(t.status).toBe(201);
        parents.set(name, {
          bearer: t.json.token,
          revoke: async () => void expect((await call('DELETE', `/v1/upload-tokens/${t.json.id}`, { key: owner })).status).toBe(204),
        });
      } else {
        const k = await call('POST', '/v1/api-keys', { key: owner, json: { label: name, ...(p.scopes ? { scopes: p.scopes } : {}) } });
        expect(k.status).toBe(201);
        parents.set(name, {
          bearer: k.json.key,
          revoke: async () => void expect((await call('DELETE', `/v1/api-keys/${k.json.id}`, { key: owner })).status).toBe(204),
        });
      }
    }
    // Each parent mints each kind (or is refused), then the revoked ones are revoked.
    for (const name of parents.keys()) {
      const bearer = parents.get(name)!.bearer;
      const mints: Record<DerivedKind, () => Promise<{ status: number; json: any }>> = {
        companion: () => call('POST', '/v1/uppy-endpoints', { key: bearer }),
        downloadUrl: () => call('POST', `/v1/uploads/${imageId}/download-urls`, { key: bearer, json: {} }),
        imageUrl: () => call('POST', `/v1/uploads/${imageId}/image-urls`, { key: bearer, json: { spec: 'w_16,f_png' } }),
        directPut: () =>
          call('POST', '/v1/direct-uploads', {
            key: bearer,
            headers: { 'idempotency-key': `derived-direct-${randomUUID()}` },
            json: { bytes: DIRECT_BODY.length, sha256: sha256(DIRECT_BODY), contentType: 'application/octet-stream' },
          }),
      };
      for (const kind of Object.keys(MINT) as DerivedKind[]) {
        const minted = await mints[kind]();
        expect({ kind, name, status: minted.status }).toEqual({ kind, name, status: MINT[kind][name] });
        if (minted.status !== 201) continue;
        const url = kind === 'companion' ? minted.json.companionEndpoint : kind === 'directPut' ? minted.json.upload.url : minted.json.url;
        derived.set(`${kind}/${name}`, new URL(url, base).pathname + new URL(url, base).search);
      }
      if (PARENTS[name].revoke) await parents.get(name)!.revoke();
    }
  }, 240_000);

  afterAll(async () => {
    await stack?.stop();
  });

  const cases = ROUTES.flatMap((route) =>
    (Object.keys(PARENTS) as ParentName[]).filter((p) => MINT[route.kind][p] === 201).map((parent) => ({ route, parent })),
  );

  it(`covers ${cases.length} credential × route pairs`, () => {
    // Every route is reached by at least one parent that may and one that may not.
    for (const route of ROUTES) {
      const outcomes = cases.filter((c) => c.route === route).map((c) => expected(route, c.parent));
      expect(outcomes).toContain(route.allowed);
      expect(outcomes.some((o) => o === 401 || o === 403)).toBe(true);
    }
  });

  it.each(cases.map((c) => [c.route.name, c.parent, c] as const))('%s through a credential of %s', async (_r, _p, { route, parent }) => {
    const credential = derived.get(`${route.kind}/${parent}`)!;
    expect(await route.send(credential)).toBe(expected(route, parent));
  });
});
