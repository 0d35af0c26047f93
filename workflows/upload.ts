// The upload workflow: one execution per (tenant, Idempotency-Key). It waits for the first
// complete copy of the body offered by any attempt, commits the object, writes the records
// in one transaction and returns the response every later request replays.
import {
  ActivityFailure,
  ApplicationFailure,
  ParentClosePolicy,
  allHandlersFinished,
  condition,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  startChild,
  upsertSearchAttributes,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError, type ActivityOptions } from '@temporalio/common';
import type { Activities } from '../activities';
import type { OfferOutcome, StagedCopy, StoredResponse, UploadPhase } from '../src/upload/types';
import { failureTypes, searchAttributes, workflowIds } from '../src/temporal/names';
import { CHECKED_TYPES, CHECKED_TYPES_BEFORE_R5, contentTypeMismatch } from '../src/upload/sniff';
import { downstreamInput, downstreamSummary, needsDownstream } from '../src/downstream/types';
import { downstreamWorkflow } from './downstream';
import { offerCopyForAnswerUpdate, offerCopyUpdate, type UploadWorkflowInput } from './definitions';

const commitOptions: ActivityOptions = {
  startToCloseTimeout: '30 seconds',
  retry: {
    initialInterval: '500 milliseconds',
    backoffCoefficient: 2,
    maximumInterval: '10 seconds',
    nonRetryableErrorTypes: [failureTypes.stagedCopyMissing, failureTypes.stagedCopyCorrupt],
  },
};
// The commit steps are short (a HEAD, one transaction): as local activities they skip two
// task-queue round trips per upload (measured: ~1.7x uploads/s). A local activity holds
// the workflow task (and so the offer's acknowledgement) while it retries; past a 2 s
// backoff it retries on a timer instead, releasing the task.
const localStep = (summary: string) => proxyLocalActivities<Activities>({ ...commitOptions, localRetryThreshold: '2 seconds', summary });
const local = {
  findCommittedAnswer: localStep('Look for an answer a lost workflow task committed').findCommittedAnswer,
  commitUpload: localStep('Verify the accepted copy, write the upload row and the key row in one transaction, start the downstream run')
    .commitUpload,
  startDownstream: localStep('Start the downstream run of an upload a lost workflow task committed').startDownstream,
  // Revision 3 took the commit as these two steps; its runs still replay through them.
  commitObject: localStep('Verify the accepted copy in the object store').commitObject,
  commitRecords: localStep('Write the upload row and the key row in one transaction').commitRecords,
  discardCopy: localStep('Delete the copy of a rejected upload').discardCopy,
};

/**
 * Revision 4 commits in one local activity that also starts the downstream run (a workflow
 * of its own, not a child: the parent needs no second task to learn it started) and records
 * no `completed` phase (the run's Completed status says it): every committed upload is one
 * workflow task and 8 history events; revision 3 took 10 to 15 and two tasks with a child.
 */
const oneStepCommit = (input: UploadWorkflowInput) => (input.revision ?? 0) >= 4;

function setPhase(phase: UploadPhase): void {
  upsertSearchAttributes([{ key: searchAttributes.phase, value: phase }]);
}

export async function uploadWorkflow(input: UploadWorkflowInput): Promise<StoredResponse> {
  const uploadId = uuid4();
  let accepted: StagedCopy | undefined;

  // Set once the run's answer is known (committed, or failed): offerCopyForAnswer waits for it.
  let settled: { response: StoredResponse } | { failure: ApplicationFailure } | undefined;

  const take = (copy: StagedCopy): OfferOutcome => {
    if (accepted) return 'not_needed';
    accepted = copy;
    return 'accepted';
  };
  // Rejected before it is written to history: a different request under the same key.
  const validator = (copy: StagedCopy) => {
    if (copy.fingerprint !== input.fingerprint) {
      throw ApplicationFailure.nonRetryable('Idempotency-Key was first used with a different request', failureTypes.keyReuse);
    }
  };
  setHandler(offerCopyUpdate, take, { validator });
  setHandler(
    offerCopyForAnswerUpdate,
    async (copy) => {
      const offer = take(copy);
      await condition(() => settled !== undefined);
      if ('failure' in settled!) throw settled.failure;
      return { offer, response: settled!.response };
    },
    { validator },
  );

  const waited = await awaitCopy(input, () => accepted !== undefined);
  if (waited === 'abandoned') {
    setPhase('abandoned');
    // Failing (not completing) lets a later request with the same key start afresh.
    throw ApplicationFailure.nonRetryable('No attempt delivered a complete body in time', failureTypes.abandoned);
  }
  if (waited !== 'copy') return adopt(waited);
  try {
    const response = await commitAccepted(input, uploadId, accepted!, (r) => (settled = { response: r }));
    await condition(allHandlersFinished);
    return response;
  } catch (err) {
    // Refused at the commit (the key held elsewhere, the token used up): nothing was written.
    const refused = err instanceof ApplicationFailure && (err.type === failureTypes.keyReuse || err.type === failureTypes.tokenExhausted);
    // E.g. the accepted copy is gone because a lost task committed another one.
    const committed = !refused ? await local.findCommittedAnswer(input) : null;
    if (committed) return adopt(committed);
    // Waiting offers fail with the run (never hang): the API answers 422, 403 or 500 from them.
    settled = {
      failure: refused
        ? (err as ApplicationFailure)
        : ApplicationFailure.nonRetryable('The upload could not be completed', failureTypes.uploadFailed),
    };
    await condition(allHandlersFinished);
    throw err;
  }

  /** Completes with an answer a lost workflow task committed, firing the downstream child it never fired. */
  async function adopt(response: StoredResponse): Promise<StoredResponse> {
    settled = { response };
    if (!oneStepCommit(input)) setPhase('completed');
    if (needsDownstream(response)) {
      if (oneStepCommit(input)) await local.startDownstream(input, response);
      else await startDownstream(input, response);
    }
    await condition(allHandlersFinished);
    return response;
  }
}

/**
 * Commits the accepted copy (object, then records in one transaction), reports the answer
 * through `answered` as soon as it is committed, then fires the downstream child.
 */
async function commitAccepted(
  input: UploadWorkflowInput,
  uploadId: string,
  copy: StagedCopy,
  answered: (response: StoredResponse) => void,
): Promise<StoredResponse> {
  const { commitObject, commitRecords, commitUpload, discardCopy } = local;
  const oneStep = oneStepCommit(input);
  const workflowId = workflowInfo().workflowId;
  const startedAtMs = workflowInfo().startTime.getTime();
  const checked = (input.revision ?? 0) >= 5 ? CHECKED_TYPES : CHECKED_TYPES_BEFORE_R5;
  const mismatch = contentTypeMismatch(input.contentType, copy.sniffedType, checked);
  let response: StoredResponse;
  // Another route's request (or another upload request) holds the key row, or the upload
  // token's uploads are used up: nothing was written, the copy goes, and the run fails so the
  // API answers 422 or 403 (never that row's answer) and the key stays free.
  const commit = (records: Parameters<typeof commitUpload>[0]) =>
    (oneStep ? commitUpload(records) : commitRecords(records)).catch(async (err: unknown) => {
      const type = err instanceof ActivityFailure && err.cause instanceof ApplicationFailure ? err.cause.type : undefined;
      if (type !== failureTypes.keyReuse && type !== failureTypes.tokenExhausted) throw err;
      await discardCopy(copy.storageKey);
      setPhase('rejected');
      throw ApplicationFailure.nonRetryable(
        type === failureTypes.keyReuse ? 'The Idempotency-Key is held by another request' : "The upload token's uploads are used up",
        type,
      );
    });
  if (mismatch) {
    response = await commit({
      request: input,
      workflowId,
      uploadId,
      startedAtMs,
      rejection: { code: 'content_type_mismatch', detail: mismatch },
    });
    answered(response);
    await discardCopy(copy.storageKey);
    setPhase('rejected');
  } else {
    if (!oneStep) await commitObject({ copy });
    response = await commit({ request: input, workflowId, uploadId, startedAtMs, copy });
    answered(response);
    if (oneStep) return response; // the commit started the downstream run
    setPhase('completed');
    // No step for the file and no endpoint to notify (settled in the transaction) needs no child.
    if (needsDownstream(response)) await startDownstream(input, response);
  }
  return response;
}

/**
 * Waits for the first copy: up to the receive timeout, or for a resumable session as long as
 * it keeps being written to (one timer and one check per idle period, never per chunk).
 * It also asks, after `lostCommitProbeSeconds` of waiting and then at doubling
 * intervals, whether a lost workflow task already committed this request's answer, and
 * returns that answer if so.
 */
async function awaitCopy(input: UploadWorkflowInput, arrived: () => boolean): Promise<'copy' | 'abandoned' | StoredResponse> {
  // The lost task committed before this run started waiting, so the first probe finds it;
  // later ones back off (doubling) so a long wait — a resumable session — stays a short history.
  let probeSeconds = input.lostCommitProbeSeconds ?? 60;
  /** Waits up to `seconds`, probing for a lost commit along the way. */
  const wait = async (seconds: number): Promise<'copy' | 'timeout' | StoredResponse> => {
    for (let left = seconds; left > 0;) {
      const step = Math.min(left, probeSeconds);
      if (await condition(arrived, step * 1000)) return 'copy';
      left -= step;
      const committed = await local.findCommittedAnswer(input);
      if (committed) return committed;
      probeSeconds *= 2;
    }
    return 'timeout';
  };
  if (!input.resumable) {
    const r = await wait(input.receiveTimeoutSeconds);
    return r === 'timeout' ? 'abandoned' : r;
  }
  let waitSeconds = input.resumable.idleSeconds;
  for (;;) {
    const r = await wait(waitSeconds);
    if (r !== 'timeout') return r;
    const check = await sessionStep('Expire the resumable session if it has been idle').expireIdleSession(
      input.resumable.sessionId,
      input.resumable.idleSeconds,
    );
    if (check.expired) return 'abandoned';
    waitSeconds = check.secondsLeft;
  }
}

const sessionStep = (summary: string) => proxyActivities<Activities>({ ...commitOptions, summary });

/** Revision 3: fires the downstream child exactly once per upload; the HTTP answer does not wait for it. */
async function startDownstream(input: UploadWorkflowInput, response: StoredResponse): Promise<void> {
  const args = downstreamInput(input, response.body);
  try {
    await startChild(downstreamWorkflow, {
      workflowId: workflowIds.downstream(args.uploadId),
      parentClosePolicy: ParentClosePolicy.ABANDON,
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      staticSummary: downstreamSummary(args.uploadId),
      args: [args],
    });
  } catch (err) {
    // Already started means already fired: exactly what we want.
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  }
}
