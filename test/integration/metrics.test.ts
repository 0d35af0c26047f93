// /metrics counters move for each outcome of POST /v1/uploads.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../helpers/stack';
import { postUpload, sha256 } from '../helpers/http';

let stack: TestStack;
let tenant: { tenantId: string; apiKey: string };

beforeAll(async () => {
  stack = await startTestStack('metrics');
  tenant = await stack.createTenant();
});
afterAll(() => stack?.stop());

async function scrape(): Promise<string> {
  const res = await fetch(`${stack.url}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/text\/plain/);
  return res.text();
}

function value(text: string, name: string, labels: Record<string, string> = {}): number {
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) total += Number(line.split(' ').at(-1));
  }
  return total;
}

it('counts each outcome, the bytes received and the latency of both paths', async () => {
  const before = await scrape();
  const key = `metrics-${randomUUID()}`;
  const file = Buffer.from('measured bytes');
  expect((await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: file })).status).toBe(201);
  expect((await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: file })).status).toBe(201);
  expect((await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: Buffer.from('other') })).status).toBe(422);
  expect(
    (await postUpload(stack.url, { apiKey: tenant.apiKey, key: `metrics-${randomUUID()}`, body: file, sha: sha256('x') })).status,
  ).toBe(400);
  expect(
    (await postUpload(stack.url, { apiKey: tenant.apiKey, key: `metrics-${randomUUID()}`, body: file, prefer: 'respond-async' })).status,
  ).toBe(202);
  expect((await postUpload(stack.url, { body: file })).status).toBe(401);
  const after = await scrape();

  const delta = (outcome: string) =>
    value(after, 'oncely_http_requests_total', { route: '/v1/uploads', outcome }) -
    value(before, 'oncely_http_requests_total', { route: '/v1/uploads', outcome });
  expect(delta('created')).toBe(1);
  expect(delta('replayed')).toBe(1);
  expect(delta('reuse')).toBe(1);
  expect(delta('processing')).toBe(1);
  expect(delta('rejected')).toBe(1); // the checksum mismatch
  // The missing token is refused by the auth middleware, before any route matched.
  expect(
    value(after, 'oncely_http_requests_total', { status: '401' }) - value(before, 'oncely_http_requests_total', { status: '401' }),
  ).toBe(1);
  expect(value(after, 'oncely_upload_bytes_received_total') - value(before, 'oncely_upload_bytes_received_total')).toBe(3 * file.length);
  expect(value(after, 'oncely_upload_request_seconds_count', { path: 'replay' })).toBeGreaterThanOrEqual(2);
  expect(value(after, 'oncely_upload_request_seconds_count', { path: 'upload' })).toBeGreaterThanOrEqual(1);
  expect(value(after, 'oncely_uploads_committed_total', { result: 'created' })).toBeGreaterThanOrEqual(1);
  expect(after).toContain('oncely_process_resident_memory_bytes');
});
