// An offer whose call to Temporal ends without an outcome (its deadline passed, the
// connection dropped) is answered by what Temporal says of the key's run: open → 409
// `idempotency_in_progress` (Temporal is up, only slow: many offers queued on one run), and so
// is a run that has just ended (its answer is a retry away); no answer or no run at all → 503
// `temporal_unavailable`. A fake client stands in for Temporal;
// the real outage path is outages.test.ts, the real crowd on one key concurrency.test.ts.
import { status as grpcStatus } from '@grpc/grpc-js';
import { ServiceError, WorkflowNotFoundError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { expect, it } from 'vitest';
import { CopyOffer } from '../../src/upload/offer';
import { Problem } from '../../src/errors';
import { uploadWorkflowId } from '../../src/temporal/ids';
import { fakeCopy, fakeRequest } from '../helpers/offer-fixtures';

const req = fakeRequest;
const copy = fakeCopy;

const deadlineExceeded = () =>
  new ServiceError('Failed to start update', { cause: Object.assign(new Error('deadline'), { code: grpcStatus.DEADLINE_EXCEEDED }) });

function offerWith(describe: () => Promise<{ status: { name: string } }>, failure: () => Error = deadlineExceeded) {
  const described: string[] = [];
  const temporal = {
    withDeadline: (_deadline: number, fn: () => Promise<unknown>) => fn(),
    withAbortSignal: (_signal: AbortSignal, fn: () => Promise<unknown>) => fn(),
    workflow: {
      startUpdateWithStart: async () => {
        throw failure();
      },
      getHandle: (id: string) => ({
        describe: () => {
          described.push(id);
          return describe();
        },
      }),
    },
  } as unknown as Client;
  const offers = new CopyOffer({
    temporal,
    startOptions: (_r, workflowId) => ({ workflowId, taskQueue: 'q', args: [] as never, workflowIdConflictPolicy: 'USE_EXISTING' }),
  });
  return { offers, described };
}

async function refusal(offers: CopyOffer): Promise<Problem> {
  const err = await offers.offer(req, 'wf-k1', copy, 1_000).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(Problem);
  return err as Problem;
}

it('the key run is open: 409 idempotency_in_progress with Retry-After, the cause kept', async () => {
  const { offers, described } = offerWith(async () => ({ status: { name: 'RUNNING' } }));
  const err = await refusal(offers);
  expect(described).toEqual([uploadWorkflowId(req.tenantId, req.idempotencyKey)]);
  expect(err.code).toBe('idempotency_in_progress');
  expect(err.status).toBe(409);
  expect(err.retryAfter).toBeGreaterThan(0);
  expect(err.cause).toBeInstanceOf(ServiceError);
});

it.each(['COMPLETED', 'FAILED'])(
  'the key run has just ended (%s): 409 idempotency_in_progress, the retry replays or starts afresh',
  async (name) => {
    const { offers } = offerWith(async () => ({ status: { name } }));
    const err = await refusal(offers);
    expect(err.code).toBe('idempotency_in_progress');
    expect(err.detail).toContain('just finished');
    expect(err.retryAfter).toBeGreaterThan(0);
  },
);

it.each([
  ['Temporal does not answer the probe', () => Promise.reject(deadlineExceeded())],
  ['the key has no run at all', () => Promise.reject(new WorkflowNotFoundError('not found', 'wf-k1', undefined))],
])('%s: 503 temporal_unavailable', async (_name, describe) => {
  const { offers, described } = offerWith(describe);
  const err = await refusal(offers);
  expect(described).toEqual([uploadWorkflowId(req.tenantId, req.idempotencyKey)]);
  expect(err.code).toBe('temporal_unavailable');
  expect(err.status).toBe(503);
  expect(err.retryAfter).toBeGreaterThan(0);
});

it('an update the run refused is an outcome, not a slow Temporal: 503 without asking about the run', async () => {
  const refused = () =>
    new WorkflowUpdateFailedError('Workflow Update failed', ApplicationFailure.nonRetryable('refused', 'SomethingElse'));
  const { offers, described } = offerWith(async () => ({ status: { name: 'RUNNING' } }), refused);
  const err = await refusal(offers);
  expect(described).toEqual([]);
  expect(err.code).toBe('temporal_unavailable');
});
