// Fifty copies of one request at once: one execution, one row, one object, no 5xx.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../helpers/stack';
import { postUpload, sha256 } from '../helpers/http';
import { eventually, listKeys, readObject, rowsForKey } from '../helpers/inspect';
import { uploadWorkflowId, keyStoragePrefix } from '../../src/temporal/ids';

let stack: TestStack;
let tenant: { tenantId: string; apiKey: string };

beforeAll(async () => {
  stack = await startTestStack('conc');
  tenant = await stack.createTenant();
});
afterAll(() => stack?.stop());

it('50 concurrent requests with one key make exactly one upload', async () => {
  const key = `conc-${randomUUID()}`;
  const file = Buffer.alloc(256 * 1024, 7);
  const answers = await Promise.all(
    Array.from({ length: 50 }, () =>
      postUpload(stack.url, { apiKey: tenant.apiKey, key, body: file, contentType: 'application/octet-stream' }),
    ),
  );
  const statuses = answers.map((a) => a.status);
  expect(
    statuses.every((s) => s === 201 || s === 202 || s === 409),
    `statuses: ${statuses.join(',')}; refusals: ${answers
      .filter((a) => a.status >= 500)
      .map((a) => a.text)
      .join(' | ')}`,
  ).toBe(true);
  const created = answers.filter((a) => a.status === 201);
  expect(created.length).toBeGreaterThan(0);
  expect(new Set(created.map((a) => a.text)).size).toBe(1);
  expect(created.filter((a) => a.headers.get('idempotent-replayed') === null).length).toBeLessThanOrEqual(1);
  for (const a of answers.filter((x) => x.status !== 201)) expect(Number(a.headers.get('retry-after'))).toBeGreaterThan(0);

  const rows = await rowsForKey(stack.runtime.pool, tenant.tenantId, key);
  expect(rows.uploads).toHaveLength(1);
  expect(rows.keys).toHaveLength(1);

  // Exactly one workflow execution for the key, ever.
  const runs: string[] = [];
  for await (const wf of stack.temporal.workflow.list({ query: `WorkflowId = '${uploadWorkflowId(tenant.tenantId, key)}'` }))
    runs.push(wf.runId);
  expect(runs).toHaveLength(1);

  // Losing attempts delete their copies: one object remains under the key's folder.
  const prefix = keyStoragePrefix(tenant.tenantId, key);
  const objects = await eventually(async () => {
    const keys = await listKeys(stack.s3, prefix);
    return keys.length === 1 ? keys : undefined;
  });
  expect(objects[0]).toBe(created[0]!.json.storageKey);
  expect(sha256(await readObject(stack.s3, objects[0]!))).toBe(sha256(file));
});
