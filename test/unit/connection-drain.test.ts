// The listener's stop (src/http/drain.ts) on a real socket, with the Hono adapter the API
// serves through: keep-alive clients are let go from the signal on, an old connection's
// request after the drain is refused with 503, and the stop waits for the longest request
// in flight, not the grace period.
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import type { Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { ConnectionDrain, IDLE_LINGER_MS } from '../../src/http/drain';

let server: Server;
let drain: ConnectionDrain;
let port: number;
/** Requests to /slow wait here until the test lets them go. */
let held: (() => void)[] = [];
const sockets: Socket[] = [];

beforeEach(async () => {
  held = [];
  const app = new Hono();
  app.get('/fast', (c) => c.text('ok'));
  app.get('/slow', async (c) => {
    await new Promise<void>((r) => held.push(r));
    return c.text('slow ok');
  });
  // A streamed answer: its head is written at once, its end when the test says.
  app.get('/stream', () => {
    let close!: () => void;
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('part;'));
        close = () => {
          controller.enqueue(new TextEncoder().encode('end'));
          controller.close();
        };
      },
    });
    held.push(() => close());
    return new Response(body, { headers: { 'content-type': 'text/plain' } });
  });
  drain = new ConnectionDrain();
  port = await new Promise<number>((resolve) => {
    server = serve({ fetch: drain.gate(app.fetch), hostname: '127.0.0.1', port: 0 }, (info) => resolve(info.port)) as Server;
  });
  drain.watch(server);
});

afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  for (const release of held) release();
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

/** A raw keep-alive connection that collects what it reads and notices when the server closes it. */
function client() {
  const socket = connect(port, '127.0.0.1');
  sockets.push(socket);
  let text = '';
  let ended = false;
  socket.on('data', (d) => (text += d.toString('latin1')));
  socket.on('end', () => (ended = true));
  socket.on('close', () => (ended = true));
  socket.on('error', () => {});
  const opened = new Promise<void>((r) => socket.once('connect', () => r()));
  return {
    opened,
    send: (raw: string) => socket.write(raw),
    get: (path: string) => socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`),
    text: () => text,
    ended: () => ended,
    /** Waits (polling, bounded) until the condition holds. */
    until: async (cond: () => boolean, what: string) => {
      for (let i = 0; i < 500 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
      if (!cond()) throw new Error(`timed out waiting for ${what}; read so far: ${JSON.stringify(text)}`);
    },
  };
}

const answers = (text: string) => text.split(/(?=HTTP\/1\.1 )/).filter(Boolean);

it('keeps connections alive while serving', async () => {
  const c = client();
  await c.opened;
  c.get('/fast');
  c.get('/fast');
  await c.until(() => answers(c.text()).length === 2, 'two answers');
  expect(c.text()).toMatch(/connection: keep-alive/i);
  expect(c.text()).not.toMatch(/connection: close/i);
  expect(c.ended()).toBe(false);
});

it('from the signal on, closes idle connections and makes every answer close its connection', async () => {
  const idle = client();
  const busy = client();
  await Promise.all([idle.opened, busy.opened]);
  idle.get('/fast');
  await idle.until(() => answers(idle.text()).length === 1, 'the first answer');
  busy.get('/slow');
  await busy.until(() => held.length === 1, 'the slow request to arrive');

  drain.begin();
  expect(drain.phase).toBe('draining');
  // The idle keep-alive connection is let go once idle for the linger.
  const signalled = Date.now();
  await idle.until(() => idle.ended(), 'the idle connection to close');
  expect(Date.now() - signalled).toBeGreaterThanOrEqual(IDLE_LINGER_MS - 100);

  // The request in flight at the signal is answered, and its connection closes after it.
  held.shift()!();
  await busy.until(() => busy.ended(), 'the busy connection to close');
  expect(answers(busy.text())).toHaveLength(1);
  expect(busy.text()).toMatch(/^HTTP\/1\.1 200/);
  expect(busy.text()).toMatch(/connection: close/i);
  expect(busy.text()).toMatch(/slow ok$/);

  // A new connection during the drain is still served, once.
  const late = client();
  await late.opened;
  late.get('/fast');
  late.get('/fast');
  await late.until(() => late.ended(), 'the new connection to close');
  expect(answers(late.text())).toHaveLength(1);
  expect(late.text()).toMatch(/^HTTP\/1\.1 200[\s\S]*connection: close/i);
});

it('reads a request written on an idle connection as the stop begins: served with close in the drain, 503 after it, never reset', async () => {
  const during = client();
  const after = client();
  await Promise.all([during.opened, after.opened]);
  during.get('/fast');
  after.get('/fast');
  await during.until(() => answers(during.text()).length === 1, 'the first answer');
  await after.until(() => answers(after.text()).length === 1, 'the first answer');
  // Both connections idle; each client writes its next request just as a phase begins.
  drain.begin();
  during.get('/fast');
  await during.until(() => during.ended(), 'the answer and close');
  expect(answers(during.text())).toHaveLength(2);
  expect(answers(during.text())[1]).toMatch(/^HTTP\/1\.1 200[\s\S]*connection: close/i);
  const stopped = drain.close(60_000);
  after.get('/fast');
  await after.until(() => after.ended(), 'the refusal and close');
  expect(answers(after.text())).toHaveLength(2);
  expect(answers(after.text())[1]).toMatch(/^HTTP\/1\.1 503[\s\S]*retry-after: 1/i);
  await stopped;
});

it('answers a request that arrives in the linger however long it takes, never cut by the linger', async () => {
  const c = client();
  await c.opened;
  c.get('/fast');
  await c.until(() => answers(c.text()).length === 1, 'the first answer');
  drain.begin();
  c.get('/slow');
  await c.until(() => held.length === 1, 'the slow request to arrive');
  // Past the linger with no byte on the wire: the request keeps its connection.
  await new Promise((r) => setTimeout(r, IDLE_LINGER_MS + 500));
  expect(c.ended()).toBe(false);
  held.shift()!();
  await c.until(() => c.ended(), 'the answer and close');
  expect(answers(c.text())[1]).toMatch(/^HTTP\/1\.1 200[\s\S]*connection: close[\s\S]*slow ok$/i);
});

it('ends a connection whose answer began before the signal once that answer is complete', async () => {
  const c = client();
  await c.opened;
  c.get('/stream');
  await c.until(() => c.text().includes('part;'), 'the head and first part');
  expect(c.text()).toMatch(/connection: keep-alive/i);
  drain.begin();
  held.shift()!();
  await c.until(() => c.ended(), 'the connection to close after the stream');
  expect(c.text()).toMatch(/part;/);
  expect(c.text()).toMatch(/end\r\n/);
});

it('refuses a request on an old connection after the drain with 503 and Retry-After', async () => {
  const c = client();
  await c.opened;
  // Half a request head before the signal: the connection is not idle, so it stays open.
  c.send('GET /fast HTTP/1.1\r\n');
  await new Promise((r) => setTimeout(r, 50));
  const stopped = drain.close(60_000);
  expect(drain.phase).toBe('closed');
  c.send('Host: x\r\n\r\n');
  await c.until(() => c.ended(), 'the refusal and close');
  const [head, body] = c.text().split('\r\n\r\n');
  expect(head).toMatch(/^HTTP\/1\.1 503/);
  expect(head).toMatch(/retry-after: 1/i);
  expect(head).toMatch(/connection: close/i);
  expect(head).toMatch(/content-type: application\/problem\+json/i);
  expect(JSON.parse(body!)).toMatchObject({ status: 503, error: 'shutting_down' });
  await stopped;
});

it('stops when the longest request in flight is answered, not after the grace period', async () => {
  const c = client();
  await c.opened;
  c.get('/slow');
  await c.until(() => held.length === 1, 'the slow request to arrive');
  let done = false;
  const stopped = drain.close(600_000).then(() => (done = true));
  // No new connection is accepted.
  const refused = await new Promise<boolean>((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('error', () => resolve(true));
    s.once('connect', () => {
      s.destroy();
      resolve(false);
    });
  });
  expect(refused).toBe(true);
  await new Promise((r) => setTimeout(r, 100));
  expect(done).toBe(false);
  held.shift()!();
  await stopped;
  await c.until(() => c.ended(), 'the answer and close');
  expect(c.text()).toMatch(/^HTTP\/1\.1 200[\s\S]*connection: close[\s\S]*slow ok$/i);
});

it('cuts a request still running when the grace period ends', async () => {
  const c = client();
  await c.opened;
  c.get('/slow');
  await c.until(() => held.length === 1, 'the slow request to arrive');
  await drain.close(200);
  await c.until(() => c.ended(), 'the cut');
  expect(c.text()).toBe('');
});
