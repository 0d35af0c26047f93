// A run that no attempt ever hands a body (an API that died between starting the run and
// offering its copy) gives up after RECEIVE_TIMEOUT_SECONDS as `abandoned`: the key shows
// `failed`, nothing is recorded, and the next request with the key starts a fresh run that
// stores the upload once.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { WorkflowFailedError } from '@temporalio/client';
import { downstreamSettings } from '../../src/services';
import { uploadWorkflowId } from '../../src/temporal/ids';
import { searchAttributes } from '../../src/temporal/names';
import { uploadWorkflow } from '../../workflows';
import { getJson, postUpload } from '../helpers/http';
import { eventually, rowsForKey } from '../helpers/inspect';
import { startTestStack, type TestStack } from '../helpers/stack';
import { uploadRequest } from '../helpers/requests';

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack('abandoned');
});
afterAll(() => stack?.stop());

it('abandons a run that never receives a body, then lets the key be used once', async () => {
  const tenant = await stack.createTenant();
  const key = `abandon-${randomUUID()}`;
  const body = Buffer.from('arrives only on the second try');
  const workflowId = uploadWorkflowId(tenant.tenantId, key);
  const request = uploadRequest(tenant.tenantId, key, body);
  const run = await stack.temporal.workflow.start(uploadWorkflow, {
    workflowId,
    taskQueue: stack.config.TASK_QUEUE_UPLOADS,
    args: [
      {
        ...request,
        receiveTimeoutSeconds: 1,
        downstream: downstreamSettings(stack.config),
      },
    ],
    typedSearchAttributes: [{ key: searchAttributes.phase, value: 'receiving' }],
  });
  const failure = await run.result().catch((err) => err);
  expect(failure).toBeInstanceOf(WorkflowFailedError);
  expect(String((failure as WorkflowFailedError).cause?.message)).toMatch(/No attempt delivered a complete body/);
  expect((await run.describe()).typedSearchAttributes.get(searchAttributes.phase)).toBe('abandoned');

  const state = await getJson(`${stack.url}/v1/idempotency-keys/${key}`, tenant.apiKey);
  expect(state.json).toMatchObject({ state: 'failed', phase: 'abandoned', workflowId });
  expect(await rowsForKey(stack.runtime.pool, tenant.tenantId, key)).toMatchObject({ uploads: [], keys: [] });

  const first = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body, contentType: 'text/plain' });
  expect(first.status, first.text).toBe(201);
  const again = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body, contentType: 'text/plain' });
  expect(again.text).toBe(first.text);
  expect((await rowsForKey(stack.runtime.pool, tenant.tenantId, key)).uploads).toHaveLength(1);
  // Visibility is eventually consistent: poll until both runs are listed, closed.
  const runs = await eventually(async () => {
    const names: string[] = [];
    for await (const w of stack.temporal.workflow.list({ query: `WorkflowId = '${workflowId}'` })) names.push(w.status.name);
    return names.length === 2 && !names.includes('RUNNING') ? names.sort() : undefined;
  });
  expect(runs).toEqual(['COMPLETED', 'FAILED']);
});
