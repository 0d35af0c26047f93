// Phase "offer": the key's workflow is started if needed (Update-with-Start) and handed
// this attempt's copy. The answering offer (offerCopyForAnswer) returns the committed answer
// with its response; a worker from before it (a rolling deploy) refuses it unseen, and the
// plain offer (offerCopy) is sent instead. Refusals are told apart from unknown outcomes.
import {
  WithStartWorkflowOperation,
  WorkflowExecutionAlreadyStartedError,
  WorkflowUpdateFailedError,
  WorkflowUpdateStage,
  type Client,
} from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { isTenantClosed, problem, type Problem } from '../errors';
import { isResourceExhausted } from '../temporal/client';
import { offerCopyForAnswerUpdate, offerCopyUpdate, type OfferAnswer, type UploadWorkflowInput } from '../temporal/definitions';
import type { UploadWorkflow } from '../temporal/definitions';
import type { StagedCopy, UploadRequest } from './types';
import { failureTypes, workflowTypes } from '../temporal/names';
import { uploadRunStateCheck, type UploadRunState } from './upload-running';

const OFFER_DEADLINE_MS = 8_000;
/** How long an offer whose outcome is unknown spends asking whether the key's run is open. */
const RUN_PROBE_DEADLINE_MS = 2_000;

/**
 * A copy offered to the key's run: the answering offer's result (the committed answer,
 * bounded by the wait budget), or — a worker without the answering offer, mid-deploy — the
 * plain offer's outcome.
 */
export type Offered = { answer: Promise<OfferAnswer> } | { plain: 'accepted' | 'not_needed' };

export interface OfferDeps {
  temporal: Client;
  /** How the key's workflow is started when no run holds the key. */
  startOptions: (
    req: UploadRequest,
    workflowId: string,
    extra?: Partial<UploadWorkflowInput>,
  ) => ConstructorParameters<typeof WithStartWorkflowOperation<UploadWorkflow>>[1];
}

export class CopyOffer {
  private readonly uploadRunState: ReturnType<typeof uploadRunStateCheck>;

  constructor(private readonly deps: OfferDeps) {
    this.uploadRunState = uploadRunStateCheck(deps.temporal, RUN_PROBE_DEADLINE_MS);
  }

  /**
   * Phase "offer": start the key's workflow if needed and hand it this attempt's copy. The
   * call returns once the run has taken the copy in; the update's result — the committed
   * answer — usually comes back with it, since the commit runs in the same workflow task.
   * Waiting for that result (phase "await") starts here, bounded by the wait budget.
   */
  async offer(
    req: UploadRequest,
    workflowId: string,
    copy: StagedCopy,
    waitMs: number,
    extra?: Partial<UploadWorkflowInput>,
  ): Promise<Offered> {
    const handle = await this.offerCall(req, () =>
      this.deps.temporal.workflow.startUpdateWithStart(offerCopyForAnswerUpdate, {
        updateId: copy.attemptId,
        args: [copy],
        waitForStage: WorkflowUpdateStage.ACCEPTED,
        startWorkflowOperation: new WithStartWorkflowOperation<UploadWorkflow>(
          workflowTypes.upload,
          this.deps.startOptions(req, workflowId, extra),
        ),
      }),
    );
    const answer = this.deps.temporal.withAbortSignal(AbortSignal.timeout(Math.max(waitMs, 1)), () => handle.result());
    answer.catch(() => {}); // observed in phase "await"
    // A worker from before the answering offer (a rolling deploy) refuses it unseen; the
    // refusal comes back with the offer's response, so it is known before the next turn.
    const refusedUnseen = await Promise.race([answer.then(() => false, isNoHandler), new Promise<boolean>((r) => setImmediate(r, false))]);
    if (refusedUnseen) return { plain: await this.offerPlain(req, workflowId, copy, extra) };
    return { answer };
  }

  /** The plain offer (`offerCopy`: taken or not, no answer), for workers without the answering one. */
  offerPlain(
    req: UploadRequest,
    workflowId: string,
    copy: StagedCopy,
    extra?: Partial<UploadWorkflowInput>,
  ): Promise<'accepted' | 'not_needed'> {
    return this.offerCall(req, () =>
      this.deps.temporal.workflow.executeUpdateWithStart(offerCopyUpdate, {
        updateId: `${copy.attemptId}-plain`,
        args: [copy],
        startWorkflowOperation: new WithStartWorkflowOperation<UploadWorkflow>(
          workflowTypes.upload,
          this.deps.startOptions(req, workflowId, extra),
        ),
      }),
    );
  }

  /** An offer's call to Temporal, bounded, its refusals told apart from an unknown outcome. */
  private async offerCall<T>(req: UploadRequest, call: () => Promise<T>): Promise<T> {
    try {
      // Bounded: with Temporal unreachable the client's own retries would take ~25 s; the
      // caller is better served by a prompt 503 and its own retry with the same key.
      return await this.deps.temporal.withDeadline(Date.now() + OFFER_DEADLINE_MS, call);
    } catch (err) {
      if (err instanceof WorkflowUpdateFailedError && err.cause instanceof ApplicationFailure && err.cause.type === failureTypes.keyReuse) {
        throw new OfferRefused(reuseProblem(), err);
      }
      if (err instanceof WorkflowExecutionAlreadyStartedError) {
        // The key's run completed (the reuse policy refuses a new one): its answer is, or is
        // about to be, in Postgres; the caller replays it, else this is the answer.
        throw new OfferRefused(
          problem('idempotency_in_progress', 'The upload for this key is finishing; retry shortly.', { retryAfter: 1 }),
          err,
        );
      }
      // The tenant was deleted while the body arrived and the run's data key is made only now: it was refused, no run started.
      if (isTenantClosed(err)) throw new OfferRefused(problem('tenant_deleted', 'This tenant has been deleted.'), err);
      if (isResourceExhausted(err)) {
        throw new OfferRefused(
          problem('idempotency_in_progress', 'Many requests with this key are in flight; retry shortly.', { retryAfter: 2 }),
          err,
        );
      }
      // No answer within the bound: the outcome is unknown. Temporal answering that the key's
      // run is open (or has just ended) means it is up but slow (many offers queued on one
      // run): the retry with this key attaches or replays. (Not OfferRefused: this copy may
      // be the one the run took.)
      const run = err instanceof WorkflowUpdateFailedError ? 'none' : await this.keyRunState(req);
      if (run !== 'none') {
        const detail =
          run === 'running'
            ? 'The upload for this key is under way; retry shortly.'
            : 'The upload for this key has just finished; retry shortly.';
        throw problem('idempotency_in_progress', detail, { retryAfter: 2, cause: err });
      }
      throw problem('temporal_unavailable', undefined, { cause: err });
    }
  }

  private keyRunState(req: UploadRequest): Promise<UploadRunState> {
    return this.uploadRunState(req.tenantId, req.idempotencyKey).catch((): UploadRunState => 'none'); // no answer: unavailable
  }
}

/** The workflow certainly did not take the copy; `answer` is what the client gets. */
export class OfferRefused extends Error {
  constructor(
    readonly answer: Problem,
    cause: unknown,
  ) {
    super(answer.detail, { cause });
  }
}

export function reuseProblem(): Problem {
  return problem(
    'idempotency_key_reuse',
    'This Idempotency-Key was already used with a different file or headers; use a new key for a new upload.',
  );
}

/** The SDK's refusal of an update the workflow has no handler for (a worker from before it). */
export function isNoHandler(err: unknown): boolean {
  return (
    err instanceof WorkflowUpdateFailedError &&
    err.cause instanceof ApplicationFailure &&
    err.cause.message.startsWith('No registered handler for update')
  );
}
