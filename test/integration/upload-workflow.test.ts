// The upload workflow's branches at their own level: the real workflow code (the run's one
// bundle) on the shared dev server, driven through TestWorkflowEnvironment, with recording
// activities in place of the store and the database. Abandoned, adopted, rejected, key reuse,
// revision 3's frozen path, and an import's run (it reads its own copy).
import { randomUUID } from 'node:crypto';
import { WorkflowFailedError, WorkflowUpdateFailedError, WorkflowUpdateStage } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import type { StagedCopy, StoredResponse } from '../../src/upload/types';
import { failureTypes } from '../../src/temporal/names';
import { offerCopyForAnswerUpdate, type UploadWorkflowInput } from '../../src/temporal/definitions';
import { uploadWorkflow } from '../../workflows';
import { recorder, useWorkflowWorker } from '../helpers/workflow-worker';
import type { ImportFetch } from '../../activities/imports/import-activities';

const FINGERPRINT = 'f'.repeat(64);
const answer = (uploadId: string, status = 201): StoredResponse => ({
  status,
  body: JSON.stringify({ uploadId, storageKey: 'k', bytes: 4, sha256: 'a'.repeat(64), createdAt: '2026-01-01T00:00:00Z' }),
  uploadId,
});

const { calls, called, record } = recorder();
/** Per-test behaviour of the activities. */
let behaviour: {
  committed?: StoredResponse | null;
  commit?: (records: { rejection?: unknown; uploadId: string }) => StoredResponse | Promise<StoredResponse>;
  fetch?: (job: ImportFetch) => unknown;
} = {};

const activities = {
  findCommittedAnswer: record('findCommittedAnswer', () => behaviour.committed ?? null),
  commitUpload: record('commitUpload', (records) => (behaviour.commit ?? ((r) => answer(r.uploadId)))(records)),
  commitObject: record('commitObject'),
  commitRecords: record('commitRecords', (records) => (behaviour.commit ?? ((r) => answer(r.uploadId)))(records)),
  startDownstream: record('startDownstream'),
  discardCopy: record('discardCopy'),
  expireIdleSession: record('expireIdleSession', () => ({ expired: true, secondsLeft: 0 })),
  fetchImport: record('fetchImport', (job: ImportFetch) => behaviour.fetch!(job)),
  failImport: record('failImport'),
};

const workflows = useWorkflowWorker('upload-workflow', activities);

function input(over: Partial<UploadWorkflowInput> = {}): UploadWorkflowInput {
  return {
    tenantId: 't1',
    idempotencyKey: randomUUID(),
    fingerprint: FINGERPRINT,
    contentType: 'image/png',
    fileName: 'a.png',
    declaredBytes: 4,
    declaredSha256: null,
    receiveTimeoutSeconds: 30,
    lostCommitProbeSeconds: 30,
    downstream: {
      transcodeQueue: 'transcode',
      webhookRetry: { attemptTimeoutSeconds: 5, initialSeconds: 1, coefficient: 2, maxIntervalSeconds: 10, maxAttempts: 3 },
    },
    revision: 5,
    ...over,
  };
}

const copy = (over: Partial<StagedCopy> = {}): StagedCopy => ({
  attemptId: randomUUID(),
  fingerprint: FINGERPRINT,
  storageKey: `tenants/t1/keys/x/${randomUUID()}`,
  bytes: 4,
  sha256: 'a'.repeat(64),
  sniffedType: 'image/png',
  ...over,
});

async function start(i: UploadWorkflowInput) {
  calls.length = 0;
  return workflows.env.client.workflow.start(uploadWorkflow, {
    taskQueue: workflows.taskQueue,
    workflowId: `upload-wf-test/${randomUUID()}`,
    args: [i],
  });
}

async function failureOf(run: Promise<unknown>): Promise<ApplicationFailure> {
  const err = await run.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(WorkflowFailedError);
  const cause = (err as WorkflowFailedError).cause;
  expect(cause).toBeInstanceOf(ApplicationFailure);
  return cause as ApplicationFailure;
}

describe('the upload workflow', () => {
  it('commits the first offered copy in one step and answers every offer with the committed answer', async () => {
    // The commit waits until both offers are taken in, so the second meets a run still open.
    let bothTaken!: () => void;
    const taken = new Promise<void>((r) => (bothTaken = r));
    behaviour = { commit: async (r) => (await taken, answer(r.uploadId)) };
    const handle = await start(input());
    const offers = await Promise.all(
      [copy(), copy()].map((c) => handle.startUpdate(offerCopyForAnswerUpdate, { args: [c], waitForStage: WorkflowUpdateStage.ACCEPTED })),
    );
    bothTaken();
    const [a, b] = await Promise.all([offers[0]!.result(), offers[1]!.result()]);
    const result = await handle.result();
    expect([a.offer, b.offer].sort()).toEqual(['accepted', 'not_needed']);
    expect(a.response).toEqual(result);
    expect(b.response).toEqual(result);
    expect(called('commitUpload')).toHaveLength(1);
    expect(called('commitObject')).toHaveLength(0);
    expect(called('discardCopy')).toHaveLength(0);
  });

  it('captures no promise stacks in the sandbox (workflows/sandbox.ts): the stack-trace query of a waiting run names no frame', async () => {
    behaviour = {};
    const handle = await start(input({ receiveTimeoutSeconds: 60 }));
    try {
      const stack = await handle.query<string>('__stack_trace');
      expect(typeof stack).toBe('string');
      expect(stack).not.toMatch(/\bat\b/);
      const enhanced = await handle.query<{ stacks: { locations: unknown[] }[] }>('__enhanced_stack_trace');
      expect(enhanced.stacks.length).toBeGreaterThan(0);
      expect(enhanced.stacks.flatMap((s) => s.locations)).toEqual([]);
    } finally {
      await handle.terminate('done');
    }
  });

  it('is abandoned when no copy arrives in time (failed, so the key can start afresh)', async () => {
    behaviour = {};
    const handle = await start(input({ receiveTimeoutSeconds: 1 }));
    expect((await failureOf(handle.result())).type).toBe(failureTypes.abandoned);
    expect(called('commitUpload')).toHaveLength(0);
  });

  it('adopts an answer a lost workflow task committed and starts the downstream run it never started', async () => {
    behaviour = { committed: answer('11111111-1111-4111-8111-111111111111') };
    const handle = await start(input({ lostCommitProbeSeconds: 1 }));
    expect(await handle.result()).toEqual(behaviour.committed);
    expect(called('commitUpload')).toHaveLength(0);
    expect(called('startDownstream')).toHaveLength(1);
  });

  it('rejects bytes that are not the declared type: the rejection is the committed answer, the copy goes', async () => {
    behaviour = { commit: (r) => ({ ...answer(r.uploadId, 422), uploadId: null }) };
    const handle = await start(input({ contentType: 'image/png' }));
    const offered = copy({ sniffedType: 'application/pdf' });
    const { response } = await handle.executeUpdate(offerCopyForAnswerUpdate, { args: [offered] });
    expect(response.status).toBe(422);
    await handle.result();
    expect(called('commitUpload')[0]!.args[0]).toMatchObject({ rejection: { code: 'content_type_mismatch' } });
    expect(called('discardCopy').map((c) => c.args[0])).toEqual([offered.storageKey]);
  });

  it('refuses a different request under the key before it reaches history, and fails when the key row is held elsewhere', async () => {
    behaviour = {
      commit: () => {
        throw ApplicationFailure.nonRetryable('held', failureTypes.keyReuse);
      },
    };
    const handle = await start(input());
    const other = await handle.executeUpdate(offerCopyForAnswerUpdate, { args: [copy({ fingerprint: 'e'.repeat(64) })] }).catch((e) => e);
    expect(other).toBeInstanceOf(WorkflowUpdateFailedError);
    expect((other as WorkflowUpdateFailedError).cause).toMatchObject({ type: failureTypes.keyReuse });

    const offered = copy();
    const waiting = handle.executeUpdate(offerCopyForAnswerUpdate, { args: [offered] }).catch((e) => e);
    expect((await failureOf(handle.result())).type).toBe(failureTypes.keyReuse);
    // The offer waiting for the answer fails with the run rather than hang.
    expect(((await waiting) as WorkflowUpdateFailedError).cause).toMatchObject({ type: failureTypes.keyReuse });
    expect(called('discardCopy').map((c) => c.args[0])).toEqual([offered.storageKey]);
    // Refused: no committed answer to look for.
    expect(called('findCommittedAnswer')).toHaveLength(0);
  });

  it('runs revision 3 through its frozen path: the object, then the records, then a downstream child', async () => {
    behaviour = { commit: (r) => ({ ...answer(r.uploadId), downstreamNeeded: false }) };
    const handle = await start(input({ revision: 3 }));
    await handle.executeUpdate(offerCopyForAnswerUpdate, { args: [copy()] });
    await handle.result();
    expect(calls.map((c) => c.name)).toEqual(['commitObject', 'commitRecords']);
  });

  describe('an import', () => {
    const uploadId = '00000000-0000-4000-8000-0000000000aa';
    const importing = (over: Partial<UploadWorkflowInput> = {}) =>
      input({
        contentType: 'application/octet-stream',
        import: {
          uploadId,
          url: 'https://origin.example/a.png',
          storageKey: `tenants/t1/keys/x/${uploadId}`,
          attemptId: uploadId,
          maxBytes: 1000,
          typeDeclared: false,
          heartbeatSeconds: 5,
          attemptSeconds: 10,
          maxAttempts: 2,
        },
        ...over,
      });

    it("reads its own copy and commits it under the announced id, with the origin's media type", async () => {
      behaviour = { fetch: (job) => ({ copy: copy({ fingerprint: job.fingerprint, attemptId: uploadId }), contentType: 'image/png' }) };
      const handle = await start(importing());
      expect(await handle.result()).toEqual(answer(uploadId));
      expect(called('fetchImport')).toHaveLength(1);
      const [records] = called('commitUpload')[0]!.args as [{ uploadId: string; request: UploadWorkflowInput; copy: StagedCopy }];
      expect(records).toMatchObject({ uploadId, request: { contentType: 'image/png' }, copy: { attemptId: uploadId } });
      expect(called('failImport')).toEqual([]);
    });

    it("records the origin's refusal as the key's answer, with its status, and reads no more", async () => {
      behaviour = {
        fetch: () => {
          throw ApplicationFailure.create({
            message: 'The origin answered 404.',
            type: 'import_failed',
            nonRetryable: true,
            details: [{ originStatus: 404 }],
          });
        },
        commit: () => ({ status: 422, body: '{"error":"import_failed"}', uploadId: null }),
      };
      const handle = await start(importing());
      expect((await handle.result()).status).toBe(422);
      expect(called('fetchImport')).toHaveLength(1);
      const [records] = called('commitUpload')[0]!.args as [{ rejection: unknown; copy?: unknown }];
      expect(records.rejection).toEqual({ code: 'import_failed', detail: 'The origin answered 404.', extra: { originStatus: 404 } });
      expect(records.copy).toBeUndefined();
    });

    it('retries a read that failed mid-file up to its attempts, then records that the file could not be read', async () => {
      behaviour = {
        fetch: () => {
          throw ApplicationFailure.create({ message: 'cut', type: 'import_failed', nonRetryable: false });
        },
        commit: () => ({ status: 422, body: '{}', uploadId: null }),
      };
      const handle = await start(importing());
      await handle.result();
      expect(called('fetchImport')).toHaveLength(2);
      const [records] = called('commitUpload')[0]!.args as [{ rejection: { code: string } }];
      expect(records.rejection.code).toBe('import_failed');
      // Our own failure (not the origin's) after the retries: the generic refusal.
      behaviour = {
        fetch: () => {
          throw new Error('store down');
        },
        commit: () => ({ status: 422, body: '{}', uploadId: null }),
      };
      await (await start(importing())).result();
      expect((called('commitUpload')[0]!.args[0] as { rejection: unknown }).rejection).toEqual({
        code: 'import_failed',
        detail: 'The file could not be read from its origin.',
      });
    });

    it('marks the import failed when its run fails without an answer (the key taken meanwhile)', async () => {
      behaviour = {
        fetch: (job) => ({ copy: copy({ fingerprint: job.fingerprint }), contentType: 'image/png' }),
        commit: () => {
          throw ApplicationFailure.nonRetryable('held', failureTypes.keyReuse);
        },
      };
      const handle = await start(importing());
      expect((await failureOf(handle.result())).type).toBe(failureTypes.keyReuse);
      expect(called('discardCopy')).toHaveLength(1);
      expect(called('failImport').map((c) => c.args)).toEqual([[uploadId]]);
    });
  });
});
