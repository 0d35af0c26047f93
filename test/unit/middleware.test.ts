// The API's middleware at its own level (app.request(), no stack): CORS preflights and
// headers, the NUL guard, the operator token, and the access log's one line per request.
import { Hono, type MiddlewareHandler } from 'hono';
import pino from 'pino';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { accessLog } from '../../src/api/middleware/access-log';
import { adminAuth } from '../../src/api/middleware/admin-auth';
import { cors } from '../../src/api/middleware/cors';
import { nulGuard } from '../../src/api/middleware/nul-guard';
import { repeatedQueryGuard } from '../../src/api/middleware/repeated-query-guard';
import { onError } from '../../src/api/problem-handler';
import type { AppEnv } from '../../src/http/env';

const corsOptions = {
  allowHeaders: ['Idempotency-Key', 'Tus-Resumable'],
  exposeHeaders: ['Location'],
  allowMethods: ['GET', 'POST'],
  maxAgeSeconds: 600,
};

function appWith(...mw: MiddlewareHandler<AppEnv>[]) {
  const app = new Hono<AppEnv>();
  for (const m of mw) app.use('*', m);
  let reached = 0;
  app.get('/thing', (c) => {
    reached++;
    c.set('idempotencyKey', 'secret-key');
    return c.json({ ok: true });
  });
  app.get('/spread', (c) => {
    c.set('corsApplied', true);
    return c.json({ ok: true }, 200, { 'x-own': '1' });
  });
  app.onError(onError);
  return { app, reached: () => reached };
}

describe('cors', () => {
  it('answers a preflight itself (204) without reaching the route', async () => {
    const { app, reached } = appWith(cors(corsOptions));
    const res = await app.request('/thing', {
      method: 'OPTIONS',
      headers: { 'access-control-request-method': 'POST', origin: 'https://a.example' },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-allow-methods')).toBe('GET, POST');
    expect(res.headers.get('access-control-allow-headers')).toBe('Idempotency-Key, Tus-Resumable');
    expect(res.headers.get('access-control-max-age')).toBe('600');
    expect(reached()).toBe(0);
  });

  it('adds the origin and exposed headers to answers, and to problems', async () => {
    const { app } = appWith(cors(corsOptions), nulGuard());
    const ok = await app.request('/thing');
    expect(ok.headers.get('access-control-allow-origin')).toBe('*');
    expect(ok.headers.get('access-control-expose-headers')).toBe('Location');
    const refused = await app.request('/thing?x=%00');
    expect(refused.status).toBe(400);
    expect(refused.headers.get('access-control-allow-origin')).toBe('*');
  });

  it('leaves a handler that applied the headers itself alone', async () => {
    const { app } = appWith(cors(corsOptions));
    const res = await app.request('/spread');
    expect(res.headers.get('x-own')).toBe('1');
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('nulGuard', () => {
  it('refuses %00 anywhere in the URL with a problem, before the route', async () => {
    const { app, reached } = appWith(nulGuard());
    for (const url of ['/thing?q=a%00b', '/thing%00', '/thing?q=%00']) {
      const res = await app.request(url);
      expect(res.status, url).toBe(400);
      expect(res.headers.get('content-type')).toBe('application/problem+json');
      expect(((await res.json()) as { error: string }).error).toBe('malformed_request');
    }
    expect(reached()).toBe(0);
    expect((await app.request('/thing?q=%2500')).status).toBe(200);
  });
});

describe('repeatedQueryGuard', () => {
  it('refuses a query parameter given twice with a problem naming it, before the route', async () => {
    const { app, reached } = appWith(repeatedQueryGuard());
    for (const [url, name] of [
      ['/thing?limit=1&limit=500', 'limit'],
      ['/thing?expires=1&signature=a&expires=2', 'expires'],
      ['/thing?a=1&metadata%5Bname%5D=x&metadata[name]=y', 'metadata[name]'],
    ] as const) {
      const res = await app.request(url);
      expect(res.status, url).toBe(400);
      expect(res.headers.get('content-type')).toBe('application/problem+json');
      expect(await res.json()).toMatchObject({ error: 'query_invalid', detail: expect.stringContaining(`"${name}"`) });
    }
    expect(reached()).toBe(0);
    for (const url of ['/thing', '/thing?', '/thing?limit=1&cursor=x', '/thing?a=1&A=2'])
      expect((await app.request(url)).status, url).toBe(200);
    expect(reached()).toBe(4);
  });
});

describe('adminAuth', () => {
  it('hides the operator routes without a token, and takes only the configured bearer', async () => {
    const off = appWith(adminAuth(undefined));
    expect((await off.app.request('/thing', { headers: { authorization: 'Bearer x' } })).status).toBe(404);
    const on = appWith(adminAuth('s3cret-operator'));
    expect((await on.app.request('/thing')).status).toBe(401);
    expect((await on.app.request('/thing', { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
    expect((await on.app.request('/thing', { headers: { authorization: 'Basic s3cret-operator' } })).status).toBe(401);
    expect((await on.app.request('/thing', { headers: { authorization: 'Bearer s3cret-operator' } })).status).toBe(200);
    expect(on.reached()).toBe(1);
  });
});

describe('accessLog', () => {
  it('writes one line per request with the key hashed and no Authorization', async () => {
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(JSON.parse(String(chunk)) as Record<string, unknown>);
        done();
      },
    });
    const { app } = appWith(accessLog(pino({ level: 'info' }, sink)));
    await app.request('/thing', { headers: { authorization: 'Bearer onc_secret' } });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ msg: 'request', method: 'GET', path: '/thing', status: 200 });
    expect(lines[0]!.keyHash).toMatch(/^[0-9a-f]{16}$/);
    const text = JSON.stringify(lines[0]);
    expect(text).not.toContain('secret-key');
    expect(text).not.toContain('onc_secret');
  });
});
