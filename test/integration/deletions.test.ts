// Deletion with erasure on the real S3 server (versitygw) and on the embedded store: one
// workflow per upload; the tombstone first (bytes answer 410), then renditions, the original
// (dedupe-shared bytes only with the last upload), the personal metadata; upload.deleted
// once; the original request's key answers 410 from then on. Bad requests change nothing.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { audit } from '../../src/audit';
import { eventId } from '../../src/downstream/events';
import { workflowIds } from '../../src/temporal/names';
import { commitUploadRecords, SharedObjectReleased } from '../../src/db/queries/records';
import { createTenant } from '../../src/tenants';
import { eventually, listKeys } from '../helpers/inspect';
import { postUpload } from '../helpers/http';
import { audio, png } from '../helpers/media';
import { startStackOnStore, type TestStack } from '../helpers/stack';
import { WebhookReceiver } from '../support/webhook-receiver';

interface Tenant {
  tenantId: string;
  apiKey: string;
}

describe.each(['s3', 'local'] as const)('deleting uploads on the %s store', (kind) => {
  let stack: TestStack;
  let receiver: WebhookReceiver;
  beforeAll(async () => {
    stack = await startStackOnStore(kind, `deletions_${kind}`);
    receiver = await new WebhookReceiver().start();
  });
  afterAll(async () => {
    await stack?.stop();
    await receiver?.stop();
  });

  const call = async (t: Tenant, method: string, pathname: string, o: { json?: unknown; headers?: Record<string, string> } = {}) => {
    const res = await fetch(`${stack.url}${pathname}`, {
      method,
      headers: {
        authorization: `Bearer ${t.apiKey}`,
        ...(o.json !== undefined ? { 'content-type': 'application/json' } : {}),
        ...o.headers,
      },
      body: o.json !== undefined ? JSON.stringify(o.json) : undefined,
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, json: text ? JSON.parse(text) : undefined };
  };

  async function tenantWithReceiver(dedupe: 'off' | 'sha256' = 'off'): Promise<Tenant> {
    const tenant = await createTenant(stack.runtime.pool, `deletions-${dedupe}`, undefined, dedupe);
    const res = await call(tenant, 'POST', '/v1/webhook-endpoints', { json: { url: receiver.url } });
    expect(res.status).toBe(201);
    receiver.secret = res.json.secret;
    return tenant;
  }

  const upload = async (t: Tenant, body: Buffer, o: { key?: string; contentType?: string; fileName?: string } = {}) => {
    const key = o.key ?? `del-${randomUUID()}`;
    const res = await postUpload(stack.url, { apiKey: t.apiKey, key, body, contentType: o.contentType, fileName: o.fileName });
    expect(res.status, res.text).toBe(201);
    return { key, uploadId: res.json.uploadId as string, storageKey: res.json.storageKey as string };
  };

  it('erases an upload once: 410 for its bytes, no object or rendition, no name, upload.deleted once, the key answers 410', async () => {
    const tenant = await tenantWithReceiver();
    const image = await png(320, 240);
    const { key, uploadId, storageKey } = await upload(tenant, image, { contentType: 'image/png', fileName: 'holiday.png' });
    const processed = await call(tenant, 'GET', `/v1/uploads/${uploadId}?wait=30`);
    expect(processed.json.status).toBe('processed');
    expect(processed.json.renditions.length).toBeGreaterThan(0);
    const renditionPrefix = `tenants/${tenant.tenantId}/renditions/${uploadId}/`;
    expect(await listKeys(stack.runtime.store, renditionPrefix)).not.toEqual([]);
    const link = await call(tenant, 'POST', `/v1/uploads/${uploadId}/download-urls`, { json: {} });
    expect(link.status).toBe(201);
    // A replay before the delete: this process now holds the answer in its replay cache.
    const early = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key,
      body: image,
      contentType: 'image/png',
      fileName: 'holiday.png',
    });
    expect(early.status).toBe(201);
    expect(early.headers.get('idempotent-replayed')).toBe('true');

    const deleted = await call(tenant, 'DELETE', `/v1/uploads/${uploadId}`, { headers: { prefer: 'wait=30' } });
    expect(deleted.status).toBe(200);
    expect(deleted.json).toMatchObject({ uploadId, status: 'deleted', deletedAt: expect.any(String), erasedAt: expect.any(String) });

    // The bytes: gone for every reader, and from the store.
    const content = await call(tenant, 'GET', `/v1/uploads/${uploadId}/content`);
    expect(content.status).toBe(410);
    expect(content.json).toMatchObject({ error: 'upload_deleted', uploadId });
    expect((await call(tenant, 'GET', `/v1/uploads/${uploadId}/renditions/thumbnail`)).status).toBe(410);
    expect((await call(tenant, 'POST', `/v1/uploads/${uploadId}/download-urls`, { json: {} })).status).toBe(410);
    const viaLink = await fetch(link.json.url);
    expect(viaLink.status).toBe(kind === 'local' ? 410 : 404);
    await viaLink.arrayBuffer();
    expect(await stack.runtime.store.head(storageKey)).toBeUndefined();
    expect(await listKeys(stack.runtime.store, renditionPrefix)).toEqual([]);

    // The row: deleted, nameless, without renditions; listed as deleted.
    const detail = await call(tenant, 'GET', `/v1/uploads/${uploadId}`);
    expect(detail.json).toMatchObject({ status: 'deleted', fileName: null, renditions: [], deletedAt: deleted.json.deletedAt });
    expect(detail.json.processing.media).toBeNull();
    const listed = await call(tenant, 'GET', '/v1/uploads?status=deleted');
    expect(listed.json.items.map((u: { uploadId: string }) => u.uploadId)).toContain(uploadId);

    // The original request under its key: 410, no new upload, nothing stored.
    const replay = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key,
      body: image,
      contentType: 'image/png',
      fileName: 'holiday.png',
    });
    expect(replay.status).toBe(410);
    expect(replay.json).toMatchObject({ error: 'upload_deleted', uploadId });
    expect(replay.text).not.toContain('holiday');
    const rows = await stack.runtime.pool.query('SELECT count(*)::int AS n FROM uploads WHERE tenant_id = $1', [tenant.tenantId]);
    expect(rows.rows[0].n).toBe(1);

    // Repeats answer the same final state; one upload.deleted, with its derived id.
    const again = await call(tenant, 'DELETE', `/v1/uploads/${uploadId}`);
    expect(again.status).toBe(200);
    expect(again.json).toEqual(deleted.json);
    const eventId = `evt_${uploadId.replaceAll('-', '')}_deleted`;
    await eventually(async () => receiver.received.some((r) => r.id === eventId), 30_000);
    const events = receiver.received.filter((r) => r.json.data?.uploadId === uploadId);
    expect(events.filter((r) => r.json.type === 'upload.deleted')).toHaveLength(1);
    expect(events.find((r) => r.json.type === 'upload.deleted')).toMatchObject({ id: eventId, verified: true });
    expect(events.find((r) => r.json.type === 'upload.deleted')!.body).not.toContain('holiday');

    const run = await stack.temporal.workflow.getHandle(`delete/${uploadId}`).describe();
    expect(run.status.name).toBe('COMPLETED');
    expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toEqual([]);
  }, 120_000);

  it("answers the erasure, not a webhook receiver's health: a receiver that never answers holds up only upload.deleted's own run", async () => {
    // Accepts connections and never answers: every delivery attempt runs to its timeout.
    const silent = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const tenant = await createTenant(stack.runtime.pool, 'deletions-silent-receiver');
      const hook = await call(tenant, 'POST', '/v1/webhook-endpoints', {
        json: { url: `http://127.0.0.1:${(silent.address() as AddressInfo).port}/hooks` },
      });
      expect(hook.status).toBe(201);
      const { uploadId } = await upload(tenant, randomBytes(2048));
      const started = Date.now();
      const deleted = await call(tenant, 'DELETE', `/v1/uploads/${uploadId}`, { headers: { prefer: 'wait=30' } });
      expect(deleted.status).toBe(200);
      expect(deleted.json).toMatchObject({ uploadId, status: 'deleted' });
      expect(Date.parse(deleted.json.erasedAt)).toBeGreaterThanOrEqual(Date.parse(deleted.json.deletedAt));
      expect(Date.now() - started).toBeLessThan(25_000);
      // The event goes on trying in its own run, under its one id.
      const announce = stack.temporal.workflow.getHandle(workflowIds.announce(eventId(uploadId, 'upload.deleted')));
      expect((await announce.describe()).status.name).toBe('RUNNING');
      await announce.terminate('test over');
    } finally {
      silent.closeAllConnections();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it('with dedupe, deleting one of two uploads of the same bytes keeps them; deleting both removes them', async () => {
    const tenant = await tenantWithReceiver('sha256');
    const bytes = randomBytes(200_000);
    const first = await upload(tenant, bytes);
    const second = await upload(tenant, bytes);
    expect(second.storageKey).toBe(first.storageKey);

    expect((await call(tenant, 'DELETE', `/v1/uploads/${first.uploadId}`, { headers: { prefer: 'wait=30' } })).status).toBe(200);
    expect(await stack.runtime.store.head(first.storageKey)).toBeDefined();
    const kept = await fetch(`${stack.url}/v1/uploads/${second.uploadId}/content`, {
      headers: { authorization: `Bearer ${tenant.apiKey}` },
    });
    expect(kept.status).toBe(200);
    expect(Buffer.from(await kept.arrayBuffer()).equals(bytes)).toBe(true);
    expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toEqual([]);

    expect((await call(tenant, 'DELETE', `/v1/uploads/${second.uploadId}`, { headers: { prefer: 'wait=30' } })).status).toBe(200);
    expect(await stack.runtime.store.head(first.storageKey)).toBeUndefined();
    const shared = await stack.runtime.pool.query('SELECT count(*)::int AS n FROM stored_objects WHERE tenant_id = $1', [tenant.tenantId]);
    expect(shared.rows[0].n).toBe(0);
    // The same bytes again: a new upload with its own object.
    const third = await upload(tenant, bytes);
    expect(await stack.runtime.store.head(third.storageKey)).toBeDefined();
    expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toEqual([]);
  }, 120_000);

  it('an instant upload whose shared object a deletion released meanwhile writes nothing', async () => {
    const tenant = await tenantWithReceiver('sha256');
    const bytes = randomBytes(10_000);
    const first = await upload(tenant, bytes);
    expect((await call(tenant, 'DELETE', `/v1/uploads/${first.uploadId}`, { headers: { prefer: 'wait=30' } })).status).toBe(200);
    // The commit of an upload that found the shared object before the deletion released it.
    const key = `instant-${randomUUID()}`;
    const commit = commitUploadRecords(stack.runtime.pool, {
      tenantId: tenant.tenantId,
      key,
      fingerprint: 'f'.repeat(64),
      workflowId: `upload/${tenant.tenantId}/${key}`,
      startedAt: new Date(),
      ttlSeconds: 3600,
      upload: {
        id: randomUUID(),
        tenant_id: tenant.tenantId,
        idempotency_key: key,
        workflow_id: `upload/${tenant.tenantId}/${key}`,
        storage_key: first.storageKey,
        bytes: bytes.length,
        sha256: createHash('sha256').update(bytes).digest('hex'),
        content_type: 'application/octet-stream',
        file_name: null,
      },
      response: () => ({ status: 201, body: '{}' }),
    });
    await expect(commit).rejects.toBeInstanceOf(SharedObjectReleased);
    const rows = await stack.runtime.pool.query('SELECT count(*)::int AS n FROM uploads WHERE idempotency_key = $1', [key]);
    expect(rows.rows[0].n).toBe(0);
    const shared = await stack.runtime.pool.query('SELECT count(*)::int AS n FROM stored_objects WHERE tenant_id = $1', [tenant.tenantId]);
    expect(shared.rows[0].n).toBe(0);
  });

  it('a delete while the transcode runs leaves no rendition behind', async () => {
    const tenant = await tenantWithReceiver();
    // Five minutes of audio: its MP3 takes seconds to encode (a video's poster is too quick to catch).
    const clip = await audio(300);
    const { uploadId } = await upload(tenant, clip, { contentType: 'audio/wav', fileName: 'long.wav' });
    // Delete once the transcode activity is running.
    const child = stack.temporal.workflow.getHandle(`downstream/${uploadId}`);
    await eventually(async () => {
      const d = await child.describe().catch(() => undefined);
      return d?.raw.pendingActivities?.some((p) => p.activityType?.name === 'runStep');
    }, 30_000);
    const res = await call(tenant, 'DELETE', `/v1/uploads/${uploadId}`, { headers: { prefer: 'wait=60' } });
    expect(res.status).toBe(200);
    expect((await child.describe()).status.name).toBe('CANCELLED');
    const prefix = `tenants/${tenant.tenantId}/renditions/${uploadId}/`;
    // A cancelled transcode still writing removes its own output when it finds the tombstone.
    await eventually(async () => {
      const [keys, rows] = await Promise.all([
        listKeys(stack.runtime.store, prefix),
        stack.runtime.pool.query('SELECT count(*)::int AS n FROM renditions WHERE upload_id = $1', [uploadId]),
      ]);
      return keys.length === 0 && rows.rows[0].n === 0;
    }, 30_000);
    const detail = await call(tenant, 'GET', `/v1/uploads/${uploadId}`);
    expect(detail.json).toMatchObject({ status: 'deleted', renditions: [], fileName: null });
    expect(receiver.received.filter((r) => r.json.data?.uploadId === uploadId && r.json.type === 'upload.processed')).toEqual([]);
    expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toEqual([]);
  }, 120_000);

  it('batch deletes, Idempotency-Key replays, and refuses bad requests without changing anything', async () => {
    const tenant = await tenantWithReceiver();
    const a = await upload(tenant, Buffer.from('batch a'));
    const b = await upload(tenant, Buffer.from('batch b'));
    const missing = randomUUID();
    const key = `batch-delete-${randomUUID()}`;
    const batch = await call(tenant, 'POST', '/v1/uploads/delete', {
      json: { ids: [a.uploadId, b.uploadId, missing] },
      headers: { 'idempotency-key': key },
    });
    expect(batch.status).toBe(202);
    expect(batch.json.items).toEqual([
      { uploadId: a.uploadId, status: 'deleting' },
      { uploadId: b.uploadId, status: 'deleting' },
      { uploadId: missing, status: 'not_found' },
    ]);
    const replayed = await call(tenant, 'POST', '/v1/uploads/delete', {
      json: { ids: [a.uploadId, b.uploadId, missing] },
      headers: { 'idempotency-key': key },
    });
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    expect(replayed.json).toEqual(batch.json);
    const reused = await call(tenant, 'POST', '/v1/uploads/delete', { json: { ids: [a.uploadId] }, headers: { 'idempotency-key': key } });
    expect(reused.status).toBe(422);
    for (const id of [a.uploadId, b.uploadId]) {
      await eventually(async () => (await call(tenant, 'GET', `/v1/uploads/${id}`)).json.erasedAt !== null, 30_000);
    }
    const after = await call(tenant, 'POST', '/v1/uploads/delete', { json: { ids: [a.uploadId] } });
    expect(after.json.items).toEqual([{ uploadId: a.uploadId, status: 'deleted' }]);

    // One key per DELETE of one upload: the same key on another upload is another request.
    const c = await upload(tenant, Buffer.from('keyed c'));
    const d = await upload(tenant, Buffer.from('keyed d'));
    const deleteKey = `delete-${randomUUID()}`;
    const keyed = await call(tenant, 'DELETE', `/v1/uploads/${c.uploadId}`, {
      headers: { 'idempotency-key': deleteKey, prefer: 'wait=30' },
    });
    expect(keyed.status).toBe(200);
    expect((await call(tenant, 'DELETE', `/v1/uploads/${d.uploadId}`, { headers: { 'idempotency-key': deleteKey } })).status).toBe(422);
    expect((await call(tenant, 'GET', `/v1/uploads/${d.uploadId}`)).json).toMatchObject({ deletedAt: null, erasedAt: null });

    const stranger = await createTenant(stack.runtime.pool, 'stranger');
    const before = (await call(tenant, 'GET', `/v1/uploads/${d.uploadId}?wait=30`)).json;
    expect(before.status).toBe('processed');
    for (const [method, path, json, status, error] of [
      ['DELETE', `/v1/uploads/not-a-uuid`, undefined, 404, 'not_found'],
      ['DELETE', `/v1/uploads/${randomUUID()}`, undefined, 404, 'not_found'],
      ['POST', '/v1/uploads/delete', { ids: [] }, 400, 'body_invalid'],
      ['POST', '/v1/uploads/delete', { ids: ['nope'] }, 400, 'body_invalid'],
      ['POST', '/v1/uploads/delete', { ids: [d.uploadId, d.uploadId] }, 400, 'body_invalid'],
      ['POST', '/v1/uploads/delete', { ids: Array.from({ length: 101 }, () => randomUUID()) }, 400, 'body_invalid'],
      ['POST', '/v1/uploads/delete', { ids: [d.uploadId], all: true }, 400, 'body_invalid'],
    ] as const) {
      const r = await call(tenant, method, path, { json });
      expect(r.status, `${method} ${path} ${JSON.stringify(json)}`).toBe(status);
      expect(r.json.error).toBe(error);
    }
    const foreign = await call(stranger, 'DELETE', `/v1/uploads/${d.uploadId}`);
    expect(foreign.status).toBe(404);
    const strangerBatch = await call(stranger, 'POST', '/v1/uploads/delete', { json: { ids: [d.uploadId] } });
    expect(strangerBatch.json.items).toEqual([{ uploadId: d.uploadId, status: 'not_found' }]);
    expect((await fetch(`${stack.url}/v1/uploads/${d.uploadId}`, { method: 'DELETE' })).status).toBe(401);
    expect((await call(tenant, 'GET', `/v1/uploads/${d.uploadId}`)).json).toEqual(before);
    expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toEqual([]);
  }, 120_000);
});
