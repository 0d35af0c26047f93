// Downstream steps against real services: transcode renditions (sharp, ffmpeg) and
// Standard Webhooks deliveries to a real receiver, exactly once per event and endpoint.
import { createHash, randomUUID } from 'node:crypto';
import sharp from 'sharp';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventId } from '../../src/downstream/events';
import { startTestStack, type TestStack } from '../helpers/stack';
import { getJson, postUpload } from '../helpers/http';
import { eventually, readObject } from '../helpers/inspect';
import { audio, orientedJpeg, png, video } from '../helpers/media';
import { WebhookReceiver } from '../support/webhook-receiver';

let stack: TestStack;
const receivers: WebhookReceiver[] = [];

beforeAll(async () => {
  stack = await startTestStack('down');
});
afterAll(async () => {
  await stack?.stop();
  for (const r of receivers) await r.stop();
});

async function tenantWithReceiver() {
  const tenant = await stack.createTenant();
  const receiver = await new WebhookReceiver().start();
  receivers.push(receiver);
  const res = await fetch(`${stack.url}/v1/webhook-endpoints`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tenant.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url: receiver.url, description: 'test receiver' }),
  });
  expect(res.status).toBe(201);
  const endpoint = (await res.json()) as { id: string; secret: string };
  expect(endpoint.secret).toMatch(/^whsec_/);
  // At rest the signing secret is sealed (the worker opens it to sign).
  const stored = (await stack.runtime.pool.query('SELECT secret FROM webhook_endpoints WHERE id = $1', [endpoint.id])).rows[0]
    .secret as string;
  expect(stored).toMatch(/^sealed:v1:/);
  expect(stored).not.toContain(endpoint.secret.slice('whsec_'.length));
  receiver.secret = endpoint.secret;
  return { tenant, receiver, endpoint };
}

async function uploadAndProcess(apiKey: string, body: Buffer, contentType: string) {
  const created = await postUpload(stack.url, { apiKey, key: `down-${randomUUID()}`, body, contentType });
  expect(created.status, created.text).toBe(201);
  const processed = await eventually(async () => {
    const r = await getJson(`${stack.url}/v1/uploads/${created.json.uploadId}?wait=20`, apiKey);
    return r.json.status === 'processed' ? r.json : undefined;
  }, 90_000);
  return { created, processed };
}

async function dimensions(key: string) {
  const meta = await sharp(await readObject(stack.s3, key)).metadata();
  return { width: meta.width, height: meta.height };
}

describe('transcode', () => {
  it('makes a thumbnail and a display rendition of an image, EXIF orientation applied', async () => {
    const { tenant } = await tenantWithReceiver();
    const { processed } = await uploadAndProcess(tenant.apiKey, await orientedJpeg(1600, 900), 'image/jpeg');
    expect(processed.processing).toMatchObject({ status: 'ready', media: { kind: 'image', width: 900, height: 1600 } });
    const byName = Object.fromEntries(processed.renditions.map((r: any) => [r.name, r]));
    expect(Object.keys(byName).sort()).toEqual(['display', 'thumbnail']);
    expect(byName.thumbnail).toMatchObject({ contentType: 'image/webp', width: 144, height: 256 });
    expect(byName.display).toMatchObject({ contentType: 'image/webp', width: 720, height: 1280 });
    expect(await dimensions(byName.thumbnail.storageKey)).toEqual({ width: 144, height: 256 });
    expect(await dimensions(byName.display.storageKey)).toEqual({ width: 720, height: 1280 });
    const rows = await stack.runtime.pool.query('SELECT name FROM renditions WHERE upload_id = $1', [processed.uploadId]);
    expect(rows.rowCount).toBe(2);
    // The run reads well in the UI: the transcode step carries a summary.
    const events = (await stack.history(`downstream/${processed.uploadId}`)).events ?? [];
    const scheduled = events.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'runStep');
    const summary = scheduled?.userMetadata?.summary?.data;
    expect(summary ? JSON.parse(Buffer.from(summary).toString()) : undefined).toBe(
      'Step 1: image.variants of image/jpeg (' + processed.bytes + ' bytes)',
    );
    // The built-in default ran (version 0), and its image step's outcome is on record.
    expect(processed.pipeline).toMatchObject({
      name: 'default',
      version: 0,
      steps: [{ index: 0, type: 'image.variants', status: 'succeeded' }],
    });
  });

  it('never enlarges a small image', async () => {
    const { tenant } = await tenantWithReceiver();
    const { processed } = await uploadAndProcess(tenant.apiKey, await png(200, 100), 'image/png');
    const display = processed.renditions.find((r: any) => r.name === 'display');
    expect(display).toMatchObject({ width: 200, height: 100 });
  });

  it('probes a video and extracts a poster frame', async () => {
    const { tenant } = await tenantWithReceiver();
    const { processed } = await uploadAndProcess(tenant.apiKey, await video(2, '320x240'), 'video/mp4');
    expect(processed.processing.status).toBe('ready');
    expect(processed.processing.media).toMatchObject({ kind: 'video', width: 320, height: 240, videoCodec: 'h264' });
    expect(Math.abs(processed.processing.media.durationMs - 2000)).toBeLessThan(200);
    expect(processed.renditions).toHaveLength(1);
    expect(processed.renditions[0]).toMatchObject({ name: 'poster', contentType: 'image/jpeg', width: 320, height: 240 });
    expect(await dimensions(processed.renditions[0].storageKey)).toEqual({ width: 320, height: 240 });
  });

  it('probes audio and makes an AAC rendition of the same duration', async () => {
    const { tenant } = await tenantWithReceiver();
    const { processed } = await uploadAndProcess(tenant.apiKey, await audio(2), 'audio/wav');
    expect(processed.processing.media).toMatchObject({ kind: 'audio', audioCodec: 'pcm_s16le' });
    expect(processed.renditions).toHaveLength(1);
    const r = processed.renditions[0];
    expect(r).toMatchObject({ name: 'audio', contentType: 'audio/mp4' });
    expect(Math.abs(r.durationMs - 2000)).toBeLessThan(150);
    expect((await readObject(stack.s3, r.storageKey)).subarray(4, 8).toString()).toBe('ftyp');
  });

  it('records unsupported media as skipped and corrupt media as failed; the upload stays completed', async () => {
    const { tenant } = await tenantWithReceiver();
    const text = await uploadAndProcess(tenant.apiKey, Buffer.from('just text'), 'text/plain');
    expect(text.processed.processing).toMatchObject({
      status: 'skipped',
      reason: 'no step applies to text/plain (pipeline default, version 0)',
    });
    expect(text.processed.renditions).toEqual([]);

    const jpeg = await orientedJpeg(800, 600);
    const truncated = jpeg.subarray(0, 300); // valid signature, cut-off data
    const broken = await uploadAndProcess(tenant.apiKey, truncated, 'image/jpeg');
    expect(broken.created.status).toBe(201);
    expect(broken.processed.processing.status).toBe('failed');
    expect(broken.processed.processing.reason).toMatch(/could not be decoded/);
    expect(broken.processed.renditions).toEqual([]);

    const mp4 = (await video(1)).subarray(0, 200);
    const brokenVideo = await uploadAndProcess(tenant.apiKey, mp4, 'video/mp4');
    expect(brokenVideo.processed.processing.status).toBe('failed');
    expect(brokenVideo.processed.processing.reason).toMatch(/probed|stream|failed/);
  });
});

describe('webhooks', () => {
  it('delivers each event once per endpoint with a verifiable signature, and replays never re-fire', async () => {
    const { tenant, receiver, endpoint } = await tenantWithReceiver();
    const key = `hook-${randomUUID()}`;
    const body = await png(300, 300);
    const created = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body, contentType: 'image/png' });
    expect(created.status).toBe(201);
    const uploadId = created.json.uploadId;
    await eventually(async () => receiver.distinctIds('upload.processed').size === 1, 60_000);

    for (let i = 0; i < 3; i++)
      expect((await postUpload(stack.url, { apiKey: tenant.apiKey, key, body, contentType: 'image/png' })).status).toBe(201);
    const upload = await eventually(async () => {
      const r = await getJson(`${stack.url}/v1/uploads/${uploadId}`, tenant.apiKey);
      return r.json.deliveries.length === 2 && r.json.deliveries.every((d: any) => d.deliveredAt) ? r.json : undefined;
    });
    // Give a stray second delivery time to show up before counting.
    await new Promise((r) => setTimeout(r, 1500));

    expect(receiver.received).toHaveLength(2);
    expect(receiver.received.every((r) => r.verified)).toBe(true);
    expect([...receiver.distinctIds('upload.completed')]).toEqual([eventId(uploadId, 'upload.completed')]);
    expect([...receiver.distinctIds('upload.processed')]).toEqual([eventId(uploadId, 'upload.processed')]);
    const processedEvent = receiver.ofType('upload.processed')[0]!.json;
    expect(processedEvent.data).toMatchObject({ uploadId, processing: { status: 'ready' } });
    expect(processedEvent.data.renditions.map((r: any) => r.name).sort()).toEqual(['display', 'thumbnail']);
    expect(upload.deliveries.map((d: any) => [d.eventType, d.endpointId, d.attempts, d.lastStatus]).sort()).toEqual([
      ['upload.completed', endpoint.id, 1, 200],
      ['upload.processed', endpoint.id, 1, 200],
    ]);

    const runs: string[] = [];
    for await (const wf of stack.temporal.workflow.list({ query: `WorkflowId = 'downstream/${uploadId}'` })) runs.push(wf.runId);
    expect(runs).toHaveLength(1);

    // The same delivery checked with another secret fails verification.
    const sample = receiver.received[0]!;
    const headers = { 'webhook-id': sample.id, 'webhook-timestamp': sample.timestamp, 'webhook-signature': sample.signature };
    expect(() => new Webhook(`whsec_${Buffer.from('not the right secret').toString('base64')}`).verify(sample.body, headers)).toThrow();
    expect(() => new Webhook(endpoint.secret).verify(sample.body, headers)).not.toThrow();
  });

  it('retries 500, 500 then succeeds on the third attempt with the same webhook-id', async () => {
    const { tenant, receiver } = await tenantWithReceiver();
    receiver.script = { 'upload.completed': [500, 500] };
    const created = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key: `retry-${randomUUID()}`,
      body: Buffer.from('retry me'),
      contentType: 'text/plain',
    });
    const uploadId = created.json.uploadId;
    const id = eventId(uploadId, 'upload.completed');
    const upload = await eventually(async () => {
      const r = await getJson(`${stack.url}/v1/uploads/${uploadId}`, tenant.apiKey);
      const d = r.json.deliveries?.find((x: any) => x.eventId === id);
      return d?.deliveredAt ? r.json : undefined;
    }, 60_000);
    const completedAttempts = receiver.received.filter((r) => r.id === id);
    expect(completedAttempts.length).toBe(3);
    expect(completedAttempts.every((r) => r.verified)).toBe(true);
    expect(upload.deliveries.find((d: any) => d.eventId === id)).toMatchObject({ attempts: 3, lastStatus: 200 });
  });

  it('honours Retry-After between attempts', async () => {
    const { tenant, receiver } = await tenantWithReceiver();
    receiver.script = { 'upload.completed': [503] };
    receiver.retryAfter = '2';
    const created = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key: `ra-${randomUUID()}`,
      body: Buffer.from('later'),
      contentType: 'text/plain',
    });
    const id = eventId(created.json.uploadId, 'upload.completed');
    await eventually(async () => receiver.received.filter((r) => r.id === id).length === 2, 30_000);
    const [first, second] = receiver.received.filter((r) => r.id === id);
    expect(Number(second!.timestamp) - Number(first!.timestamp)).toBeGreaterThanOrEqual(2);
  });

  it('disables an endpoint that answers 410 and sends it nothing more', async () => {
    const { tenant, receiver, endpoint } = await tenantWithReceiver();
    receiver.fallback = 410;
    const first = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key: `gone-${randomUUID()}`,
      body: Buffer.from('gone'),
      contentType: 'text/plain',
    });
    await eventually(async () => {
      const list = await getJson(`${stack.url}/v1/webhook-endpoints`, tenant.apiKey);
      return list.json.data.find((e: any) => e.id === endpoint.id)?.enabled === false;
    });
    const seen = receiver.received.length;
    expect(seen).toBeGreaterThanOrEqual(1);
    const list = await getJson(`${stack.url}/v1/webhook-endpoints`, tenant.apiKey);
    expect(list.json.data[0]).toMatchObject({ enabled: false, disabledReason: expect.stringContaining('410') });
    expect(list.json.data[0].secret).toBeUndefined();
    const second = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key: `gone-${randomUUID()}`,
      body: Buffer.from('gone again'),
      contentType: 'text/plain',
    });
    await getJson(`${stack.url}/v1/uploads/${second.json.uploadId}?wait=20`, tenant.apiKey);
    await eventually(
      async () => (await getJson(`${stack.url}/v1/uploads/${first.json.uploadId}`, tenant.apiKey)).json.status === 'processed',
    );
    await new Promise((r) => setTimeout(r, 1000));
    expect(receiver.received.filter((r) => r.json.data.uploadId === second.json.uploadId)).toHaveLength(0);
  });

  it('refuses endpoint URLs that are not http(s) or point at disallowed addresses, and bad bodies', async () => {
    const tenant = await stack.createTenant();
    const post = (body: string) =>
      fetch(`${stack.url}/v1/webhook-endpoints`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tenant.apiKey}`, 'content-type': 'application/json' },
        body,
      });
    for (const url of [
      'ftp://example.com/hook',
      'javascript:alert(1)',
      'not a url',
      'http://169.254.169.254/latest/meta-data',
      'http://user:pw@127.0.0.1/x',
      'http://0.0.0.0:80/',
    ]) {
      const res = await post(JSON.stringify({ url }));
      expect(res.status, url).toBe(400);
      expect(((await res.json()) as { error: string }).error).toBe('webhook_url_invalid');
    }
    for (const body of ['{', '[]', '{"url": 5}', '{}']) {
      const res = await post(body);
      expect(res.status, body).toBe(400);
      expect(res.headers.get('content-type')).toBe('application/problem+json');
      expect(((await res.json()) as { error: string }).error).toBe('body_invalid');
    }
    const list = await getJson(`${stack.url}/v1/webhook-endpoints`, tenant.apiKey);
    expect(list.json.data).toEqual([]);
  });

  it('deletes an endpoint, scoped to its tenant', async () => {
    const { tenant, endpoint } = await tenantWithReceiver();
    const other = await stack.createTenant();
    const del = (apiKey: string) =>
      fetch(`${stack.url}/v1/webhook-endpoints/${endpoint.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${apiKey}` } });
    expect((await del(other.apiKey)).status).toBe(404);
    expect((await del(tenant.apiKey)).status).toBe(204);
    expect((await del(tenant.apiKey)).status).toBe(404);
    expect((await getJson(`${stack.url}/v1/webhook-endpoints`, tenant.apiKey)).json.data).toEqual([]);
  });
});

describe('audit', () => {
  it('finds one rendition set per upload and one event id per event, nothing lost', async () => {
    const { audit } = await import('../../src/audit');
    const report = await audit(stack.runtime.pool, stack.s3);
    expect(report.violations).toEqual([]);
    expect(report.renditions).toBeGreaterThanOrEqual(6);
    expect(report.deliveredEvents).toBeGreaterThanOrEqual(4);
  });
});

describe('Idempotency-Key on POST /v1/webhook-endpoints', () => {
  it('creates one endpoint for one key, replays the answer, refuses another body, 409 while running', async () => {
    const tenant = await stack.createTenant();
    const receiver = await new WebhookReceiver().start();
    receivers.push(receiver);
    const post = (key: string | undefined, body: unknown) =>
      fetch(`${stack.url}/v1/webhook-endpoints`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${tenant.apiKey}`,
          'content-type': 'application/json',
          ...(key ? { 'idempotency-key': key } : {}),
        },
        body: JSON.stringify(body),
      });
    const key = `endpoint-${randomUUID()}`;
    const first = await post(key, { url: receiver.url });
    const firstText = await first.text();
    expect(first.status).toBe(201);
    const second = await post(key, { url: receiver.url });
    expect(second.status).toBe(201);
    expect(await second.text()).toBe(firstText);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    const other = await post(key, { url: `${receiver.url}/other` });
    expect(other.status).toBe(422);
    expect(((await other.json()) as { error: string }).error).toBe('idempotency_key_reuse');
    const bad = await post(`endpoint-${randomUUID()}`, { url: 'ftp://nope' });
    expect(bad.status).toBe(400);
    const list = await getJson(`${stack.url}/v1/webhook-endpoints`, tenant.apiKey);
    expect(list.json.data).toHaveLength(1);
    // Without a key the route works as before (a second endpoint).
    expect((await post(undefined, { url: receiver.url })).status).toBe(201);
    expect((await getJson(`${stack.url}/v1/webhook-endpoints`, tenant.apiKey)).json.data).toHaveLength(2);

    // A claim still running (simulated: a claimed row without an answer) → 409 + Retry-After.
    const running = `endpoint-${randomUUID()}`;
    const body = JSON.stringify({ url: receiver.url });
    const fingerprint = createHash('sha256')
      .update(JSON.stringify(['POST', '/v1/webhook-endpoints', tenant.tenantId, body]))
      .digest('hex');
    await stack.runtime.pool.query(
      `INSERT INTO idempotency_keys (tenant_id, key, fingerprint, route, created_at, expires_at) VALUES ($1, $2, $3, '/v1/webhook-endpoints', now(), now() + interval '1 day')`,
      [tenant.tenantId, running, fingerprint],
    );
    const conflict = await post(running, { url: receiver.url });
    expect(conflict.status).toBe(409);
    expect(conflict.headers.get('retry-after')).toBe('1');
    // The upload route shares the key table: the same key there is another request.
    const upload = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: Buffer.from('x') });
    expect(upload.status).toBe(422);
  });
});
