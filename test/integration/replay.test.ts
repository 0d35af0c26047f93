// Workflow determinism: histories of real runs (fresh ones, and ones recorded from earlier
// versions under test/fixtures/histories) replay against the current workflow code.
// Set RECORD_HISTORIES=1 to refresh the recorded fixtures from this run.
import { randomUUID } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { uploadWorkflowId } from '../../src/temporal/ids';

import { png } from '../helpers/media';
import { WebhookReceiver } from '../support/webhook-receiver';
import { startTestStack, type TestStack } from '../helpers/stack';
import { postUpload, sha256 } from '../helpers/http';
import { eventually } from '../helpers/inspect';
import { workflowIds } from '../../src/temporal/names';
import { startFileOrigin, type FileOrigin } from '../support/file-origin';
import { imageWorkflowIds } from '../../src/images/contract';

const fixtures = path.resolve(import.meta.dirname, '../fixtures/histories');
const ADMIN = `admin-${randomUUID()}`;
let stack: TestStack;
let origin: FileOrigin;

beforeAll(async () => {
  // Sessions idle for 3 s expire: the expiry branch of the workflow is recorded too.
  stack = await startTestStack('replay', {
    env: {
      RESUMABLE_EXPIRY_HOURS: String(3 / 3600),
      ADMIN_TOKEN: ADMIN,
      IMPORT_ALLOW_PRIVATE_NETWORKS: 'true',
      IMPORT_HEARTBEAT_SECONDS: '2',
    },
  });
  origin = await startFileOrigin(Buffer.alloc(256 * 1024, 7), { contentType: 'application/octet-stream' });
});
afterAll(async () => {
  await origin?.close();
  await stack?.stop();
});

it('replays fresh and recorded histories without nondeterminism', async () => {
  const tenant = await stack.createTenant();
  const scenarios: Record<string, () => Promise<string>> = {
    completed: async () => {
      const key = `replay-${randomUUID()}`;
      expect((await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: Buffer.from('ok') })).status).toBe(201);
      return key;
    },
    rejected: async () => {
      const key = `replay-${randomUUID()}`;
      expect(
        (await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: Buffer.from('not a png'), contentType: 'image/png' })).status,
      ).toBe(415);
      return key;
    },
    duplicates: async () => {
      const key = `replay-${randomUUID()}`;
      const results = await Promise.all(
        Array.from({ length: 5 }, () => postUpload(stack.url, { apiKey: tenant.apiKey, key, body: Buffer.from('dup') })),
      );
      expect(results.some((r) => r.status === 201)).toBe(true);
      return key;
    },
    // A tus session created, written in one PATCH and committed.
    'tus-completed': async () => {
      const key = `replay-tus-${randomUUID()}`;
      const created = await fetch(`${stack.url}/v1/tus`, {
        method: 'POST',
        headers: { ...tusAuth(), 'upload-length': '11', 'idempotency-key': key },
      });
      expect(created.status).toBe(201);
      const patched = await fetch(`${stack.url}${created.headers.get('location')}`, {
        method: 'PATCH',
        headers: { ...tusAuth(), 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' },
        body: 'hello world',
      });
      expect(patched.status).toBe(204);
      return key;
    },
    // A tus session left idle: its run expires it and fails, freeing the key.
    'tus-expired': async () => {
      const key = `replay-tus-${randomUUID()}`;
      expect(
        (await fetch(`${stack.url}/v1/tus`, { method: 'POST', headers: { ...tusAuth(), 'upload-length': '5', 'idempotency-key': key } }))
          .status,
      ).toBe(201);
      const handle = stack.temporal.workflow.getHandle(uploadWorkflowId(tenant.tenantId, key));
      await eventually(async () => (await handle.describe()).status.name !== 'RUNNING', 60_000);
      return key;
    },
    // A direct upload: planned, PUT to the store with the signed request, completed.
    'direct-completed': async () => {
      const key = `replay-direct-${randomUUID()}`;
      const file = Buffer.from('direct bytes');
      const auth = { authorization: `Bearer ${tenant.apiKey}` };
      const plan = await fetch(`${stack.url}/v1/direct-uploads`, {
        method: 'POST',
        headers: { ...auth, 'idempotency-key': key, 'content-type': 'application/json' },
        body: JSON.stringify({ bytes: file.length, sha256: sha256(file), contentType: 'text/plain' }),
      });
      expect(plan.status).toBe(201);
      const { id, upload } = (await plan.json()) as { id: string; upload: { url: string; headers: Record<string, string> } };
      const { 'content-length': _length, ...headers } = upload.headers;
      expect((await fetch(upload.url, { method: 'PUT', headers, body: file })).status).toBe(200);
      expect((await fetch(`${stack.url}/v1/direct-uploads/${id}/complete`, { method: 'POST', headers: auth })).status).toBe(201);
      return key;
    },
    // An import read from its origin and committed.
    'import-completed': async () => {
      const key = `replay-import-${randomUUID()}`;
      expect((await importFrom(key, 'wait=60')).status).toBe(201);
      return key;
    },
    // An import deleted while its file was read: the read canceled, import_canceled recorded.
    'import-canceled': async () => {
      const key = `replay-import-${randomUUID()}`;
      origin.throttle(16 * 1024);
      try {
        const accepted = await importFrom(key, 'respond-async');
        expect(accepted.status).toBe(202);
        const deleted = await fetch(`${stack.url}/v1/uploads/${accepted.json.uploadId}`, {
          method: 'DELETE',
          headers: { authorization: `Bearer ${tenant.apiKey}` },
        });
        expect(deleted.status).toBe(202);
        const handle = stack.temporal.workflow.getHandle(uploadWorkflowId(tenant.tenantId, key));
        expect(await handle.result()).toMatchObject({ status: 410 });
      } finally {
        origin.throttle(undefined);
      }
      return key;
    },
  };
  const importFrom = async (key: string, prefer: string) => {
    const res = await fetch(`${stack.url}/v1/imports`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.apiKey}`, 'idempotency-key': key, 'content-type': 'application/json', prefer },
      body: JSON.stringify({ url: `${origin.base}/replay.bin` }),
    });
    return { status: res.status, json: (await res.json()) as { uploadId: string } };
  };
  const tusAuth = () => ({ authorization: `Bearer ${tenant.apiKey}`, 'tus-resumable': '1.0.0' });
  const histories: { workflowId: string; history: unknown }[] = [];
  // Fixtures are recorded opened (as histories written before the codec were); the live
  // histories replay sealed, through the stack's codec, as a worker reads them.
  const record = async (file: string, workflowId: string) => {
    if (!process.env.RECORD_HISTORIES) return;
    mkdirSync(fixtures, { recursive: true });
    writeFileSync(path.join(fixtures, file), JSON.stringify(await stack.history(workflowId), null, 1));
  };
  const sealed = (workflowId: string) => stack.temporal.workflow.getHandle(workflowId).fetchHistory();
  for (const [name, run] of Object.entries(scenarios)) {
    const key = await run();
    const workflowId = uploadWorkflowId(tenant.tenantId, key);
    histories.push({ workflowId, history: await sealed(workflowId) });
    await record(`upload-${name}.json`, workflowId);
  }
  // The downstream child of a transcoded picture, and of a file with nothing to transcode,
  // both announced to an endpoint.
  const receiver = await new WebhookReceiver().start();
  try {
    const withEndpoint = await stack.createTenant();
    const created = await fetch(`${stack.url}/v1/webhook-endpoints`, {
      method: 'POST',
      headers: { authorization: `Bearer ${withEndpoint.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: receiver.url }),
    });
    expect(created.status).toBe(201);
    receiver.secret = ((await created.json()) as { secret: string }).secret;
    for (const [name, body, contentType] of [
      ['picture', await png(64, 48), 'image/png'],
      ['announced', Buffer.from('plain text'), 'text/plain'],
    ] as const) {
      const res = await postUpload(stack.url, { apiKey: withEndpoint.apiKey, key: `replay-down-${randomUUID()}`, body, contentType });
      expect(res.status).toBe(201);
      const handle = stack.temporal.workflow.getHandle(workflowIds.downstream(res.json.uploadId as string));
      await eventually(async () => (await handle.describe()).status.name === 'COMPLETED', 60_000);
      histories.push({ workflowId: handle.workflowId, history: await sealed(handle.workflowId) });
      await record(`downstream-${name}.json`, handle.workflowId);
    }
  } finally {
    await receiver.stop();
  }
  // An image variant rendered on request (the tenant allows any spec).
  await stack.runtime.pool.query(`UPDATE tenants SET image_specs = 'any' WHERE id = $1`, [tenant.tenantId]);
  const picture = await postUpload(stack.url, {
    apiKey: tenant.apiKey,
    key: `replay-image-${randomUUID()}`,
    body: await png(64, 48),
    contentType: 'image/png',
  });
  expect(picture.status).toBe(201);
  const pictureId = picture.json.uploadId as string;
  const variant = await fetch(`${stack.url}/v1/uploads/${pictureId}/images/w_32,f_webp`, {
    headers: { authorization: `Bearer ${tenant.apiKey}` },
  });
  expect(variant.status).toBe(200);
  const imageRun = imageWorkflowIds.imageVariant(pictureId, 'w_32,fit_inside,f_webp,q_80');
  histories.push({ workflowId: imageRun, history: await sealed(imageRun) });
  await record('image-variant.json', imageRun);
  // A tenant's deletion: closed, its one upload erased by a deletion run, its keys destroyed.
  const leaving = await stack.createTenant('leaving');
  const kept = await postUpload(stack.url, {
    apiKey: leaving.apiKey,
    key: `replay-tenant-${randomUUID()}`,
    body: Buffer.from('x'),
    contentType: 'text/plain',
  });
  expect(kept.status).toBe(201);
  const gone = await fetch(`${stack.url}/admin/tenants/${leaving.tenantId}`, {
    method: 'DELETE',
    headers: { authorization: `Bearer ${ADMIN}`, prefer: 'wait=60' },
  });
  expect(gone.status).toBe(200);
  const tenantRun = workflowIds.tenantDeletion(leaving.tenantId);
  histories.push({ workflowId: tenantRun, history: await sealed(tenantRun) });
  await record('tenant-deletion.json', tenantRun);
  for (const file of readdirSync(fixtures).filter((f) => f.endsWith('.json'))) {
    histories.push({
      workflowId: `fixture/${file}`,
      history: temporal.api.history.v1.History.fromObject(JSON.parse(readFileSync(path.join(fixtures, file), 'utf8'))),
    });
  }
  expect(histories.length).toBeGreaterThanOrEqual(3);

  let replayed = 0;
  for await (const result of Worker.runReplayHistories(
    { workflowBundle: { codePath: inject('stack').workflowBundlePath }, dataConverter: { payloadCodecs: [stack.runtime.payloadCodec!] } },
    histories as never,
  )) {
    expect(result.error, `${result.workflowId}: ${result.error}`).toBeUndefined();
    replayed++;
  }
  expect(replayed).toBe(histories.length);
});
