// HTTP helpers for tests: fetch for well-formed requests, a raw socket for the malformed
// ones fetch refuses to send (duplicate headers, lying Content-Length, cut-off bodies).
import { createHash } from 'node:crypto';
import net from 'node:net';

export const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

export interface UploadArgs {
  apiKey?: string;
  key?: string;
  body: Buffer;
  contentType?: string;
  sha?: string | null;
  fileName?: string;
  prefer?: string;
  /** Sent as X-Pipeline. */
  pipeline?: string;
  headers?: Record<string, string>;
}

export async function postUpload(baseUrl: string, a: UploadArgs): Promise<{ status: number; headers: Headers; text: string; json: any }> {
  const headers: Record<string, string> = { 'content-type': a.contentType ?? 'application/octet-stream', ...a.headers };
  if (a.apiKey) headers.authorization = `Bearer ${a.apiKey}`;
  if (a.key !== undefined) headers['idempotency-key'] = a.key;
  if (a.sha !== null) headers['x-file-sha256'] = a.sha ?? sha256(a.body);
  if (a.fileName) headers['x-file-name'] = a.fileName;
  if (a.prefer) headers.prefer = a.prefer;
  if (a.pipeline) headers['x-pipeline'] = a.pipeline;
  const res = await fetch(`${baseUrl}/v1/uploads`, { method: 'POST', headers, body: a.body });
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

export async function getJson(url: string, apiKey?: string): Promise<{ status: number; headers: Headers; json: any }> {
  const res = await fetch(url, { headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {} });
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: text ? JSON.parse(text) : undefined };
}

/**
 * A JSON request to the API as a tenant (`base` and `apiKey` read at each call, so they can
 * be set in a `beforeAll`): a body is sent as JSON, `key` as the Idempotency-Key.
 */
export function jsonCaller(at: () => { base: string; apiKey: string }) {
  return async (method: string, route: string, body?: unknown, key?: string) => {
    const { base, apiKey } = at();
    const res = await fetch(`${base}${route}`, {
      method,
      headers: {
        authorization: `Bearer ${apiKey}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...(key ? { 'idempotency-key': key } : {}),
      },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, text, json: text ? (JSON.parse(text) as any) : undefined };
  };
}

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * Sends `head` and `body` bytes as they are over a fresh socket. With `halfClose`, the
 * write side is closed after sending (a client that stops mid-body but still listens).
 * Resolves with the first response, or undefined when the server closes without one.
 */
export function rawRequest(
  baseUrl: string,
  head: string,
  body: Buffer = Buffer.alloc(0),
  opts: { halfClose?: boolean; timeoutMs?: number } = {},
): Promise<RawResponse | undefined> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname);
    let data = Buffer.alloc(0);
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error('raw request timed out'));
    }, opts.timeoutMs ?? 20_000);
    const finish = () => {
      clearTimeout(timer);
      resolve(parseResponse(data));
    };
    socket.on('data', (chunk) => {
      data = Buffer.concat([data, chunk]);
      const parsed = parseResponse(data);
      if (parsed && complete(data)) {
        socket.destroy();
        clearTimeout(timer);
        resolve(parsed);
      }
    });
    socket.on('end', finish);
    socket.on('close', finish);
    socket.on('error', () => {});
    socket.write(head.replace(/\n/g, '\r\n').replace(/\r\r/g, '\r'));
    if (body.length) socket.write(body);
    if (opts.halfClose) socket.end();
  });
}

function parseResponse(data: Buffer): RawResponse | undefined {
  const text = data.toString('latin1');
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const l of lines) {
    const i = l.indexOf(':');
    headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  let body = Buffer.from(text.slice(end + 4), 'latin1');
  // Only the first response: anything after its Content-Length belongs to a later one.
  const length = Number(headers['content-length'] ?? NaN);
  if (Number.isFinite(length)) body = body.subarray(0, length);
  return { status: Number(statusLine!.split(' ')[1]), headers, body: body.toString('utf8') };
}

function complete(data: Buffer): boolean {
  const r = parseResponse(data);
  if (!r) return false;
  const len = Number(r.headers['content-length'] ?? NaN);
  return Number.isFinite(len) && Buffer.byteLength(r.body) >= len;
}

/** A request whose bytes the test sends piece by piece (a slow client, a body cut in two). */
export interface OpenRequest {
  /** Writes bytes; resolves once the socket accepted them (backpressure). False once closed. */
  send(bytes: Buffer): Promise<boolean>;
  /** The first response, or undefined when the server closed without one. */
  response: Promise<RawResponse | undefined>;
  /** Whether a response (or the close) has arrived. */
  answered(): boolean;
  close(): void;
}

export function openRequest(baseUrl: string, head: string, opts: { timeoutMs?: number } = {}): OpenRequest {
  const { hostname, port } = new URL(baseUrl);
  const socket = net.connect(Number(port), hostname);
  let data = Buffer.alloc(0);
  let done = false;
  const response = new Promise<RawResponse | undefined>((resolve) => {
    const timer = setTimeout(() => socket.destroy(), opts.timeoutMs ?? 60_000);
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(parseResponse(data));
    };
    socket.on('data', (chunk) => {
      data = Buffer.concat([data, chunk]);
      if (complete(data)) finish();
    });
    socket.on('close', finish);
    socket.on('error', () => {});
  });
  socket.write(head.replace(/\n/g, '\r\n').replace(/\r\r/g, '\r'));
  return {
    response,
    answered: () => done,
    // A server that answered early stops reading: the write may never drain, so the
    // answer ends the wait too.
    send: (bytes) =>
      Promise.race([
        new Promise<boolean>((resolve) => {
          if (done || socket.destroyed) return resolve(false);
          socket.write(bytes, (err) => resolve(!err && !socket.destroyed));
        }),
        response.then(() => false),
      ]),
    close: () => socket.destroy(),
  };
}

/**
 * A client that writes its whole request before it reads a byte (as simple clients and
 * many HTTP libraries do): `chunks` bytes of `chunk` as the body, framed as chunked
 * transfer coding when the head says so. Resolves with the response read afterwards, or
 * undefined when the server closed without one the client could still read.
 */
export async function writeAllThenRead(
  baseUrl: string,
  head: string,
  chunk: Buffer,
  chunks: number,
  opts: { timeoutMs?: number } = {},
): Promise<{ response: RawResponse | undefined; written: number }> {
  const { hostname, port } = new URL(baseUrl);
  const socket = net.connect(Number(port), hostname);
  socket.on('error', () => {});
  socket.pause();
  const chunked = /transfer-encoding:\s*chunked/i.test(head);
  // Each write waits until the socket has handed its bytes on (backpressure), never reading.
  const write = (b: Buffer | string) => new Promise<boolean>((resolve) => void socket.write(b, (err) => resolve(!err)));
  let written = 0;
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
  if (await write(head.replace(/\n/g, '\r\n').replace(/\r\r/g, '\r'))) {
    for (let i = 0; i < chunks && Date.now() < deadline; i++) {
      const ok = chunked
        ? await write(Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]))
        : await write(chunk);
      if (!ok) break;
      written += chunk.length;
    }
    if (chunked && written === chunk.length * chunks) await write('0\r\n\r\n');
  }
  let data = Buffer.alloc(0);
  await new Promise<void>((resolve) => {
    const timer = setTimeout(() => resolve(), Math.max(1000, deadline - Date.now()));
    socket.on('data', (d: Buffer) => {
      data = Buffer.concat([data, d]);
      if (complete(data)) resolve();
    });
    socket.on('close', () => resolve());
    socket.resume();
    timer.unref();
  });
  socket.destroy();
  return { response: parseResponse(data), written };
}
