// Uppy's progress sockets as an attacker holding a browser's companion endpoint would use
// them: more sockets than a tenant may hold, an oversized message, a socket for a key that
// names no import, a forged endpoint. Real WebSockets over a real HTTP server on loopback; the
// database answers "nothing under this key" (the imports' real sockets, on both stores, are
// imports.test.ts).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { afterEach, beforeEach, expect, it } from 'vitest';
import WebSocket from 'ws';
import { ImportProgressSockets } from '../../src/imports/uppy-url/progress';
import type { UppyCompanion } from '../../src/arrivals/uppy/uppy-companion';
import type { Pool } from '../../src/db/pool';
import { problem } from '../../src/errors';
import type { Importer } from '../../src/imports/importer';

const LIVE_KEY = '5f0c1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e2f';
const uppy = {
  ownerOf: (token: string) => {
    // Minted by an API key the fake database holds (with every scope), or by one it no longer does.
    if (token.startsWith('tenant-')) return { tenantId: token, parent: { kind: 'key', id: LIVE_KEY } };
    if (token.startsWith('revoked-key-'))
      return { tenantId: 'tenant-r', parent: { kind: 'key', id: '1e2d3c4b-5a69-4788-9a0b-1c2d3e4f5a6b' } };
    if (token.startsWith('scoped-key-'))
      return { tenantId: 'tenant-s', parent: { kind: 'key', id: '2e2d3c4b-5a69-4788-9a0b-1c2d3e4f5a6b' } };
    // An endpoint minted for an upload token (the fake database holds no token rows: as if revoked and purged).
    if (token.startsWith('token-')) {
      const id = '0b5c9a4e-64c4-4c41-9c3c-4d1d6d1a3b8e';
      return { tenantId: 'tenant-t', parent: { kind: 'token', id }, tokenId: id };
    }
    throw problem('signature_invalid', 'This companion endpoint is not one this server minted.');
  },
} as unknown as UppyCompanion;

let queries = 0;
const pool = {
  query: async (q: string | { text: string; values: unknown[] }, params: unknown[] = []) => {
    queries++;
    const [text, values] = typeof q === 'string' ? [q, params] : [q.text, q.values];
    if (text.includes('FROM api_keys') && values[1] === LIVE_KEY)
      return { rows: [{ id: LIVE_KEY, label: 'k', scopes: null }], rowCount: 1 };
    if (text.includes('FROM api_keys') && values[0] === 'tenant-s')
      return { rows: [{ id: values[1], label: 'writes only', scopes: ['uploads:write'] }], rowCount: 1 };
    return { rows: [], rowCount: 0 };
  },
} as unknown as Pool;

let server: Server;
let sockets: ImportProgressSockets;
let base: string;
const opened: WebSocket[] = [];

function start(opts: { maxPerTenant: number; nothingToFollowMs?: number }) {
  sockets = new ImportProgressSockets({ uppy, pool, importer: {} as Importer, intervalMs: 50, nothingToFollowMs: 60_000, ...opts });
  server.on('upgrade', (req, socket: Duplex, head) => {
    if (!sockets.handleUpgrade(req, socket, head)) socket.destroy();
  });
}

beforeEach(async () => {
  queries = 0;
  server = createServer((_req, res) => res.end());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterEach(async () => {
  for (const ws of opened.splice(0)) ws.terminate();
  sockets?.close();
  await new Promise((resolve) => server.close(resolve));
});

type Outcome =
  { open: WebSocket } | { status: number; headers: Record<string, string | string[] | undefined>; body: Record<string, unknown> };

function connect(endpoint: string, key = 'a2V5'): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${base}/uppy/${endpoint}/api/${key}`);
    ws.on('open', () => {
      opened.push(ws);
      resolve({ open: ws });
    });
    ws.on('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: JSON.parse(text) }));
    });
    ws.on('error', reject);
  });
}

/** A socket of `endpoint` once a place has freed (the server hears a close a moment after the client). */
async function connectOnceFreed(endpoint: string): Promise<Outcome> {
  let outcome = await connect(endpoint);
  for (let i = 0; i < 100 && !('open' in outcome); i++) {
    await new Promise((r) => setTimeout(r, 20));
    outcome = await connect(endpoint);
  }
  return outcome;
}

function closed(ws: WebSocket): Promise<{ code: number; messages: unknown[] }> {
  const messages: unknown[] = [];
  ws.on('message', (data) => messages.push(JSON.parse(String(data))));
  return new Promise((resolve) => ws.on('close', (code) => resolve({ code, messages })));
}

it("refuses a tenant's socket past its limit with 429 problem+json, and takes one again once a socket closes", async () => {
  start({ maxPerTenant: 2 });
  const first = await connect('tenant-a');
  const second = await connect('tenant-a');
  expect('open' in first && 'open' in second).toBe(true);

  const refused = await connect('tenant-a');
  expect(refused).toMatchObject({
    status: 429,
    headers: { 'content-type': 'application/problem+json', 'retry-after': '10' },
    body: { error: 'too_many_progress_sockets', status: 429, limit: 2 },
  });
  // Another tenant's sockets are counted apart.
  expect('open' in (await connect('tenant-b'))).toBe(true);

  const gone = closed((first as { open: WebSocket }).open);
  (first as { open: WebSocket }).open.close();
  await gone;
  expect('open' in (await connectOnceFreed('tenant-a'))).toBe(true);
});

it("closes a socket sent a message larger than any of Uppy's (1009), and frees its place", async () => {
  start({ maxPerTenant: 1 });
  const outcome = await connect('tenant-a');
  if (!('open' in outcome)) throw new Error(`not opened: ${outcome.status}`);
  const ending = closed(outcome.open);
  outcome.open.send(JSON.stringify({ action: 'cancel', padding: 'x'.repeat(8192) }));
  expect((await ending).code).toBe(1009);
  expect('open' in (await connectOnceFreed('tenant-a'))).toBe(true);
});

it('says "No such import." and closes when its key names no import of the caller\'s, then stops asking', async () => {
  start({ maxPerTenant: 4, nothingToFollowMs: 300 });
  const outcome = await connect('tenant-a');
  if (!('open' in outcome)) throw new Error(`not opened: ${outcome.status}`);
  const end = await closed(outcome.open);
  expect(end).toEqual({ code: 1000, messages: [{ action: 'error', payload: { error: { message: 'No such import.' } } }] });
  const asked = queries;
  await new Promise((r) => setTimeout(r, 300));
  expect(queries).toBe(asked);
});

it.each([
  ['a forged endpoint', 'forged.1.x', 403, 'signature_invalid', 0],
  ["one whose upload token is revoked (as the endpoint's HTTP routes do)", 'token-1', 401, 'unauthorized', 1],
  ['one whose API key is revoked', 'revoked-key-1', 401, 'unauthorized', 1],
  ['one whose API key does not hold imports:create', 'scoped-key-1', 403, 'insufficient_scope', 1],
] as const)('refuses %s with its problem, opening nothing', async (_what, endpoint, status, error, reads) => {
  start({ maxPerTenant: 4 });
  expect(await connect(endpoint)).toMatchObject({ status, headers: { 'content-type': 'application/problem+json' }, body: { error } });
  expect(queries).toBe(reads);
});
