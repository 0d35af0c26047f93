// A pipeline's calls to the tenant, against real receivers on loopback: the validation hook
// asked before a byte is read (its refusal is the client's answer and stores nothing), and
// http.call steps — retried with one Idempotency-Key, 4xx rejecting the upload, async ones
// decided by a callback or by their deadline. Every call is signed with the pipeline's secret.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serverPort } from '../support/ports';
import { startTestStack, type TestStack } from '../helpers/stack';
import { getJson, postUpload, sha256 } from '../helpers/http';
import { eventually, listKeys, rowsForKey } from '../helpers/inspect';
import { png } from '../helpers/media';
import { WebhookReceiver } from '../support/webhook-receiver';
import { audit } from '../../src/audit';
import { keyStoragePrefix } from '../../src/temporal/ids';

let stack: TestStack;
let tenant: { tenantId: string; apiKey: string };
const receivers: WebhookReceiver[] = [];

beforeAll(async () => {
  stack = await startTestStack('calls');
  tenant = await stack.createTenant();
});
afterAll(async () => {
  await stack?.stop();
  for (const r of receivers) await r.stop();
});

const auth = () => ({ authorization: `Bearer ${tenant.apiKey}` });

async function receiver(): Promise<WebhookReceiver> {
  const r = await new WebhookReceiver().start();
  receivers.push(r);
  return r;
}

/** Declares a pipeline; the receiver checks signatures with its signing secret. */
async function declare(body: Record<string, unknown>, signer?: WebhookReceiver) {
  const res = await fetch(`${stack.url}/v1/pipelines`, {
    method: 'POST',
    headers: { ...auth(), 'content-type': 'application/json', 'idempotency-key': `decl-${randomUUID()}` },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as any;
  expect(res.status, JSON.stringify(json)).toBe(201);
  expect(json.signingSecret).toMatch(/^whsec_/);
  if (signer) signer.secret = json.signingSecret;
  return json;
}

async function settled(uploadId: string) {
  return eventually(async () => {
    const r = await getJson(`${stack.url}/v1/uploads/${uploadId}?wait=20`, tenant.apiKey);
    return r.json.status === 'processed' ? r.json : undefined;
  }, 90_000);
}

const nothingKept = async (key: string) => {
  const rows = await rowsForKey(stack.runtime.pool, tenant.tenantId, key);
  expect(rows.uploads).toEqual([]);
  const keys = await stack.runtime.pool.query('SELECT 1 FROM idempotency_keys WHERE tenant_id = $1 AND key = $2', [tenant.tenantId, key]);
  expect(keys.rowCount).toBe(0);
  const sessions = await stack.runtime.pool.query('SELECT 1 FROM resumable_sessions WHERE tenant_id = $1 AND idempotency_key = $2', [
    tenant.tenantId,
    key,
  ]);
  expect(sessions.rowCount).toBe(0);
};

describe('the validation hook', () => {
  let hook: WebhookReceiver;
  beforeAll(async () => {
    hook = await receiver();
    await declare({ name: 'checked', validate: { url: hook.url, timeoutSeconds: 3 }, steps: [] }, hook);
  });

  it('is asked before the body with what the request declares, signed, and a refusal changes nothing', async () => {
    const key = `val-${randomUUID()}`;
    const body = await png(20, 20);
    hook.script['upload.validate'] = [403, 400];
    hook.answerBody['upload.validate'] = { message: 'no pictures of cats' };
    const forbidden = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key,
      body,
      contentType: 'image/png',
      fileName: 'cat.png',
      pipeline: 'checked',
    });
    expect(forbidden.status).toBe(403);
    expect(forbidden.json).toMatchObject({ error: 'upload_forbidden', hookStatus: 403 });
    expect(forbidden.json.detail).toContain('no pictures of cats');
    const call = hook.received.at(-1)!;
    expect(call.verified).toBe(true);
    expect(call.json).toMatchObject({
      type: 'upload.validate',
      data: {
        idempotencyKey: key,
        pipeline: 'checked',
        fileName: 'cat.png',
        bytes: body.length,
        contentType: 'image/png',
        mode: 'upload',
        caller: { kind: 'key' },
      },
    });
    expect(call.idempotencyKey).toMatch(/^val_/);
    const refused = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key,
      body,
      contentType: 'image/png',
      pipeline: 'checked',
    });
    expect(refused.status).toBe(422);
    expect(refused.json).toMatchObject({ error: 'upload_refused', hookStatus: 400 });
    // The same upload is recognisable across calls, and nothing of it was kept.
    expect(new Set(hook.received.slice(-2).map((r) => r.idempotencyKey)).size).toBe(1);
    await nothingKept(key);
    // Not stored under the key: once the hook accepts, the key makes the upload.
    delete hook.answerBody['upload.validate'];
    const ok = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key,
      body,
      contentType: 'image/png',
      pipeline: 'checked',
    });
    expect(ok.status).toBe(201);
    // A replay is answered from the key: the hook is not asked again.
    const calls = hook.received.length;
    const again = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key,
      body,
      contentType: 'image/png',
      pipeline: 'checked',
    });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(hook.received.length).toBe(calls);
  });

  it('asks at tus creation and at a direct-upload plan, and a refusal there creates no session', async () => {
    hook.script['upload.validate'] = [403, 403];
    const b64 = (v: string) => Buffer.from(v).toString('base64');
    const tusKey = `val-tus-${randomUUID()}`;
    const tus = await fetch(`${stack.url}/v1/tus`, {
      method: 'POST',
      headers: {
        ...auth(),
        'tus-resumable': '1.0.0',
        'idempotency-key': tusKey,
        'upload-length': '5',
        'upload-metadata': `pipeline ${b64('checked')}`,
      },
    });
    expect(tus.status).toBe(403);
    expect(hook.received.at(-1)!.json.data).toMatchObject({ mode: 'tus', bytes: 5 });
    const directKey = `val-direct-${randomUUID()}`;
    const plan = await fetch(`${stack.url}/v1/direct-uploads`, {
      method: 'POST',
      headers: { ...auth(), 'idempotency-key': directKey, 'content-type': 'application/json' },
      body: JSON.stringify({ bytes: 3, sha256: sha256('abc'), pipeline: 'checked' }),
    });
    expect(plan.status).toBe(403);
    expect(hook.received.at(-1)!.json.data).toMatchObject({ mode: 'direct', bytes: 3 });
    await nothingKept(tusKey);
    await nothingKept(directKey);
  });

  it("asks once a form's file is in, and a refusal keeps neither the file nor the key", async () => {
    hook.script['upload.validate'] = [403];
    const key = `val-form-${randomUUID()}`;
    const form = new FormData();
    form.set('pipeline', 'checked');
    form.set('file', new Blob([Buffer.from('a form file')], { type: 'text/plain' }), 'note.txt');
    const res = await fetch(`${stack.url}/v1/uploads`, { method: 'POST', headers: { ...auth(), 'idempotency-key': key }, body: form });
    expect(res.status).toBe(403);
    expect(((await res.json()) as any).error).toBe('upload_forbidden');
    expect(hook.received.at(-1)!.json.data).toMatchObject({ mode: 'form', fileName: 'note.txt', bytes: 11, contentType: 'text/plain' });
    await nothingKept(key);
    // The staged file went with the refusal.
    await eventually(
      async () => ((await listKeys(stack.s3, keyStoragePrefix(tenant.tenantId, key))).length === 0 ? true : undefined),
      30_000,
    );
  });

  it('a hook that cannot be asked is 503 with Retry-After, and nothing is kept', async () => {
    const closed = await serverPort();
    const down = await receiver();
    await declare({ name: 'unreachable', validate: { url: `http://127.0.0.1:${closed}/hook`, timeoutSeconds: 2 }, steps: [] }, down);
    const key = `val-down-${randomUUID()}`;
    const res = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key,
      body: Buffer.from('x'),
      pipeline: 'unreachable',
    });
    expect(res.status).toBe(503);
    expect(res.json).toMatchObject({ error: 'validation_unavailable' });
    expect(res.headers.get('retry-after')).toBe('5');
    // A hook answering 500 is the same.
    hook.script['upload.validate'] = [500];
    const five = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: Buffer.from('x'), pipeline: 'checked' });
    expect(five.status).toBe(503);
    await nothingKept(key);
  });

  it('refuses a hook URL that is not http(s), and declares nothing', async () => {
    const res = await fetch(`${stack.url}/v1/pipelines`, {
      method: 'POST',
      headers: { ...auth(), 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'badurl', validate: { url: 'ftp://example.com/x' }, steps: [] }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error).toBe('body_invalid');
    expect((await getJson(`${stack.url}/v1/pipelines/badurl`, tenant.apiKey)).status).toBe(404);
  });
});

describe('http.call steps', () => {
  // One receiver per pipeline: each pipeline signs with its own secret.
  const apps: Record<'reviewed' | 'moderated' | 'hurried', WebhookReceiver> = {} as never;
  beforeAll(async () => {
    for (const name of ['reviewed', 'moderated', 'hurried'] as const) apps[name] = await receiver();
    await declare(
      {
        name: 'reviewed',
        steps: [
          { type: 'http.call', url: apps.reviewed.url },
          { type: 'image.variants', variants: [{ name: 'small', width: 10, format: 'png' }] },
        ],
      },
      apps.reviewed,
    );
    await declare({ name: 'moderated', steps: [{ type: 'http.call', url: apps.moderated.url, async: true }] }, apps.moderated);
    await declare(
      { name: 'hurried', steps: [{ type: 'http.call', url: apps.hurried.url, async: true, deadlineSeconds: 2 }] },
      apps.hurried,
    );
  });
  const callsFor = (uploadId: string) =>
    Object.values(apps).flatMap((a) => a.received.filter((r) => r.json.type === 'pipeline.step' && r.json.data.uploadId === uploadId));

  it('retries 500, 500, then 200: three calls with one Idempotency-Key, then the upload is available', async () => {
    apps.reviewed.script['pipeline.step'] = [500, 500, 200];
    const created = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key: `call-${randomUUID()}`,
      body: await png(30, 30),
      contentType: 'image/png',
      pipeline: 'reviewed',
    });
    expect(created.status).toBe(201);
    const detail = await settled(created.json.uploadId);
    const calls = callsFor(created.json.uploadId);
    expect(calls.map((c) => c.answered)).toEqual([500, 500, 200]);
    expect(new Set(calls.map((c) => c.idempotencyKey)).size).toBe(1);
    expect(calls.every((c) => c.verified)).toBe(true);
    expect(calls[0]!.json.data).toMatchObject({
      uploadId: created.json.uploadId,
      pipeline: { name: 'reviewed' },
      step: { index: 0, type: 'http.call' },
    });
    expect(detail).toMatchObject({ availability: 'available', processing: { status: 'ready' } });
    expect(detail.pipeline.steps.map((s: any) => `${s.type}:${s.status}`)).toEqual(['http.call:succeeded', 'image.variants:succeeded']);
  });

  it("a 4xx rejects the upload with the tenant's message: its bytes go and its key answers the rejection", async () => {
    apps.reviewed.script['pipeline.step'] = [422];
    apps.reviewed.answerBody['pipeline.step'] = { message: 'over the album limit' };
    const key = `call-${randomUUID()}`;
    const created = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key,
      body: await png(30, 30),
      contentType: 'image/png',
      pipeline: 'reviewed',
    });
    const detail = await settled(created.json.uploadId);
    delete apps.reviewed.answerBody['pipeline.step'];
    expect(detail.availability).toBe('rejected');
    expect(detail.rejectionReason).toBe('refused by the tenant (HTTP 422): over the album limit');
    expect(detail.renditions).toEqual([]);
    expect(await listKeys(stack.s3, created.json.storageKey)).toEqual([]);
    const again = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key,
      body: await png(30, 30),
      contentType: 'image/png',
      pipeline: 'reviewed',
    });
    expect(again.status).toBe(409);
  });

  it('an async step waits for the callback: accept makes the upload available; the same decision again is 200, another 409', async () => {
    apps.moderated.script['pipeline.step'] = [202];
    const created = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key: `async-${randomUUID()}`,
      body: Buffer.from('to review'),
      pipeline: 'moderated',
    });
    const uploadId = created.json.uploadId as string;
    await eventually(async () => (callsFor(uploadId).length ? true : undefined), 30_000);
    expect((await fetch(`${stack.url}/v1/uploads/${uploadId}/content`, { headers: auth() })).status).toBe(423);
    const decide = (outcome: string, step = 0) =>
      fetch(`${stack.url}/v1/uploads/${uploadId}/steps/${step}/complete`, {
        method: 'POST',
        headers: { ...auth(), 'content-type': 'application/json' },
        body: JSON.stringify({ outcome, message: 'looks fine', data: { reviewer: 'ana' } }),
      });
    expect((await decide('accept', 3)).status).toBe(409);
    expect((await decide('accept')).status).toBe(200);
    const detail = await settled(uploadId);
    expect(detail.availability).toBe('available');
    expect(detail.pipeline.steps).toMatchObject([{ type: 'http.call', status: 'succeeded', reason: 'looks fine' }]);
    expect((await decide('accept')).status).toBe(200);
    const contradicting = await decide('reject');
    expect(contradicting.status).toBe(409);
    expect(((await contradicting.json()) as any).error).toBe('step_not_waiting');
    expect(
      (
        await fetch(`${stack.url}/v1/uploads/${randomUUID()}/steps/0/complete`, {
          method: 'POST',
          headers: { ...auth(), 'content-type': 'application/json' },
          body: '{"outcome":"accept"}',
        })
      ).status,
    ).toBe(404);
    const bad = await fetch(`${stack.url}/v1/uploads/${uploadId}/steps/0/complete`, {
      method: 'POST',
      headers: { ...auth(), 'content-type': 'application/json' },
      body: '{"outcome":"maybe"}',
    });
    expect(bad.status).toBe(400);
  });

  it('an async step without a decision by its deadline rejects the upload (a gate fails closed)', async () => {
    apps.hurried.script['pipeline.step'] = [202];
    const created = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key: `late-${randomUUID()}`,
      body: Buffer.from('never reviewed'),
      pipeline: 'hurried',
    });
    const detail = await settled(created.json.uploadId);
    expect(detail.availability).toBe('rejected');
    expect(detail.rejectionReason).toBe('no decision within 2 s');
    const late = await fetch(`${stack.url}/v1/uploads/${created.json.uploadId}/steps/0/complete`, {
      method: 'POST',
      headers: { ...auth(), 'content-type': 'application/json' },
      body: '{"outcome":"accept"}',
    });
    expect(late.status).toBe(409);
    expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toEqual([]);
  });
});
