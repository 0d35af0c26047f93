// A run that fails after accepting the request's copy (here: the staged object was cut
// short before the commit) answers 503 upload_failed — nothing recorded — and a retry with
// the same key starts afresh and stores the upload once; the failed run's copy is removed.
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { startRuntime, type Runtime } from '../../src/runtime';
import { keyStoragePrefix, uploadWorkflowId } from '../../src/temporal/ids';
import { postUpload } from '../helpers/http';
import { eventually, listKeys, rowsForKey } from '../helpers/inspect';
import { startTestStack, type TestStack } from '../helpers/stack';

let stack: TestStack;
let worker: Runtime | undefined;
beforeAll(async () => {
  // The API alone at first: the offered copy waits for a worker that is not there yet.
  stack = await startTestStack('upfailed', { role: 'api' });
  // Warm-up on other queues: the worker started mid-test must come up well within the API's
  // 8 s offer deadline even on a loaded machine.
  const warm = await startRuntime(
    {
      ...stack.config,
      TASK_QUEUE_UPLOADS: `${stack.name}-warm`,
      TASK_QUEUE_TRANSCODE: `${stack.name}-warm-t`,
      HOUSEKEEPING_SCHEDULES: false,
    },
    'worker',
    {
      workflowBundlePath: inject('stack').workflowBundlePath,
    },
  );
  await warm.shutdown();
});
afterAll(async () => {
  await worker?.shutdown();
  await stack?.stop();
});

it('answers 503 upload_failed when the run fails, and a retry with the key stores it once', async () => {
  const tenant = await stack.createTenant();
  const key = `fail-${randomUUID()}`;
  const body = Buffer.from('this copy will vanish before its commit');
  const first = postUpload(stack.url, { apiKey: tenant.apiKey, key, body, prefer: 'wait=60' });

  // The attempt's object is staged and the run started; cut it short (the commit refuses it).
  const staged = await eventually(async () => (await listKeys(stack.s3, keyStoragePrefix(tenant.tenantId, key)))[0]);
  await eventually(
    async () =>
      (await stack.temporal.workflow
        .getHandle(uploadWorkflowId(tenant.tenantId, key))
        .describe()
        .then(
          () => true,
          () => false,
        )) || undefined,
  );
  const cut = body.subarray(0, 10);
  await stack.s3.put(staged, Readable.from([cut]), { contentType: 'application/octet-stream', contentLength: cut.length });
  worker = await startRuntime(stack.config, 'worker', { workflowBundlePath: inject('stack').workflowBundlePath });

  const failed = await first;
  expect(failed.status, failed.text).toBe(503);
  expect(failed.headers.get('content-type')).toContain('application/problem+json');
  expect(failed.headers.get('retry-after')).toBeTruthy();
  expect(failed.json.error).toBe('upload_failed');
  expect(await rowsForKey(stack.runtime.pool, tenant.tenantId, key)).toMatchObject({ uploads: [], keys: [] });

  const retry = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body });
  expect(retry.status, retry.text).toBe(201);
  const replay = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body });
  expect(replay.text).toBe(retry.text);
  expect((await rowsForKey(stack.runtime.pool, tenant.tenantId, key)).uploads).toHaveLength(1);
  // The failed attempt's copy goes once the committed answer names the retry's: one object left.
  const left = await eventually(async () => {
    const objects = await listKeys(stack.s3, keyStoragePrefix(tenant.tenantId, key));
    return objects.length === 1 ? objects : undefined;
  });
  expect(left).toEqual([retry.json.storageKey]);
});
