// Every bad request gets the right status and a problem+json body, and stores nothing.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../helpers/stack';
import { postUpload, rawRequest, sha256 } from '../helpers/http';
import { rowsForKey, totals } from '../helpers/inspect';

const MAX = 64 * 1024;
let stack: TestStack;
let tenant: { tenantId: string; apiKey: string };
let before: Awaited<ReturnType<typeof totals>>;

beforeAll(async () => {
  stack = await startTestStack('bad', { env: { MAX_UPLOAD_BYTES: String(MAX) } });
  tenant = await stack.createTenant();
});
afterAll(() => stack?.stop());
async function settledTotals() {
  // Two equal readings 250 ms apart: no clean-up from an earlier request is still running.
  let last = await totals(stack.runtime.pool, stack.s3);
  for (let i = 0; i < 40; i++) {
    await new Promise((r) => setTimeout(r, 250));
    const now = await totals(stack.runtime.pool, stack.s3);
    if (JSON.stringify(now) === JSON.stringify(last)) return now;
    last = now;
  }
  return last;
}

beforeEach(async () => {
  before = await settledTotals();
});

async function expectNothingStored() {
  expect(await settledTotals()).toEqual(before);
}

function expectProblem(
  res: { status: number; headers: Headers | Record<string, string>; json?: any; body?: string },
  status: number,
  error: string,
) {
  expect(res.status).toBe(status);
  const ct = res.headers instanceof Headers ? res.headers.get('content-type') : res.headers['content-type'];
  expect(ct).toBe('application/problem+json');
  const json = res.json ?? JSON.parse(res.body!);
  expect(json).toMatchObject({
    status,
    error,
    type: expect.stringContaining('problems/'),
    title: expect.any(String),
    detail: expect.any(String),
    message: expect.any(String),
  });
}

const key = () => `bad-${randomUUID()}`;
const file = Buffer.from('some file bytes');

function rawHead(lines: string[]): string {
  return `POST /v1/uploads HTTP/1.1\nHost: 127.0.0.1\nAuthorization: Bearer ${tenant.apiKey}\n${lines.join('\n')}\n\n`;
}

describe('Idempotency-Key', () => {
  it('missing → 400 idempotency_key_required', async () => {
    expectProblem(await postUpload(stack.url, { apiKey: tenant.apiKey, body: file }), 400, 'idempotency_key_required');
    await expectNothingStored();
  });

  it.each([
    ['empty', ''],
    ['15 characters', 'a'.repeat(15)],
    ['256 characters', 'a'.repeat(256)],
    ['a comma outside quotes', 'abcdefghijklmnop,qrstuvwxyz'],
    ['a space', 'abcdefgh ijklmnopq'],
    ['a tab (control character)', 'abcdefgh\tijklmnopq'],
    ['an unterminated quote', '"abcdefghijklmnopq'],
    ['a quoted value with parameters', '"abcdefghijklmnopq";a=1'],
  ])('%s → 400 idempotency_key_invalid', async (_name, value) => {
    const res = await rawRequest(stack.url, rawHead([`Idempotency-Key: ${value}`, `Content-Length: ${file.length}`]), file);
    expectProblem(res!, 400, 'idempotency_key_invalid');
    await expectNothingStored();
  });

  it('two Idempotency-Key headers → 400 idempotency_key_invalid', async () => {
    const res = await rawRequest(
      stack.url,
      rawHead([`Idempotency-Key: ${key()}`, `Idempotency-Key: ${key()}`, `Content-Length: ${file.length}`]),
      file,
    );
    expectProblem(res!, 400, 'idempotency_key_invalid');
    await expectNothingStored();
  });

  it('a raw control character is refused by the parser, still as problem+json', async () => {
    const res = await rawRequest(stack.url, rawHead([`Idempotency-Key: abcdefgh\x01ijklmnopq`, `Content-Length: ${file.length}`]), file);
    expectProblem(res!, 400, 'malformed_request');
    await expectNothingStored();
  });

  it('accepts exactly 16 and 255 characters', async () => {
    for (const k of [`${randomUUID()}`.slice(0, 16), `${randomUUID()}`.padEnd(255, 'x')]) {
      const res = await postUpload(stack.url, { apiKey: tenant.apiKey, key: k, body: file });
      expect(res.status).toBe(201);
    }
  });
});

describe('body and length', () => {
  it('no Content-Length → 411', async () => {
    const res = await rawRequest(stack.url, rawHead([`Idempotency-Key: ${key()}`]));
    expectProblem(res!, 411, 'content_length_required');
    await expectNothingStored();
  });

  it('chunked body without Content-Length → 411', async () => {
    const res = await rawRequest(
      stack.url,
      rawHead([`Idempotency-Key: ${key()}`, 'Transfer-Encoding: chunked']),
      Buffer.from('5\r\nhello\r\n0\r\n\r\n'),
    );
    expectProblem(res!, 411, 'content_length_required');
    await expectNothingStored();
  });

  it('over the size limit → 413 without reading the body', async () => {
    const res = await rawRequest(stack.url, rawHead([`Idempotency-Key: ${key()}`, `Content-Length: ${MAX + 1}`]));
    expectProblem(res!, 413, 'payload_too_large');
    await expectNothingStored();
  });

  it('body shorter than Content-Length (client stops sending) → 400 body_incomplete', async () => {
    const res = await rawRequest(stack.url, rawHead([`Idempotency-Key: ${key()}`, `Content-Length: ${file.length + 10}`]), file, {
      halfClose: true,
    });
    expectProblem(res!, 400, 'body_incomplete');
    await expectNothingStored();
  });

  it('a complete request whose client then closes its sending side still gets its answer', async () => {
    const k = key();
    const res = await rawRequest(
      stack.url,
      rawHead([`Idempotency-Key: ${k}`, `Content-Length: ${file.length}`, `X-File-Sha256: ${sha256(file)}`]),
      file,
      { halfClose: true },
    );
    expect(res?.status, res?.body).toBe(201);
    expect((await rowsForKey(stack.runtime.pool, tenant.tenantId, k)).uploads).toHaveLength(1);
  });

  it('body longer than Content-Length → the declared bytes fail their checksum, 400', async () => {
    const long = Buffer.concat([file, Buffer.from('trailing bytes beyond the declared length')]);
    const res = await rawRequest(
      stack.url,
      rawHead([`Idempotency-Key: ${key()}`, `Content-Length: ${file.length}`, `X-File-Sha256: ${sha256(long)}`]),
      long,
    );
    expectProblem(res!, 400, 'checksum_mismatch');
    await expectNothingStored();
  });
});

describe('X-File-Sha256', () => {
  it('wrong hash → 400 checksum_mismatch, nothing recorded, and the key stays usable', async () => {
    const k = key();
    const wrong = await postUpload(stack.url, { apiKey: tenant.apiKey, key: k, body: file, sha: sha256('something else') });
    expectProblem(wrong, 400, 'checksum_mismatch');
    await expectNothingStored();
    const right = await postUpload(stack.url, { apiKey: tenant.apiKey, key: k, body: file });
    expect(right.status).toBe(201);
  });

  it.each(['abc', 'z'.repeat(64), 'a'.repeat(63), 'a'.repeat(65)])('malformed %s → 400 checksum_invalid', async (sha) => {
    expectProblem(await postUpload(stack.url, { apiKey: tenant.apiKey, key: key(), body: file, sha }), 400, 'checksum_invalid');
    await expectNothingStored();
  });
});

describe('other headers', () => {
  it('an invalid Content-Type → 400 header_invalid', async () => {
    expectProblem(
      await postUpload(stack.url, { apiKey: tenant.apiKey, key: key(), body: file, contentType: 'not a type' }),
      400,
      'header_invalid',
    );
    await expectNothingStored();
  });

  it('a file name with a slash → 400 header_invalid', async () => {
    expectProblem(
      await postUpload(stack.url, { apiKey: tenant.apiKey, key: key(), body: file, fileName: '../etc/passwd' }),
      400,
      'header_invalid',
    );
    await expectNothingStored();
  });

  it('a non-numeric wait → 400 query_invalid', async () => {
    const res = await fetch(`${stack.url}/v1/uploads/${randomUUID()}?wait=soon`, { headers: { authorization: `Bearer ${tenant.apiKey}` } });
    expectProblem({ status: res.status, headers: res.headers, json: await res.json() }, 400, 'query_invalid');
  });
});

describe('auth', () => {
  it('no bearer token → 401 before anything else', async () => {
    expectProblem(await postUpload(stack.url, { body: file }), 401, 'unauthorized');
    await expectNothingStored();
  });

  it('wrong bearer token → 401', async () => {
    expectProblem(await postUpload(stack.url, { apiKey: 'onc_not-a-real-key-at-all', key: key(), body: file }), 401, 'unauthorized');
    await expectNothingStored();
  });

  it('an unknown upload id or route → 404 problem', async () => {
    const res = await fetch(`${stack.url}/v1/uploads/${randomUUID()}`, { headers: { authorization: `Bearer ${tenant.apiKey}` } });
    expectProblem({ status: res.status, headers: res.headers, json: await res.json() }, 404, 'not_found');
    const route = await fetch(`${stack.url}/v1/nope`, { headers: { authorization: `Bearer ${tenant.apiKey}` } });
    expectProblem({ status: route.status, headers: route.headers, json: await route.json() }, 404, 'not_found');
  });
});
