// Retention on the real S3 server and on the embedded store: an upload's own expiresAt,
// sent on every arrival mode, and a tenant's retentionDays end in the same deletion
// workflow, started once by the expire-uploads Schedule (every second here).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant } from '../../src/tenants';
import { postUpload, sha256 } from '../helpers/http';
import { eventually } from '../helpers/inspect';
import { startStackOnStore, type TestStack } from '../helpers/stack';

const ADMIN = 'admin-token-for-the-retention-test-0123456789';
const b64 = (s: string) => Buffer.from(s).toString('base64');

describe.each(['s3', 'local'] as const)('retention on the %s store', (kind) => {
  let stack: TestStack;
  let tenant: { tenantId: string; apiKey: string };
  beforeAll(async () => {
    stack = await startStackOnStore(kind, `retention_${kind}`, { env: { RETENTION_SWEEP_SECONDS: '1', ADMIN_TOKEN: ADMIN } });
    tenant = await createTenant(stack.runtime.pool, 'retention');
  });
  afterAll(() => stack?.stop());

  const auth = () => ({ authorization: `Bearer ${tenant.apiKey}` });
  const detail = async (id: string) => (await (await fetch(`${stack.url}/v1/uploads/${id}`, { headers: auth() })).json()) as any;
  const inSeconds = (s: number) => new Date(Date.now() + s * 1000).toISOString();
  const erased = (id: string) => eventually(async () => (await detail(id)).erasedAt !== null, 60_000);

  it('an upload whose expiresAt comes is erased once, by one deletion run', async () => {
    const key = `expiring-${randomUUID()}`;
    const expiresAt = inSeconds(2);
    const res = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key,
      body: Buffer.from('short-lived'),
      headers: { 'x-expires-at': expiresAt },
    });
    expect(res.status).toBe(201);
    const id = res.json.uploadId as string;
    expect((await detail(id)).expiresAt).toBe(expiresAt);
    await erased(id);
    const d = await detail(id);
    expect(d.status).toBe('deleted');
    expect(Date.parse(d.deletedAt)).toBeGreaterThanOrEqual(Date.parse(expiresAt));
    expect((await fetch(`${stack.url}/v1/uploads/${id}/content`, { headers: auth() })).status).toBe(410);
    const runs = await eventually(async () => {
      const found: string[] = [];
      for await (const w of stack.temporal.workflow.list({ query: `WorkflowId = 'delete/${id}'` })) found.push(w.runId);
      return found.length > 0 ? found : undefined;
    }, 30_000);
    expect(runs).toHaveLength(1);
    const started = (await stack.history(`delete/${id}`)).events?.[0];
    const input = JSON.parse(Buffer.from(started!.workflowExecutionStartedEventAttributes!.input!.payloads![0]!.data!).toString());
    expect(input).toMatchObject({ uploadId: id, reason: 'retention' });
    // Two more sweeps later: still one run.
    const sweeps = stack.temporal.schedule.getHandle(`housekeeping/${stack.config.TASK_QUEUE_UPLOADS}/expire-uploads`);
    const taken = (await sweeps.describe()).info.numActionsTaken;
    await eventually(async () => (await sweeps.describe()).info.numActionsTaken >= taken + 2, 30_000);
    const again: string[] = [];
    for await (const w of stack.temporal.workflow.list({ query: `WorkflowId = 'delete/${id}'` })) again.push(w.runId);
    expect(again).toEqual(runs);
  }, 90_000);

  it('expiresAt is taken on every arrival mode, and refused when bad', async () => {
    const expiresAt = inSeconds(3600);
    // Form post.
    const form = new FormData();
    form.set('idempotencyKey', `form-${randomUUID()}`);
    form.set('expiresAt', expiresAt);
    form.set('file', new Blob(['form bytes']), 'f.txt');
    const posted = await fetch(`${stack.url}/v1/uploads`, { method: 'POST', headers: auth(), body: form });
    expect(posted.status).toBe(201);
    expect((await detail(((await posted.json()) as any).uploadId)).expiresAt).toBe(expiresAt);
    // tus: metadata.
    const tusHeaders = { ...auth(), 'tus-resumable': '1.0.0' };
    const created = await fetch(`${stack.url}/v1/tus`, {
      method: 'POST',
      headers: {
        ...tusHeaders,
        'upload-length': '5',
        'idempotency-key': `tus-${randomUUID()}`,
        'upload-metadata': `filename ${b64('t.txt')},expiresAt ${b64(expiresAt)}`,
      },
    });
    expect(created.status).toBe(201);
    const patched = await fetch(`${stack.url}${created.headers.get('location')}`, {
      method: 'PATCH',
      headers: { ...tusHeaders, 'upload-offset': '0', 'content-type': 'application/offset+octet-stream', prefer: 'wait=30' },
      body: 'hello',
    });
    expect(patched.status).toBe(204);
    const tusRow = await eventually(async () => {
      const r = await stack.runtime.pool.query('SELECT expires_at FROM uploads WHERE tenant_id = $1 AND file_name = $2', [
        tenant.tenantId,
        't.txt',
      ]);
      return r.rows[0];
    }, 30_000);
    expect(tusRow.expires_at.toISOString()).toBe(expiresAt);
    // Direct upload: the plan's body.
    const file = Buffer.from('direct bytes');
    const plan = await fetch(`${stack.url}/v1/direct-uploads`, {
      method: 'POST',
      headers: { ...auth(), 'idempotency-key': `direct-${randomUUID()}`, 'content-type': 'application/json' },
      body: JSON.stringify({ bytes: file.length, sha256: sha256(file), contentType: 'text/plain', expiresAt }),
    });
    expect(plan.status).toBe(201);
    const { id, upload } = (await plan.json()) as { id: string; upload: { url: string; headers: Record<string, string> } };
    const { 'content-length': _length, ...headers } = upload.headers;
    expect((await fetch(upload.url, { method: 'PUT', headers, body: file })).status).toBe(200);
    const completed = await fetch(`${stack.url}/v1/direct-uploads/${id}/complete`, { method: 'POST', headers: auth() });
    expect(completed.status).toBe(201);
    expect((await detail(((await completed.json()) as any).uploadId)).expiresAt).toBe(expiresAt);

    // Bad values: 400, nothing stored; another expiry under a used key is another request.
    for (const value of [new Date(Date.now() - 1000).toISOString(), 'tomorrow', '2027-01-01', '9999-01-01T00:00:00Z']) {
      const bad = await postUpload(stack.url, {
        apiKey: tenant.apiKey,
        key: `bad-${randomUUID()}`,
        body: Buffer.from('x'),
        headers: { 'x-expires-at': value },
      });
      expect(bad.status, value).toBe(400);
      expect(bad.json).toMatchObject({ error: 'header_invalid', detail: expect.stringMatching(/expiresAt/) });
    }
    const badPlan = await fetch(`${stack.url}/v1/direct-uploads`, {
      method: 'POST',
      headers: { ...auth(), 'idempotency-key': `direct-${randomUUID()}`, 'content-type': 'application/json' },
      body: JSON.stringify({ bytes: 1, sha256: sha256('x'), expiresAt: 'soon' }),
    });
    expect(badPlan.status).toBe(400);
    const key = `twice-${randomUUID()}`;
    expect(
      (await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: Buffer.from('x'), headers: { 'x-expires-at': expiresAt } })).status,
    ).toBe(201);
    const other = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key,
      body: Buffer.from('x'),
      headers: { 'x-expires-at': inSeconds(7200) },
    });
    expect(other.status).toBe(422);
  }, 90_000);

  it("a tenant's retentionDays erases its older uploads, stored before the setting too", async () => {
    const t = await createTenant(stack.runtime.pool, 'kept-30-days');
    const old = await postUpload(stack.url, { apiKey: t.apiKey, key: `old-${randomUUID()}`, body: Buffer.from('old') });
    const fresh = await postUpload(stack.url, { apiKey: t.apiKey, key: `fresh-${randomUUID()}`, body: Buffer.from('fresh') });
    await stack.runtime.pool.query("UPDATE uploads SET created_at = now() - interval '31 days' WHERE id = $1", [old.json.uploadId]);

    const admin = (id: string, body: unknown, token = ADMIN) =>
      fetch(`${stack.url}/admin/tenants/${id}`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    for (const [body, status] of [
      [{ retentionDays: 0 }, 400],
      [{ retentionDays: 1.5 }, 400],
      [{ retentionDays: '30' }, 400],
      [{ keep: 30 }, 400],
    ] as const) {
      expect((await admin(t.tenantId, body)).status, JSON.stringify(body)).toBe(status);
    }
    expect((await admin(randomUUID(), { retentionDays: 30 })).status).toBe(404);
    expect((await admin(t.tenantId, { retentionDays: 30 }, 'wrong-token-wrong-token-wrong-token')).status).toBe(401);
    const set = await admin(t.tenantId, { retentionDays: 30 });
    expect(set.status).toBe(200);
    expect(await set.json()).toMatchObject({ tenantId: t.tenantId, retentionDays: 30 });

    const tDetail = async (id: string) =>
      (await (await fetch(`${stack.url}/v1/uploads/${id}`, { headers: { authorization: `Bearer ${t.apiKey}` } })).json()) as any;
    await eventually(async () => (await tDetail(old.json.uploadId)).erasedAt !== null, 60_000);
    expect((await tDetail(fresh.json.uploadId)).status).not.toBe('deleted');
    expect((await admin(t.tenantId, { retentionDays: null })).status).toBe(200);
  }, 90_000);
});
