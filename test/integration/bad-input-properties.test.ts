// Property-based bad input (fast-check) over real HTTP: generated keys, lengths, hashes,
// content types, tokens, duplicated headers and lying Content-Lengths. Every bad request
// gets a 4xx problem+json (never a 5xx) and changes nothing; a slow body is cut off by
// the body timeout without tying up the server.
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../helpers/stack';
import { rawRequest, sha256 } from '../helpers/http';
import { totals } from '../helpers/inspect';

let stack: TestStack;
let tenant: { tenantId: string; apiKey: string };

beforeAll(async () => {
  stack = await startTestStack('props', { env: { MAX_UPLOAD_BYTES: String(1024 * 1024), BODY_TIMEOUT_SECONDS: '2' } });
  tenant = await stack.createTenant();
});
afterAll(() => stack?.stop());

const visible = fc.string({
  unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyzABCDEF0123456789-_.:'.split('')),
  minLength: 16,
  maxLength: 64,
});
const badKey = fc.oneof(
  fc.string({ maxLength: 15 }).filter((s) => !/[\r\n\0]/.test(s)),
  fc.string({ unit: 'grapheme-ascii', minLength: 256, maxLength: 300 }),
  visible.map((k) => `${k},${k}`),
  visible.map((k) => `${k.slice(0, 8)} ${k.slice(8)}`),
  visible.map((k) => `"${k}`),
  visible.map((k) => `"${k}";a=1`),
);

function head(lines: string[]): string {
  return `POST /v1/uploads HTTP/1.1\nHost: 127.0.0.1\n${lines.join('\n')}\n\n`;
}

function expect4xxProblem(res: Awaited<ReturnType<typeof rawRequest>>) {
  expect(res, 'an answer').toBeDefined();
  expect(res!.status).toBeGreaterThanOrEqual(400);
  expect(res!.status).toBeLessThan(500);
  expect(res!.headers['content-type']).toBe('application/problem+json');
  const body = JSON.parse(res!.body);
  expect(body.status).toBe(res!.status);
  expect(typeof body.error).toBe('string');
}

describe('bad requests never store anything and never 5xx', () => {
  it('keys, hashes, lengths, types and tokens', async () => {
    const before = await totals(stack.runtime.pool, stack.s3);
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          key: fc.option(badKey, { nil: undefined }),
          goodKey: visible,
          sha: fc.oneof(
            fc.constant(undefined),
            fc.string({ unit: fc.constantFrom(...'0123456789abcdef'.split('')), maxLength: 70 }).filter((h: string) => h.length !== 64),
            fc.constant('x'.repeat(64)),
          ),
          body: fc.uint8Array({ maxLength: 2048 }),
          lengthDelta: fc.integer({ min: -5, max: 0 }),
          contentType: fc.oneof(fc.constant('text/plain'), fc.constant('not a type'), fc.constant('image/png')),
          token: fc.oneof(
            fc.constant(tenant.apiKey),
            fc.constant('onc_wrong_but_well_formed_token_1'),
            fc.constant(''),
            fc.string({ maxLength: 20 }).filter((s) => !/[\r\n\0]/.test(s)),
          ),
          duplicateKey: fc.boolean(),
        }),
        async (g) => {
          const body = Buffer.from(g.body);
          const lines = [`Content-Type: ${g.contentType}`, `Content-Length: ${body.length + g.lengthDelta}`];
          if (g.token) lines.push(`Authorization: Bearer ${g.token}`);
          if (g.key !== undefined) lines.push(`Idempotency-Key: ${g.key}`);
          else lines.push(`Idempotency-Key: ${g.goodKey}-${randomUUID()}`);
          if (g.duplicateKey) lines.push(`Idempotency-Key: ${g.goodKey}`);
          // A wrong hash (or a body shorter than declared, sent with the hash of the full body).
          lines.push(`X-File-Sha256: ${g.sha ?? sha256(Buffer.concat([body, Buffer.from('!')]))}`);
          // lengthDelta < 0: the body is longer than Content-Length says (the rest is garbage).
          const res = await rawRequest(stack.url, head(lines), body);
          expect4xxProblem(res);
        },
      ),
      { numRuns: 60, seed: 20261129 },
    );
    expect(await totals(stack.runtime.pool, stack.s3)).toEqual(before);
  }, 120_000);

  it('a slowloris body is cut off by the body timeout while other requests are served', async () => {
    const before = await totals(stack.runtime.pool, stack.s3);
    const slow = rawRequest(
      stack.url,
      head([`Authorization: Bearer ${tenant.apiKey}`, `Idempotency-Key: slow-${randomUUID()}`, 'Content-Length: 100000']),
      Buffer.from('a little'),
      { timeoutMs: 20_000 },
    );
    // Meanwhile the server answers others.
    const health = await fetch(`${stack.url}/healthz`);
    expect(health.status).toBe(200);
    const res = await slow;
    if (res) {
      expect([400, 408]).toContain(res.status);
      expect(res.headers['content-type']).toBe('application/problem+json');
    }
    await new Promise((r) => setTimeout(r, 500));
    expect(await totals(stack.runtime.pool, stack.s3)).toEqual(before);
  });
});
