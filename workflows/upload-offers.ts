// What every revision of the upload workflow shares: the run itself (`runUpload`: take
// offered copies, the first accepted and a different request's refused before it reaches
// history; wait for one; commit it, or adopt an answer a lost task committed; fail the
// waiting offers otherwise). Revision 3 (./upload-r3.ts) and the current path (./upload.ts)
// differ only in how they commit and what adopting an answer starts.
import {
  ActivityFailure,
  ApplicationFailure,
  allHandlersFinished,
  condition,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  upsertSearchAttributes,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import type { ActivityOptions } from '@temporalio/common';
import type { Activities } from '../activities';
import type { OfferOutcome, StagedCopy, StoredResponse, UploadPhase } from '../src/upload/types';
import { failureTypes, patches, searchAttributes } from '../src/temporal/names';
import { offerCopyForAnswerUpdate, offerCopyUpdate, type UploadWorkflowInput } from '../src/temporal/definitions';
import { stepLabels } from '../src/temporal/step-labels';

export const commitOptions: ActivityOptions = {
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
export const localStep = (summary: string) =>
  proxyLocalActivities<Activities>({ ...commitOptions, localRetryThreshold: '2 seconds', summary });
const { findCommittedAnswer } = localStep(stepLabels.findCommittedAnswer);
export const { discardCopy } = localStep(stepLabels.discardCopy);

export function setPhase(phase: UploadPhase): void {
  upsertSearchAttributes([{ key: searchAttributes.phase, value: phase }]);
}

/** What every records step of a run is told: the request, the run, the upload's id. */
export interface RunRecords {
  request: UploadWorkflowInput;
  workflowId: string;
  uploadId: string;
  startedAtMs: number;
}

/** What a revision of the upload workflow decides for itself. */
export interface Revision {
  /** Commits the accepted copy under `run`; reports the answer through `answered` as soon as it is committed. */
  commit: (run: RunRecords, copy: StagedCopy, answered: (response: StoredResponse) => void) => Promise<StoredResponse>;
  /** What adopting an answer a lost workflow task committed starts (the downstream run it never started). */
  adopted: (input: UploadWorkflowInput, response: StoredResponse) => Promise<void>;
  /**
   * An import's run reads its copy itself instead of waiting for one to be offered: the copy
   * and the request as it is recorded (the media type the origin named), or the answer a
   * refused import recorded.
   */
  fetch?: (run: RunRecords) => Promise<{ copy: StagedCopy; request: UploadWorkflowInput } | StoredResponse>;
}

/** A run of a key whose copy Oncely reads itself instead of waiting for an offer (an import's). */
export type ArrivalRun = (input: UploadWorkflowInput, revision: Revision) => Promise<StoredResponse>;

/** One upload run: the first copy offered is committed once, and every offer is answered with the key's answer. */
export async function runUpload(input: UploadWorkflowInput, revision: Revision): Promise<StoredResponse> {
  // An import's upload has the id the API announced; no other run's input names one.
  const uploadId = input.import?.uploadId ?? uuid4();
  const offers = acceptOffers(input);
  if (!revision.fetch) {
    const waited = await awaitCopy(input, () => offers.accepted !== undefined);
    if (waited === 'abandoned') abandon();
    if (waited !== 'copy') return adopt(waited);
  }
  try {
    const { workflowId, startTime } = workflowInfo();
    let run: RunRecords = { request: input, workflowId, uploadId, startedAtMs: startTime.getTime() };
    if (revision.fetch) {
      const fetched = await revision.fetch(run);
      if (!('copy' in fetched)) return await answered(fetched);
      offers.take(fetched.copy);
      run = { ...run, request: fetched.request };
    }
    const response = await revision.commit(run, offers.accepted!, (r) => offers.settle({ response: r }));
    await condition(allHandlersFinished);
    return response;
  } catch (err) {
    return afterFailedCommit(input, err, offers, adopt);
  }

  async function adopt(response: StoredResponse): Promise<StoredResponse> {
    offers.settle({ response });
    await revision.adopted(input, response);
    await condition(allHandlersFinished);
    return response;
  }

  async function answered(response: StoredResponse): Promise<StoredResponse> {
    offers.settle({ response });
    await condition(allHandlersFinished);
    return response;
  }
}

/** How a run ended for the offers still waiting on it. */
type Settled = { response: StoredResponse } | { failure: ApplicationFailure };

/** The offered copies of one run: the first is accepted; offers waiting for the answer get it once settled. */
function acceptOffers(input: UploadWorkflowInput) {
  let accepted: StagedCopy | undefined;
  let settled: Settled | undefined;
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
  return {
    take,
    get accepted() {
      return accepted;
    },
    settle(outcome: Settled) {
      settled = outcome;
    },
  };
}
type Offers = ReturnType<typeof acceptOffers>;

/** No attempt delivered a whole body in time. Failing (not completing) lets a later request with the key start afresh. */
function abandon(): never {
  setPhase('abandoned');
  throw ApplicationFailure.nonRetryable('No attempt delivered a complete body in time', failureTypes.abandoned);
}

/**
 * The records step, refused when another request holds the key row or the upload token's
 * uploads are used up: nothing was written, the copy goes, and the run fails so the API
 * answers 422 or 403 (never that row's answer) and the key stays free.
 */
export async function refusable<T>(copy: StagedCopy, commit: Promise<T>): Promise<T> {
  try {
    return await commit;
  } catch (err) {
    const failure = err instanceof ActivityFailure ? err.cause : err;
    if (!isRefusal(failure)) throw err;
    await discardCopy(copy.storageKey);
    setPhase('rejected');
    throw ApplicationFailure.nonRetryable(
      failure.type === failureTypes.keyReuse ? 'The Idempotency-Key is held by another request' : "The upload token's uploads are used up",
      failure.type,
    );
  }
}

/**
 * A local activity's non-retryable failure reaches the workflow as the ApplicationFailure
 * itself, not wrapped in an ActivityFailure. Runs before the patch missed that (the API
 * deleted their copy; they failed all the same) and replay as they ran.
 */
function isRefusal(failure: unknown): failure is ApplicationFailure {
  if (!(failure instanceof ApplicationFailure)) return false;
  if (!isRefusalType(failure.type)) return false;
  return patched(patches.refusedCopyDiscarded);
}

/** The commit's refusals: nothing was written (the key held elsewhere, the token used up, a byte quota reached). */
function isRefusalType(type: string | undefined | null): boolean {
  return type === failureTypes.keyReuse || type === failureTypes.tokenExhausted || type === failureTypes.byteQuotaExceeded;
}

/**
 * After a commit that failed: an answer a lost workflow task committed is adopted (e.g. the
 * accepted copy is gone because that task committed another one); otherwise the waiting
 * offers fail with the run (never hang: the API answers 422, 403 or 500 from them).
 */
async function afterFailedCommit(
  input: UploadWorkflowInput,
  err: unknown,
  offers: Offers,
  adopt: (response: StoredResponse) => Promise<StoredResponse>,
): Promise<StoredResponse> {
  const refused = err instanceof ApplicationFailure && isRefusalType(err.type);
  const committed = !refused ? await findCommittedAnswer(input) : null;
  if (committed) return adopt(committed);
  // A tenant closed while the body arrived refuses the commit: its offers are told so (410).
  const told = refused || (err instanceof ApplicationFailure && err.type === failureTypes.tenantClosed);
  offers.settle({
    failure: told
      ? (err as ApplicationFailure)
      : ApplicationFailure.nonRetryable('The upload could not be completed', failureTypes.uploadFailed),
  });
  await condition(allHandlersFinished);
  throw err;
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
      const committed = await findCommittedAnswer(input);
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
    const check = await sessionStep(stepLabels.expireIdleSession).expireIdleSession(input.resumable.sessionId, input.resumable.idleSeconds);
    if (check.expired) return 'abandoned';
    waitSeconds = check.secondsLeft;
  }
}

const sessionStep = (summary: string) => proxyActivities<Activities>({ ...commitOptions, summary });
