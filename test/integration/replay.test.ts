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
import { startTestStack, type TestStack } from '../helpers/stack';
import { postUpload, sha256 } from '../helpers/http';
import { eventually } from '../helpers/inspect';

const fixtures = path.resolve(import.meta.dirname, '../fixtures/histories');
let stack: TestStack;

beforeAll(async () => {
  // Sessions idle for 3 s expire: the expiry branch of the workflow is recorded too.
  stack = await startTestStack('replay', { env: { RESUMABLE_EXPIRY_HOURS: String(3 / 3600) } });
});
afterAll(() => stack?.stop());

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
  };
  const tusAuth = () => ({ authorization: `Bearer ${tenant.apiKey}`, 'tus-resumable': '1.0.0' });
  const histories: { workflowId: string; history: unknown }[] = [];
  for (const [name, run] of Object.entries(scenarios)) {
    const key = await run();
    const workflowId = uploadWorkflowId(tenant.tenantId, key);
    const history = await stack.temporal.workflow.getHandle(workflowId).fetchHistory();
    histories.push({ workflowId, history });
    if (process.env.RECORD_HISTORIES) {
      mkdirSync(fixtures, { recursive: true });
      writeFileSync(path.join(fixtures, `upload-${name}.json`), JSON.stringify(history, null, 1));
    }
  }
  for (const file of readdirSync(fixtures).filter((f) => f.endsWith('.json'))) {
    histories.push({
      workflowId: `fixture/${file}`,
      history: temporal.api.history.v1.History.fromObject(JSON.parse(readFileSync(path.join(fixtures, file), 'utf8'))),
    });
  }
  expect(histories.length).toBeGreaterThanOrEqual(3);

  let replayed = 0;
  for await (const result of Worker.runReplayHistories(
    { workflowBundle: { codePath: inject('stack').workflowBundlePath } },
    histories as never,
  )) {
    expect(result.error, `${result.workflowId}: ${result.error}`).toBeUndefined();
    replayed++;
  }
  expect(replayed).toBe(histories.length);
});
