// The codec server's guard: the operator token, or — only where this process started the
// dev server's UI — that UI's origin from a loopback peer, without a token.
import { Hono } from 'hono';
import { expect, it } from 'vitest';
import { codecAuth } from '../../src/api/middleware/admin-auth';
import { onError } from '../../src/api/problem-handler';

const TOKEN = 'operator-token-0123456789abcdef';
const UI = 'http://127.0.0.1:8233';

const app = (devUi: string | undefined, token: string | undefined) => {
  const h = new Hono();
  h.use('/codec/*', codecAuth(token, devUi) as never);
  h.post('/codec/decode', (c) => c.text('ok'));
  h.onError(onError as never);
  return h;
};
/** A request as the Node server hands it over: its headers and its socket's peer in `env.incoming`. */
const call = (h: Hono, headers: Record<string, string>, peer = '127.0.0.1') =>
  h.request(
    '/codec/decode',
    { method: 'POST', headers },
    {
      incoming: {
        headers,
        headersDistinct: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]])),
        socket: { remoteAddress: peer },
      },
    },
  );

it("lets the dev server's own UI decode from this machine, and nothing else without the token", async () => {
  const dev = app(UI, TOKEN);
  expect((await call(dev, { origin: UI })).status).toBe(200);
  expect((await call(dev, { origin: UI }, '::ffff:127.0.0.1')).status).toBe(200);
  // Another origin, another machine, or no origin: the operator token is asked for.
  expect((await call(dev, { origin: 'http://127.0.0.1:9999' })).status).toBe(401);
  expect((await call(dev, { origin: UI }, '10.0.0.7')).status).toBe(401);
  expect((await call(dev, {})).status).toBe(401);
  // Through a proxy on this machine (the peer is loopback, the caller is not): the token is asked for.
  expect((await call(dev, { origin: UI, 'x-forwarded-for': '203.0.113.9' })).status).toBe(401);
  expect((await call(dev, { origin: UI, forwarded: 'for=203.0.113.9' })).status).toBe(401);
  for (const proxyHeader of [
    'x-real-ip',
    'via',
    'x-forwarded-host',
    'x-forwarded-proto',
    'x-client-ip',
    'true-client-ip',
    'cf-connecting-ip',
    'x-cluster-client-ip',
    'fastly-client-ip',
    'x-original-forwarded-for',
  ])
    expect({
      proxyHeader,
      status: (await call(dev, { origin: UI, [proxyHeader]: proxyHeader === 'via' ? '1.1 proxy' : '203.0.113.9' })).status,
    }).toEqual({
      proxyHeader,
      status: 401,
    });
  // A request that brings a credential is judged by it, wherever it comes from.
  expect((await call(dev, { origin: UI, authorization: 'Bearer wrong-token-0123456789abc' })).status).toBe(401);
  expect((await call(dev, { authorization: `Bearer ${TOKEN}` }, '10.0.0.7')).status).toBe(200);
  // Without a dev UI of its own (a deployment), the UI's origin opens nothing.
  expect((await call(app(undefined, TOKEN), { origin: UI })).status).toBe(401);
  // Without ADMIN_TOKEN the codec server is not there, except for the embedded default's UI.
  expect((await call(app(undefined, undefined), { origin: UI })).status).toBe(404);
  expect((await call(app(UI, undefined), { origin: UI })).status).toBe(200);
});
