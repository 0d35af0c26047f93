// The scan.clamav gate against a real clamd (Debian's, with the tests' own EICAR signature):
// an infected upload is rejected for good — bytes gone, upload.rejected once, its key
// answering the rejection — a clean one is held until scanned and then announced, `flag`
// only records, and a file clamd cannot take (too large, clamd down) is `not_scanned`.
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { mkdtempSync, rmSync } from 'node:fs';
import { serverPort } from '../support/ports';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { audit } from '../../src/audit';
import { startTestStack, type TestStack } from '../helpers/stack';
import { getJson, postUpload } from '../helpers/http';
import { eventually, listKeys } from '../helpers/inspect';
import { png } from '../helpers/media';
import { EICAR, EICAR_SIGNATURE, startClamd, type Clamd } from '../support/clamd';
import { WebhookReceiver } from '../support/webhook-receiver';

let clamd: Clamd;
let clamdDir: string;
let stack: TestStack;
let receiver: WebhookReceiver;
let tenant: { tenantId: string; apiKey: string };

beforeAll(async () => {
  clamdDir = mkdtempSync(path.join(os.tmpdir(), 'oncely-clamd-'));
  clamd = await startClamd({ port: await serverPort(), dir: clamdDir });
  stack = await startTestStack('scans', {
    env: { CLAMD_ADDRESS: clamd.address, CLAMD_MAX_BYTES: String(clamd.maxBytes), CLAMD_TIMEOUT_SECONDS: '5' },
  });
  tenant = await stack.createTenant();
  receiver = await new WebhookReceiver().start();
  const created = await fetch(`${stack.url}/v1/webhook-endpoints`, {
    method: 'POST',
    headers: { ...auth(), 'content-type': 'application/json' },
    body: JSON.stringify({ url: receiver.url }),
  });
  receiver.secret = ((await created.json()) as { secret: string }).secret;
  for (const [name, scan] of [
    ['scanned', { type: 'scan.clamav' }],
    ['flagged', { type: 'scan.clamav', policy: 'flag' }],
    ['strict', { type: 'scan.clamav', unscanned: 'reject' }],
  ] as const) {
    const res = await fetch(`${stack.url}/v1/pipelines`, {
      method: 'POST',
      headers: { ...auth(), 'content-type': 'application/json' },
      body: JSON.stringify({
        name,
        steps: [scan, { type: 'image.variants', variants: [{ name: 'small', width: 64, format: 'webp' }] }, { type: 'webhook' }],
      }),
    });
    expect(res.status).toBe(201);
  }
}, 120_000);

afterAll(async () => {
  await stack?.stop();
  await clamd?.stop();
  await receiver?.stop();
  rmSync(clamdDir, { recursive: true, force: true });
});

const auth = () => ({ authorization: `Bearer ${tenant.apiKey}` });

async function upload(body: Buffer, pipeline: string, contentType = 'application/octet-stream', key = `scan-${randomUUID()}`) {
  const res = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body, contentType, pipeline: pipeline });
  expect(res.status, res.text).toBe(201);
  return { key, uploadId: res.json.uploadId as string, storageKey: res.json.storageKey as string };
}

async function settled(uploadId: string) {
  return eventually(async () => {
    const r = await getJson(`${stack.url}/v1/uploads/${uploadId}?wait=20`, tenant.apiKey);
    return r.json.status === 'processed' ? r.json : undefined;
  }, 90_000);
}

const eventsOf = (uploadId: string) => receiver.received.filter((r) => r.json.data.uploadId === uploadId).map((r) => r.json.type as string);

it('rejects an infected upload for good: bytes gone, upload.rejected once and nothing else, its key answers the rejection', async () => {
  const { key, uploadId, storageKey } = await upload(EICAR, 'scanned', 'text/plain');
  const detail = await settled(uploadId);
  expect(detail).toMatchObject({ availability: 'rejected', rejectionReason: `infected: ${EICAR_SIGNATURE}.UNOFFICIAL` });
  expect(detail.pipeline.steps).toMatchObject([
    { type: 'scan.clamav', status: 'rejected', scan: { verdict: 'infected', viruses: [`${EICAR_SIGNATURE}.UNOFFICIAL`] } },
  ]);
  expect(await listKeys(stack.s3, storageKey)).toEqual([]);
  const content = await fetch(`${stack.url}/v1/uploads/${uploadId}/content`, { headers: auth() });
  expect(content.status).toBe(409);
  expect(await content.json()).toMatchObject({ error: 'upload_rejected', availability: 'rejected' });
  const link = await fetch(`${stack.url}/v1/uploads/${uploadId}/download-urls`, {
    method: 'POST',
    headers: { ...auth(), 'content-type': 'application/json' },
    body: '{}',
  });
  expect(link.status).toBe(409);
  // The same request under its key gets the rejection, not the 201.
  const again = await postUpload(stack.url, {
    apiKey: tenant.apiKey,
    key,
    body: EICAR,
    contentType: 'text/plain',
    pipeline: 'scanned',
  });
  expect(again.status).toBe(409);
  expect(again.json).toMatchObject({ error: 'upload_rejected', uploadId });
  await eventually(async () => (eventsOf(uploadId).length ? true : undefined), 30_000);
  await new Promise((r) => setTimeout(r, 500));
  expect(eventsOf(uploadId)).toEqual(['upload.rejected']);
  const rejected = receiver.received.find((r) => r.json.data.uploadId === uploadId)!;
  expect(rejected.verified).toBe(true);
  expect(rejected.json.data.rejection).toMatchObject({ scan: { verdict: 'infected' } });
});

it('holds a clean upload until it is scanned, then serves it and announces it, with its renditions', async () => {
  const { uploadId } = await upload(await png(200, 100), 'scanned', 'image/png');
  const detail = await settled(uploadId);
  expect(detail).toMatchObject({ availability: 'available', rejectionReason: null, processing: { status: 'ready' } });
  expect(detail.pipeline.steps).toMatchObject([
    { index: 0, type: 'scan.clamav', status: 'succeeded', scan: { verdict: 'clean' } },
    { index: 1, type: 'image.variants', status: 'succeeded' },
  ]);
  expect(detail.renditions.map((r: any) => r.name)).toEqual(['small']);
  expect((await fetch(`${stack.url}/v1/uploads/${uploadId}/content`, { headers: auth() })).status).toBe(200);
  await eventually(async () => (eventsOf(uploadId).length === 2 ? true : undefined), 30_000);
  expect(eventsOf(uploadId).sort()).toEqual(['upload.completed', 'upload.processed']);
});

it('under flag, keeps an infected upload available and records the verdict', async () => {
  const { uploadId } = await upload(EICAR, 'flagged', 'text/plain');
  const detail = await settled(uploadId);
  expect(detail.availability).toBe('available');
  expect(detail.pipeline.steps).toMatchObject([
    { status: 'succeeded', reason: `infected: ${EICAR_SIGNATURE}.UNOFFICIAL (flagged)`, scan: { verdict: 'infected' } },
  ]);
  expect(Buffer.from(await (await fetch(`${stack.url}/v1/uploads/${uploadId}/content`, { headers: auth() })).arrayBuffer())).toEqual(EICAR);
});

it('calls a file larger than clamd takes not_scanned (never clean): allowed by default, rejected under unscanned=reject', async () => {
  const big = Buffer.alloc(clamd.maxBytes + 1, 7);
  const allowed = await settled((await upload(big, 'scanned')).uploadId);
  expect(allowed.availability).toBe('available');
  expect(allowed.pipeline.steps[0]).toMatchObject({
    status: 'succeeded',
    scan: { verdict: 'not_scanned', reason: expect.stringContaining('larger than') },
  });
  const strict = await settled((await upload(big, 'strict')).uploadId);
  expect(strict.availability).toBe('rejected');
  expect(strict.rejectionReason).toMatch(/^not scanned: /);
});

it('while clamd is down the upload stays held (423, nothing announced), then is not_scanned per its policy', async () => {
  await clamd.stop();
  const held = await upload(await png(40, 40), 'scanned', 'image/png');
  const strict = await upload(Buffer.from('strict and unscanned'), 'strict', 'text/plain');
  // The commit held it: nothing of it is served until the scan is settled.
  const content = await fetch(`${stack.url}/v1/uploads/${held.uploadId}/content`, { headers: auth() });
  expect(content.status).toBe(423);
  expect(content.headers.get('retry-after')).toBe('5');
  expect(await content.json()).toMatchObject({ error: 'upload_gated', availability: 'gated' });
  expect((await getJson(`${stack.url}/v1/uploads/${held.uploadId}`, tenant.apiKey)).json.availability).toBe('gated');
  expect(eventsOf(held.uploadId)).toEqual([]);
  // The scan is tried again a few times, then settled as not scanned.
  const detail = await settled(held.uploadId);
  expect(detail.availability).toBe('available');
  expect(detail.pipeline.steps[0]).toMatchObject({
    status: 'succeeded',
    scan: { verdict: 'not_scanned', reason: expect.stringMatching(/unavailable/) },
  });
  expect((await settled(strict.uploadId)).availability).toBe('rejected');
  await eventually(async () => (eventsOf(held.uploadId).includes('upload.completed') ? true : undefined), 30_000);
  // Every rejection above left nothing behind; every other upload is whole.
  const report = await audit(stack.runtime.pool, stack.runtime.store);
  expect(report.violations).toEqual([]);
}, 180_000);
