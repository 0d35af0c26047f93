// Answers given before the request body was read: a 413 for a JSON body that is too large
// (chunked, no length), an upload past MAX_UPLOAD_BYTES, a tus PATCH past Upload-Length.
// The client here writes its whole body before it reads anything; it still reads the
// problem, because the server closes only after a lingering drain (src/http/lingering-close.ts).
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeAllThenRead } from '../helpers/http';
import { startTestStack, type TestStack } from '../helpers/stack';

const MiB = 1024 * 1024;
let stack: TestStack;
let apiKey: string;

beforeAll(async () => {
  stack = await startTestStack('early_answers', { env: { MAX_UPLOAD_BYTES: String(MiB) } });
  ({ apiKey } = await stack.createTenant('early'));
});
afterAll(async () => {
  await stack?.stop();
});

function expectTooLarge(r: Awaited<ReturnType<typeof writeAllThenRead>>, bodyBytes: number) {
  expect(r.written, 'the client could write its whole body').toBe(bodyBytes);
  expect(r.response?.status).toBe(413);
  expect(r.response?.headers['content-type']).toBe('application/problem+json');
  expect(r.response?.headers.connection).toBe('close');
  expect(JSON.parse(r.response!.body)).toMatchObject({ status: 413, error: 'payload_too_large' });
}

describe('a client that writes everything before reading gets its 413', () => {
  it('a 256 MiB chunked JSON body to POST /v1/api-keys', async () => {
    const r = await writeAllThenRead(
      stack.url,
      `POST /v1/api-keys HTTP/1.1\nHost: x\nAuthorization: Bearer ${apiKey}\nContent-Type: application/json\nTransfer-Encoding: chunked\n\n`,
      Buffer.alloc(MiB, 0x20),
      256,
    );
    expectTooLarge(r, 256 * MiB);
    // Nothing was made: the tenant still has only its first key.
    const keys = (await (await fetch(`${stack.url}/v1/api-keys`, { headers: { authorization: `Bearer ${apiKey}` } })).json()) as {
      data: unknown[];
    };
    expect(keys.data).toHaveLength(1);
  });

  it('a 64 MiB upload past MAX_UPLOAD_BYTES (1 MiB), refused from its Content-Length; the key stays free', async () => {
    const key = `early-${randomUUID()}`;
    const r = await writeAllThenRead(
      stack.url,
      `POST /v1/uploads HTTP/1.1\nHost: x\nAuthorization: Bearer ${apiKey}\nIdempotency-Key: ${key}\nContent-Type: application/octet-stream\nContent-Length: ${64 * MiB}\n\n`,
      Buffer.alloc(MiB, 1),
      64,
    );
    expectTooLarge(r, 64 * MiB);
    const state = await fetch(`${stack.url}/v1/idempotency-keys/${key}`, { headers: { authorization: `Bearer ${apiKey}` } });
    expect(state.status).toBe(404);
  });

  it('a 32 MiB chunked tus PATCH past its Upload-Length; nothing past the length is kept and nothing commits', async () => {
    const auth = { authorization: `Bearer ${apiKey}`, 'tus-resumable': '1.0.0' };
    const key = `early-tus-${randomUUID()}`;
    const created = await fetch(`${stack.url}/v1/tus`, {
      method: 'POST',
      headers: { ...auth, 'upload-length': '1000', 'idempotency-key': key },
    });
    expect(created.status).toBe(201);
    const location = created.headers.get('location')!;
    const r = await writeAllThenRead(
      stack.url,
      `PATCH ${location} HTTP/1.1\nHost: x\nAuthorization: Bearer ${apiKey}\nTus-Resumable: 1.0.0\nUpload-Offset: 0\nContent-Type: application/offset+octet-stream\nTransfer-Encoding: chunked\n\n`,
      Buffer.alloc(MiB, 2),
      32,
    );
    expectTooLarge(r, 32 * MiB);
    // The bytes within Upload-Length were stored as the session's part before the excess
    // arrived; the excess was not, and the refused PATCH did not complete the session.
    const head = await fetch(`${stack.url}${location}`, { method: 'HEAD', headers: auth });
    expect(head.headers.get('upload-offset')).toBe('1000');
    expect(head.headers.get('upload-length')).toBe('1000');
    const state = (await (
      await fetch(`${stack.url}/v1/idempotency-keys/${key}`, { headers: { authorization: `Bearer ${apiKey}` } })
    ).json()) as { state: string };
    expect(state.state).toBe('processing');
  });

  it('after a 413 the server keeps draining a client that still sends, and drops one that goes quiet past the idle bound (5 s)', async () => {
    const { hostname, port } = new URL(stack.url);
    // Half-open allowed: the client keeps its side open after the server's FIN, as a client still uploading would.
    const socket = net.connect({ port: Number(port), host: hostname, allowHalfOpen: true });
    let answer = '';
    let failed = false;
    socket.on('data', (d: Buffer) => (answer += d.toString('latin1')));
    socket.on('error', () => (failed = true));
    socket.on('close', () => (failed = true));
    socket.write(
      `POST /v1/api-keys HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${apiKey}\r\nContent-Type: application/json\r\nContent-Length: ${MiB}\r\n\r\n`,
    );
    socket.write(Buffer.alloc(128 * 1024, 0x20));
    await expect.poll(() => answer.includes('payload_too_large'), { timeout: 10_000 }).toBe(true);
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(answer.toLowerCase()).toContain('connection: close');
    // Still lingering a second later: more body is taken without a reset.
    await new Promise((r) => setTimeout(r, 1_000));
    socket.write(Buffer.alloc(16 * 1024, 0x20));
    await new Promise((r) => setTimeout(r, 1_000));
    expect(failed).toBe(false);
    // Quiet past the idle bound: the server has closed; writing now meets a reset.
    await new Promise((r) => setTimeout(r, 7_000));
    const poke = setInterval(() => socket.write(Buffer.alloc(1024, 0x20)), 200);
    try {
      await expect.poll(() => failed, { timeout: 5_000 }).toBe(true);
    } finally {
      clearInterval(poke);
      socket.destroy();
    }
  }, 30_000);

  it('a small body refused early keeps its connection (it is drained, not closed)', async () => {
    const r = await writeAllThenRead(
      stack.url,
      `POST /v1/uploads HTTP/1.1\nHost: x\nAuthorization: Bearer ${apiKey}\nContent-Type: text/plain\nContent-Length: 10\n\n`,
      Buffer.from('0123456789'),
      1,
    );
    expect(r.response?.status).toBe(400);
    expect(JSON.parse(r.response!.body).error).toBe('idempotency_key_required');
    expect(r.response?.headers.connection).not.toBe('close');
  });
});
