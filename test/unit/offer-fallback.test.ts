// Mid-deploy, an API with the answering offer can meet a worker without its handler: the
// worker refuses the update unseen ("No registered handler", the SDK's words) as the
// update's outcome, and the API falls back to the plain offer and the run's result. A fake client stands in for Temporal
// (the real path is covered by answering-offer.test.ts).
import { ApplicationFailure } from '@temporalio/common';
import { WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { expect, it } from 'vitest';
import { UploadReceiver } from '../../src/upload/receive';
import type { Admission } from '../../src/upload/admission';
import { AnswerCache } from '../../src/upload/answer-cache';
import type { StoredResponse } from '../../src/upload/types';
import { fakeCopy, fakeRequest } from '../helpers/offer-fixtures';
import type { ObjectStore } from '../../src/storage/store';
import type { Pool } from '../../src/db/pool';
import { updates } from '../../src/temporal/names';

const req = fakeRequest;
const copy = fakeCopy;
const response: StoredResponse = { status: 201, body: JSON.stringify({ uploadId: 'u1', storageKey: copy.storageKey }), uploadId: 'u1' };

const noHandler = () =>
  new WorkflowUpdateFailedError(
    'Workflow Update failed',
    ApplicationFailure.nonRetryable(`No registered handler for update: ${updates.offerCopyForAnswer}`),
  );

/** A client whose answering offer ends as `outcome` (after `delayMs`: learnt by polling), or whose start call throws `refusal`. */
function receiverWith(opts: { refusal?: Error; outcome?: () => Error; delayMs?: number }) {
  const sent: string[] = [];
  const deleted: string[] = [];
  const temporal = {
    withDeadline: (_deadline: number, fn: () => Promise<unknown>) => fn(),
    withAbortSignal: (_signal: AbortSignal, fn: () => Promise<unknown>) => fn(),
    workflow: {
      startUpdateWithStart: async (def: { name: string }) => {
        sent.push(def.name);
        if (opts.refusal) throw opts.refusal;
        return {
          result: async () => {
            if (opts.delayMs) await new Promise((r) => setTimeout(r, opts.delayMs));
            throw opts.outcome!();
          },
        };
      },
      executeUpdateWithStart: async (def: { name: string }) => {
        sent.push(def.name);
        return 'accepted';
      },
      getHandle: () => ({ result: async () => response }),
    },
  } as unknown as Client;
  const store = { delete: async (key: string) => void deleted.push(key) } as unknown as ObjectStore;
  const pool = { query: async () => ({ rowCount: 0, rows: [] }) } as unknown as Pool;
  const receiver = new UploadReceiver({
    pool,
    store,
    placement: { prefixFor: async () => 'tenants/t/keys/k/' },
    temporal,
    taskQueue: 'q',
    receiveTimeoutSeconds: 60,
    downstream: {
      transcodeQueue: 't',
      webhookRetry: { attemptTimeoutSeconds: 1, initialSeconds: 1, coefficient: 2, maxIntervalSeconds: 1, maxAttempts: 1 },
    },
    answers: new AnswerCache(0),
    admission: { admit: async () => {}, release: async () => {} } as unknown as Admission,
  });
  return { receiver, sent, deleted };
}

it('falls back to the plain offer and the run result when the worker has no answering handler', async () => {
  const { receiver, sent, deleted } = receiverWith({ outcome: noHandler });
  const outcome = await receiver.deliver(req, copy, 5_000);
  expect(outcome).toMatchObject({ kind: 'answer', replayed: false, response });
  expect(sent).toEqual([updates.offerCopyForAnswer, updates.offerCopy]);
  expect(deleted).toEqual([]); // the answer names this copy
});

it('offers plainly even when the caller will not wait (respond-async): the copy is never left unoffered', async () => {
  const { receiver, sent } = receiverWith({ outcome: noHandler });
  expect(await receiver.deliver(req, copy, 0)).toMatchObject({ kind: 'processing' });
  expect(sent).toEqual([updates.offerCopyForAnswer, updates.offerCopy]);
});

it('falls back too when the refusal is learnt only by polling the update', async () => {
  const { receiver, sent } = receiverWith({ outcome: noHandler, delayMs: 20 });
  expect(await receiver.deliver(req, copy, 5_000)).toMatchObject({ kind: 'answer', response });
  expect(sent).toEqual([updates.offerCopyForAnswer, updates.offerCopy]);
});

it('does not fall back on other refusals: a reused key is 422 and the copy goes', async () => {
  const { receiver, sent, deleted } = receiverWith({
    refusal: new WorkflowUpdateFailedError(
      'Workflow Update failed',
      ApplicationFailure.nonRetryable('Idempotency-Key was first used with a different request', 'idempotency_key_reuse'),
    ),
  });
  await expect(receiver.deliver(req, copy, 5_000)).rejects.toMatchObject({ code: 'idempotency_key_reuse' });
  expect(sent).toEqual([updates.offerCopyForAnswer]);
  expect(deleted).toEqual([copy.storageKey]);
});

it('a run that fails fails the waiting offer: upload_failed, no fallback', async () => {
  const { receiver, sent } = receiverWith({
    outcome: () =>
      new WorkflowUpdateFailedError(
        'Workflow Update failed',
        ApplicationFailure.nonRetryable('The upload could not be completed', 'upload_failed'),
      ),
  });
  await expect(receiver.deliver(req, copy, 5_000)).rejects.toMatchObject({ code: 'upload_failed' });
  expect(sent).toEqual([updates.offerCopyForAnswer]);
});

it('an update outcome that cannot be read (the run reset or terminated, the connection lost) is answered by the run result, with no second offer', async () => {
  for (const delayMs of [0, 20]) {
    const { receiver, sent, deleted } = receiverWith({
      outcome: () => Object.assign(new Error('14 UNAVAILABLE: connection dropped'), { code: 14 }),
      delayMs,
    });
    expect(await receiver.deliver(req, copy, 5_000)).toMatchObject({ kind: 'answer', replayed: false, response });
    expect(sent).toEqual([updates.offerCopyForAnswer]);
    expect(deleted).toEqual([]);
  }
});
