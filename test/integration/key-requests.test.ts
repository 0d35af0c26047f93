// Each Idempotency-Key's request log over real HTTP: the first answer, the replays, a reuse
// refused, a request that attached to the run under way, each with its X-Request-Id, in order;
// the log kept to its first 50 with the tally counting all (two writers at once included); its
// failure paths; and housekeeping removing a log only once its key is gone and quiet.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendKeyRequests, expireKeyRequests, keyRequests, type KeyRequest } from '../../src/db/queries/key-requests';
import { jsonCaller, postUpload } from '../helpers/http';
import { eventually } from '../helpers/inspect';
import { startStackOnStore, type TestStack } from '../helpers/stack';

describe.each(['local', 's3'] as const)('the key request log on the %s store', (kind) => {
  let stack: TestStack;
  let tenant: { tenantId: string; apiKey: string };
  beforeAll(async () => {
    stack = await startStackOnStore(kind, `key_requests_${kind}`);
    tenant = await stack.createTenant('key-requests');
  });
  afterAll(() => stack?.stop());

  const call = jsonCaller(() => ({ base: stack.url, apiKey: tenant.apiKey }));
  const seen = (key: string, total: number) =>
    eventually(async () => {
      const r = await call('GET', `/v1/idempotency-keys/${encodeURIComponent(key)}/requests`);
      return r.status === 200 && r.json.total === total ? r.json : undefined;
    }, 30_000);

  it('lists the first answer, each replay and a reuse refused, in order, each with its request id', async () => {
    const key = `log-${randomUUID()}`;
    const body = Buffer.from('the same file each time');
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await postUpload(stack.url, { apiKey: tenant.apiKey, key, body }));
    answers.push(await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: Buffer.from('another file') }));
    expect(answers.map((a) => a.status)).toEqual([201, 201, 201, 422]);
    const log = await seen(key, 4);
    expect(log.items.map((r: { n: number; outcome: string; status: number }) => [r.n, r.outcome, r.status])).toEqual([
      [1, 'created', 201],
      [2, 'replayed', 201],
      [3, 'replayed', 201],
      [4, 'reuse', 422],
    ]);
    expect(log.items.map((r: { requestId: string }) => r.requestId)).toEqual(answers.map((a) => a.headers.get('x-request-id')));
    expect(log.items[0]).toMatchObject({ method: 'POST', route: '/v1/uploads' });
  });

  it('lists a request that attached to the run under way (202, then the answer)', async () => {
    const key = `log-wait-${randomUUID()}`;
    // Prefer: wait=0 answers 202 while the run commits; the second request gets the answer.
    const first = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: Buffer.from('x'), prefer: 'wait=0' });
    const second = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: Buffer.from('x') });
    expect(second.status).toBe(201);
    const log = await seen(key, 2);
    expect(first.status).toBe(202);
    expect(log.items.map((r: { outcome: string; status: number }) => [r.outcome, r.status])).toEqual([
      ['processing', 202],
      [expect.stringMatching(/^(created|replayed)$/), 201],
    ]);
  });

  it('answers 404 for a key it has seen nothing of, 400 for a key that cannot be one, and 403 to an upload token', async () => {
    expect((await call('GET', `/v1/idempotency-keys/${randomUUID()}/requests`)).json.error).toBe('not_found');
    const bad = await call('GET', `/v1/idempotency-keys/${'x'.repeat(300)}/requests`);
    expect([bad.status, bad.json.error]).toEqual([400, 'idempotency_key_invalid']);
    const minted = await call('POST', '/v1/upload-tokens', { expiresInSeconds: 600 }, randomUUID());
    expect(minted.status).toBe(201);
    const asToken = await fetch(`${stack.url}/v1/idempotency-keys/any/requests`, {
      headers: { authorization: `Bearer ${minted.json.token}` },
    });
    expect(asToken.status).toBe(403);
  });

  it('keeps the first 50 of a key in order and counts them all, two writers at once included', async () => {
    const { pool } = stack.runtime;
    const key = `log-cap-${randomUUID()}`;
    const request = (i: number): KeyRequest => ({
      tenantId: tenant.tenantId,
      idempotencyKey: key,
      at: new Date(Date.UTC(2026, 11, 7, 0, 0, 0, i)),
      requestId: `req-${String(i).padStart(3, '0')}`,
      method: 'POST',
      route: '/v1/uploads',
      status: 201,
      outcome: i === 0 ? 'created' : 'replayed',
    });
    await appendKeyRequests(pool, [0, 1, 2].map(request), 50);
    // Two processes' batches at once: each number is taken once.
    await Promise.all([
      appendKeyRequests(
        pool,
        Array.from({ length: 30 }, (_, i) => request(3 + i)),
        50,
      ),
      appendKeyRequests(
        pool,
        Array.from({ length: 30 }, (_, i) => request(33 + i)),
        50,
      ),
    ]);
    const log = await keyRequests(pool, tenant.tenantId, key);
    expect(log.total).toBe(63);
    expect(log.items.map((r) => Number(r.n))).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    expect(log.items.slice(0, 3).map((r) => r.request_id)).toEqual(['req-000', 'req-001', 'req-002']);
    expect(new Set(log.items.map((r) => r.request_id)).size).toBe(50);
    const api = await call('GET', `/v1/idempotency-keys/${key}/requests`);
    expect([api.json.total, api.json.items.length]).toEqual([63, 50]);
  });

  it('housekeeping removes a log once its key has no row and has been quiet; a live key keeps its log', async () => {
    const { pool } = stack.runtime;
    const committed = `log-kept-${randomUUID()}`;
    expect((await postUpload(stack.url, { apiKey: tenant.apiKey, key: committed, body: Buffer.from('kept') })).status).toBe(201);
    await seen(committed, 1);
    const orphan = `log-orphan-${randomUUID()}`;
    await appendKeyRequests(
      pool,
      [
        {
          tenantId: tenant.tenantId,
          idempotencyKey: orphan,
          at: new Date(),
          requestId: 'r',
          method: 'POST',
          route: '/v1/uploads',
          status: 503,
          outcome: 'unavailable',
        },
      ],
      50,
    );
    await pool.query(
      `UPDATE key_request_tallies SET last_at = now() - interval '2 days' WHERE tenant_id = $1 AND idempotency_key = ANY($2)`,
      [tenant.tenantId, [committed, orphan]],
    );
    expect(await expireKeyRequests(pool, 86_400)).toBeGreaterThanOrEqual(1);
    expect((await keyRequests(pool, tenant.tenantId, orphan)).total).toBe(0);
    expect(
      (
        await pool.query('SELECT count(*)::int AS n FROM key_requests WHERE tenant_id = $1 AND idempotency_key = $2', [
          tenant.tenantId,
          orphan,
        ])
      ).rows[0].n,
    ).toBe(0);
    expect((await keyRequests(pool, tenant.tenantId, committed)).total).toBe(1);
  });
});
