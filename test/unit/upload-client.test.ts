// The client's retry policy, with fake timers and a scripted fetch: same key on every
// attempt, final 4xx stop at once, jitter under the cap, Retry-After wins.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { backoffDelayMs, isRetryableStatus, nextDelayMs, parseRetryAfter } from '../../src/client/retry-policy';
import { GaveUpError, UploadClient } from '../../src/client/upload-client';
import type { PendingUpload } from '../../src/client/types';

function pending(): PendingUpload {
  return {
    id: 'p1',
    idempotencyKey: 'key-0123456789abcdef',
    sha256: 'a'.repeat(64),
    bytes: 3,
    contentType: 'text/plain',
    fileName: 'a.txt',
    source: 'mem',
    createdAt: new Date().toISOString(),
    attempts: 0,
  };
}

type Step = { status: number; headers?: Record<string, string>; body?: unknown } | Error;

function scriptedFetch(steps: Step[]) {
  const calls: { url: string; init: RequestInit }[] = [];
  const fn = vi.fn(async (url: string, init: RequestInit) => {
    calls.push({ url, init });
    const step = steps.shift();
    if (!step) throw new Error('no more steps');
    if (step instanceof Error) throw step;
    return new Response(step.body === undefined ? null : JSON.stringify(step.body), { status: step.status, headers: step.headers });
  });
  return { fn: fn as unknown as typeof fetch, calls };
}

function client(f: typeof fetch, extra: Partial<ConstructorParameters<typeof UploadClient>[0]> = {}) {
  return new UploadClient({
    baseUrl: 'http://oncely.test',
    token: 'tok',
    fetch: f,
    openBody: async () => 'abc',
    random: () => 0.5,
    ...extra,
  });
}

describe('retry policy', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('resends with the same key through network errors, 503 and 409 until 201', async () => {
    const { fn, calls } = scriptedFetch([
      new TypeError('fetch failed'),
      { status: 503 },
      { status: 409, headers: { 'retry-after': '2' } },
      { status: 201, body: { uploadId: 'u1' } },
    ]);
    const p = pending();
    const done = client(fn).send(p);
    await vi.runAllTimersAsync();
    const result = await done;
    expect(result).toMatchObject({ status: 201, body: { uploadId: 'u1' }, attempts: 4 });
    expect(calls).toHaveLength(4);
    expect(new Set(calls.map((c) => (c.init.headers as Record<string, string>)['idempotency-key']))).toEqual(new Set([p.idempotencyKey]));
    expect(p.attempts).toBe(4);
  });

  it.each([400, 401, 404, 411, 413, 415, 422])('stops at once on a final %i', async (status) => {
    const { fn, calls } = scriptedFetch([{ status, body: { error: 'x' } }]);
    const result = await client(fn).send(pending());
    expect(result.status).toBe(status);
    expect(calls).toHaveLength(1);
  });

  it('lets Retry-After win over its own backoff', async () => {
    const { fn, calls } = scriptedFetch([
      { status: 429, headers: { 'retry-after': '7' } },
      { status: 201, body: {} },
    ]);
    const done = client(fn, { random: () => 0 }).send(pending());
    await vi.advanceTimersByTimeAsync(6_900);
    expect(calls).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(200);
    expect(calls).toHaveLength(2);
    expect((await done).status).toBe(201);
  });

  it('polls the key after a 202 until the answer is stored', async () => {
    const { fn, calls } = scriptedFetch([
      { status: 202, headers: { 'retry-after': '1' } },
      { status: 200, headers: { 'retry-after': '1' }, body: { state: 'processing' } },
      { status: 200, body: { state: 'completed', status: 201, response: { uploadId: 'u9' } } },
    ]);
    const done = client(fn).send(pending());
    await vi.runAllTimersAsync();
    expect(await done).toMatchObject({ status: 201, body: { uploadId: 'u9' }, replayed: true });
    expect(calls[1]!.url).toBe('http://oncely.test/v1/idempotency-keys/key-0123456789abcdef');
  });

  it('gives up after maxAttempts, and stops when aborted', async () => {
    const { fn } = scriptedFetch([{ status: 503 }, { status: 503 }, { status: 503 }]);
    const done = client(fn, { maxAttempts: 3 }).send(pending());
    const check = expect(done).rejects.toBeInstanceOf(GaveUpError);
    await vi.runAllTimersAsync();
    await check;

    const ac = new AbortController();
    const slow = scriptedFetch([{ status: 503 }, { status: 201 }]);
    const aborted = client(slow.fn).send(pending(), { signal: ac.signal });
    const rejects = expect(aborted).rejects.toBeDefined();
    await vi.advanceTimersByTimeAsync(1);
    ac.abort(new Error('user cancelled'));
    await rejects;
    expect(slow.calls).toHaveLength(1);
  });
});

describe('backoff', () => {
  it('keeps full jitter under min(cap, base·2^n)', () => {
    for (let attempt = 0; attempt < 40; attempt++) {
      for (const r of [0, 0.25, 0.5, 0.999999]) {
        const d = backoffDelayMs(attempt, { baseMs: 500, capMs: 30_000 }, () => r);
        expect(d).toBeGreaterThanOrEqual(0);
        expect(d).toBeLessThan(Math.min(30_000, 500 * 2 ** attempt));
      }
    }
  });

  it('parses Retry-After in both forms and classifies statuses', () => {
    expect(parseRetryAfter('3')).toBe(3000);
    expect(parseRetryAfter(new Date(Date.now() + 5000).toUTCString())).toBeGreaterThan(3000);
    expect(parseRetryAfter('soon')).toBeUndefined();
    expect(nextDelayMs(10, '1')).toBe(1000);
    expect([408, 409, 425, 429, 500, 502, 503, 504].every(isRetryableStatus)).toBe(true);
    expect([400, 401, 403, 404, 411, 413, 415, 422, 501].some(isRetryableStatus)).toBe(false);
  });
});
