// The answering offer (early return, #14): the API's offer update returns the committed
// answer, so a new upload is answered without reading the run's history. Here the receiver
// runs over a Temporal client whose RPCs are counted, against the real worker.
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { UploadRequest } from '../../src/upload/types';
import { uploadWorkflowId } from '../../src/temporal/ids';
import { updates, workflowIds } from '../../src/temporal/names';
import { startTestStack, type TestStack } from '../helpers/stack';
import { stackReceiver } from '../helpers/receiver';
import { postUpload } from '../helpers/http';
import { rowsForKey } from '../helpers/inspect';
import { uploadRequest } from '../helpers/requests';
import { png } from '../helpers/media';

let stack: TestStack;
let tenant: { tenantId: string; apiKey: string };
const calls = new Map<string, number>();

beforeAll(async () => {
  stack = await startTestStack('answering');
  tenant = await stack.createTenant();
  // Count every RPC the receiver's client makes (the service object is protobufjs's).
  const service = stack.temporal.workflowService as unknown as Record<string, (...args: unknown[]) => unknown>;
  for (const name of ['getWorkflowExecutionHistory', 'pollWorkflowExecutionUpdate', 'executeMultiOperation', 'updateWorkflowExecution']) {
    const original = service[name]!.bind(service);
    service[name] = (...args: unknown[]) => {
      calls.set(name, (calls.get(name) ?? 0) + 1);
      return original(...args);
    };
  }
});
afterAll(() => stack?.stop());

const receiver = () => stackReceiver(stack);

// What POST /v1/uploads makes of the same request, so the HTTP route can replay it.
const request = (key: string, body: Buffer): UploadRequest => uploadRequest(tenant.tenantId, key, body);

it('answers a new upload from the offer, never reading the run history; a second copy gets the same answer', async () => {
  const key = `answer-${randomUUID()}`;
  const body = Buffer.from('answered by the offer\n'.repeat(50));
  const req = request(key, body);
  calls.clear();
  const first = await receiver().receive(req, Readable.from([body]), 30_000);
  expect(first.kind).toBe('answer');
  if (first.kind !== 'answer') return;
  expect(first.response.status).toBe(201);
  expect(first.replayed).toBe(false);
  expect(calls.get('executeMultiOperation')).toBe(1);
  // The outcome came back with the offer: no history read, no separate update poll.
  expect(calls.get('getWorkflowExecutionHistory') ?? 0).toBe(0);
  expect(calls.get('pollWorkflowExecutionUpdate') ?? 0).toBe(0);

  // The run recorded the answering offer, completed with exactly the answer the caller got.
  const history = await stack.history(uploadWorkflowId(tenant.tenantId, key));
  const accepted = history.events!.filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes);
  expect(accepted.map((e) => e.workflowExecutionUpdateAcceptedEventAttributes!.acceptedRequest!.input!.name)).toEqual([
    updates.offerCopyForAnswer,
  ]);
  const completed = history.events!.find((e) => e.workflowExecutionUpdateCompletedEventAttributes)!;
  const payload = completed.workflowExecutionUpdateCompletedEventAttributes!.outcome!.success!.payloads![0]!;
  expect(JSON.parse(Buffer.from(payload.data!).toString('utf8'))).toEqual({ offer: 'accepted', response: first.response });
  // Nothing downstream (text, no endpoint): one workflow task, the commit one local activity,
  // no phase recorded, no child: 8 events in all.
  expect(history.events!.map((e) => temporal.api.enums.v1.EventType[e.eventType!])).toEqual([
    'EVENT_TYPE_WORKFLOW_EXECUTION_STARTED',
    'EVENT_TYPE_WORKFLOW_TASK_SCHEDULED',
    'EVENT_TYPE_WORKFLOW_TASK_STARTED',
    'EVENT_TYPE_WORKFLOW_TASK_COMPLETED',
    'EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED',
    'EVENT_TYPE_MARKER_RECORDED',
    'EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED',
    'EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED',
  ]);

  // A copy offered after the commit is not needed and gets the committed answer (the key's
  // run is complete now, so it is answered from Postgres), byte for byte.
  const again = await receiver().receive(req, Readable.from([body]), 30_000);
  expect(again).toMatchObject({ kind: 'answer', replayed: true, response: { status: 201, body: first.response.body } });
});

it('an upload with downstream work is one workflow task too: the commit starts downstream/{uploadId}, once, as a workflow of its own', async () => {
  const key = `answer-png-${randomUUID()}`;
  const res = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: await png(64, 48), contentType: 'image/png' });
  expect(res.status, res.text).toBe(201);
  const upload = stack.temporal.workflow.getHandle(uploadWorkflowId(tenant.tenantId, key));
  const events = (await upload.fetchHistory()).events!;
  expect(events.filter((e) => e.workflowTaskCompletedEventAttributes)).toHaveLength(1);
  expect(events).toHaveLength(8);
  expect(events.some((e) => e.startChildWorkflowExecutionInitiatedEventAttributes)).toBe(false);
  const downstream = stack.temporal.workflow.getHandle(workflowIds.downstream(res.json.uploadId));
  const result = await downstream.result();
  expect(result).toMatchObject({ processing: 'ready' });
  const described = await downstream.describe();
  expect(described.parentExecution).toBeUndefined();
  expect(described.taskQueue).toBe((await upload.describe()).taskQueue);
  // A replay starts nothing: the same one downstream run.
  const again = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: await png(64, 48), contentType: 'image/png' });
  expect(again.headers.get('idempotent-replayed')).toBe('true');
  expect((await downstream.describe()).runId).toBe(described.runId);
});

it('answers copies racing into one run from the offer: one upload, every caller the same body', async () => {
  const key = `answer-race-${randomUUID()}`;
  const body = Buffer.from('raced\n'.repeat(100));
  const outcomes = await Promise.all(
    Array.from({ length: 6 }, () => receiver().receive(request(key, body), Readable.from([body]), 30_000)),
  );
  const bodies = new Set(outcomes.map((o) => (o.kind === 'answer' ? o.response.body : 'processing')));
  expect(bodies.size).toBe(1);
  expect(outcomes.filter((o) => o.kind === 'answer' && !o.replayed)).toHaveLength(1);
  // The HTTP route replays the same answer.
  const http = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body, contentType: 'text/plain' });
  expect(http.status).toBe(201);
  expect(http.text).toBe([...bodies][0]);
});

it('fails the waiting offer with the run: a copy that vanished is upload_failed, nothing recorded, the key free', async () => {
  const key = `answer-failed-${randomUUID()}`;
  const body = Buffer.from('this copy is never in the store');
  const req = request(key, body);
  const copy = {
    attemptId: randomUUID(),
    fingerprint: req.fingerprint,
    storageKey: `missing/${randomUUID()}`,
    bytes: body.length,
    sha256: req.declaredSha256!,
    sniffedType: null,
  };
  // The commit finds no object (non-retryable): the run fails and so does the waiting offer.
  await expect(receiver().deliver(req, copy, 30_000)).rejects.toMatchObject({ code: 'upload_failed' });
  const { status } = await stack.temporal.workflow.getHandle(uploadWorkflowId(tenant.tenantId, key)).describe();
  expect(status.name).toBe('FAILED');
  expect(await rowsForKey(stack.runtime.pool, tenant.tenantId, key)).toEqual({ uploads: [], keys: [] });
  // The failed run does not hold the key: the real bytes under it make one upload.
  const http = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body, contentType: 'text/plain' });
  expect(http.status).toBe(201);
  expect((await rowsForKey(stack.runtime.pool, tenant.tenantId, key)).uploads).toHaveLength(1);
});
