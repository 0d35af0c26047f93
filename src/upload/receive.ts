// The upload path as named phases (the request side; Temporal owns recovery):
//   replay    – a completed key answers from Postgres without reading the body;
//   receive   – the body streams to this attempt's own object, counted and hashed;
//   offer     – Update-with-Start hands the copy to the key's workflow (first copy wins);
//   await     – the caller waits for the workflow's answer, bounded by its wait budget;
//   settle    – the copy is deleted only once the committed answer names another object.
import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { finished, pipeline } from 'node:stream/promises';
import {
  WithStartWorkflowOperation,
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  WorkflowUpdateStage,
  type Client,
} from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { Pool } from '../db/pool';
import type { AnswerCache } from './answer-cache';
import { findKeyAnswer, type KeyAnswer } from '../db/queries/idempotency-keys';
import { objectInUse } from '../db/queries/records';
import { dependency, problem, Problem } from '../errors';
import type { ObjectStore } from '../storage/store';
import { keyStoragePrefix, uploadWorkflowId } from '../temporal/ids';
import { isResourceExhausted } from '../temporal/client';
import { failureTypes, searchAttributes } from '../temporal/names';
import { uploadDetails, uploadSummary } from '../temporal/summary';
import { BodyMeter } from './body-meter';
import { metrics } from '../metrics';
import type { StagedCopy, StoredResponse, UploadRequest } from './types';
import { stagedCopy } from './staged-copy';
import { offerCopyForAnswerUpdate, offerCopyUpdate, UPLOAD_WORKFLOW_REVISION, UPLOAD_WORKFLOW_TYPE, type OfferAnswer, type UploadWorkflowInput } from '../../workflows/definitions';
import type { uploadWorkflow } from '../../workflows/upload';

const OFFER_DEADLINE_MS = 8_000;
const SETTLE_INTERVAL_MS = 2_000;
const SETTLE_ATTEMPTS = 150;

export interface ReceiveDeps {
  pool: Pool;
  store: ObjectStore;
  temporal: Client;
  taskQueue: string;
  receiveTimeoutSeconds: number;
  lostCommitProbeSeconds?: number;
  downstream: UploadWorkflowInput['downstream'];
  /** Recently replayed answers (immutable while the key lives). */
  answers: AnswerCache;
}

/**
 * A copy offered to the key's run: the answering offer's result (the committed answer,
 * bounded by the wait budget), or — a worker without the answering offer, mid-deploy — the
 * plain offer's outcome.
 */
type Offered = { answer: Promise<OfferAnswer> } | { plain: 'accepted' | 'not_needed' };

export type UploadOutcome =
  | { kind: 'answer'; response: StoredResponse; replayed: boolean; workflowId?: string }
  | { kind: 'processing'; workflowId: string };

export class UploadReceiver {
  constructor(private readonly deps: ReceiveDeps) {}

  /** Phase "replay": the stored answer for a completed key, or 422 for another request. */
  async replay(req: UploadRequest): Promise<UploadOutcome | undefined> {
    const cached = this.deps.answers.get(req.tenantId, req.idempotencyKey);
    if (cached) return answerFromRow(cached, req);
    const row = await dependency('database_unavailable', () => findKeyAnswer(this.deps.pool, req.tenantId, req.idempotencyKey));
    if (!row) return undefined;
    // Only complete answers are immutable (a claim by another route has none yet).
    if (!row.expired && row.response_status !== null) this.deps.answers.remember(req.tenantId, req.idempotencyKey, row);
    return answerFromRow(row, req);
  }

  async receive(req: UploadRequest, body: Readable, waitMs: number): Promise<UploadOutcome> {
    return this.deliver(req, await this.stage(req, body), waitMs);
  }

  /**
   * A body whose length and hash are known only once it is in (a form's file part): staged
   * first (at most `base.declaredBytes`), then identified by what arrived — `identify` gives
   * the request for those bytes, once the rest of the request is read — and replayed or
   * delivered like any upload.
   */
  async receiveUnsized(base: UploadRequest, body: Readable, waitMs: number, identify: (bytes: number, sha256: string) => Promise<UploadRequest>): Promise<UploadOutcome> {
    const staged = await this.stage(base, body, { exact: false });
    let req: UploadRequest;
    try {
      req = await identify(staged.bytes, staged.sha256);
    } catch (err) {
      // The rest of the request was bad (e.g. a second file part): nothing is kept.
      await this.discard(staged);
      throw err;
    }
    const copy = { ...staged, fingerprint: req.fingerprint };
    if (req.declaredSha256 && req.declaredSha256 !== copy.sha256) {
      await this.discard(copy);
      throw problem('checksum_mismatch', `The declared SHA-256 is ${req.declaredSha256} but the received bytes hash to ${copy.sha256}.`);
    }
    let replay: UploadOutcome | undefined;
    try {
      replay = await this.replay(req);
    } catch (err) {
      await this.discard(copy);
      throw err;
    }
    if (replay) {
      await this.discard(copy);
      return replay;
    }
    return this.deliver(req, copy, waitMs);
  }

  /**
   * Phases offer → await → settle for a complete copy already in the store, whichever mode
   * brought its bytes (one request, or a resumable session's assembled object).
   */
  async deliver(req: UploadRequest, copy: StagedCopy, waitMs: number, start?: Partial<UploadWorkflowInput>): Promise<UploadOutcome> {
    const workflowId = uploadWorkflowId(req.tenantId, req.idempotencyKey);
    let offered: Offered;
    try {
      offered = await this.offer(req, workflowId, copy, waitMs, start);
    } catch (err) {
      // Only a definite refusal (no run's handler ever saw the copy) frees it at once.
      // When the outcome is unknown (deadline, connection lost) the copy may be the upload.
      if (!(err instanceof OfferRefused)) {
        this.settleLater(req, workflowId, copy);
        throw err;
      }
      if (err.cause instanceof WorkflowExecutionAlreadyStartedError) {
        // The run completed between our fast-path read and the offer: answer from Postgres.
        // The copy goes only if that answer names another object — a session's copy (tus,
        // direct) offered again after its commit is the very object the answer names.
        const answer = await this.replay(req).catch(async (e: unknown) => {
          await this.discard(copy);
          throw e;
        });
        if (answer?.kind === 'answer') {
          await this.settle(copy, answer.response.body);
          return answer;
        }
        this.settleLater(req, workflowId, copy);
        throw err.answer;
      }
      // A session's copy stays for the session's next attempt unless the key is another's.
      if (!start?.resumable || err.answer.code === 'idempotency_key_reuse') await this.discard(copy);
      throw err.answer;
    }
    let result: UploadOutcome;
    try {
      result = await this.await(req, workflowId, copy, waitMs, offered, start);
    } catch (err) {
      // A commit refused for the key's holder wrote nothing, so nothing can name the copy.
      if (err instanceof Problem && err.code === 'idempotency_key_reuse') await this.discard(copy);
      else this.settleLater(req, workflowId, copy); // e.g. the run failed: nothing names the copy
      throw err;
    }
    // Which copy is the upload is what the records transaction committed, not the offer's
    // answer: a workflow task that ran the commit and was then lost (worker killed, task
    // timed out) may have committed a copy that the task re-run from history calls
    // not_needed (seen in the long chaos run). So a copy goes only once the committed
    // answer names another.
    if (result.kind === 'answer') await this.settle(copy, result.response.body);
    else this.settleLater(req, workflowId, copy);
    return result;
  }

  /** Phase "receive": stream the body to this attempt's own object. */
  private async stage(req: UploadRequest, body: Readable, opts: { exact: boolean } = { exact: true }): Promise<StagedCopy> {
    const attemptId = randomUUID();
    const storageKey = `${keyStoragePrefix(req.tenantId, req.idempotencyKey)}${attemptId}`;
    const meter = new BodyMeter(req.declaredBytes, undefined, opts.exact);
    const onAbort = () => meter.abort();
    // The client closing its sending side mid-body shows up only on the socket.
    const socket = (body as { socket?: import('node:net').Socket }).socket;
    const onSocketEnd = () => (body as { complete?: boolean }).complete === false && meter.abort();
    if (socket?.readableEnded) onSocketEnd();
    else socket?.once('end', onSocketEnd);
    body.once('aborted', onAbort);
    body.once('error', onAbort);
    const piped = pipeline(body, meter).catch(() => {});
    try {
      await this.deps.store.put(storageKey, meter, { contentType: req.contentType, contentLength: opts.exact ? req.declaredBytes : undefined });
      // The store may answer as soon as it has Content-Length bytes; the meter's verdict
      // (length, hash) comes when the body ends.
      await finished(meter, { readable: false });
    } catch (err) {
      await this.deps.store.delete(storageKey).catch(() => {});
      if (meter.failure) throw meter.failure;
      if ((body as { complete?: boolean }).complete === false) throw problem('body_incomplete', `Connection closed after ${meter.bytes} of ${req.declaredBytes} bytes.`);
      if (err instanceof Problem) throw err;
      throw problem('storage_unavailable', undefined, { cause: err });
    } finally {
      body.off('aborted', onAbort);
      body.off('error', onAbort);
      socket?.off('end', onSocketEnd);
      await piped;
    }
    metrics.bytesReceived.inc(meter.bytes);
    const copy = stagedCopy({ attemptId, fingerprint: req.fingerprint, storageKey, bytes: meter.bytes, sha256: meter.sha256, head: meter.head });
    if (req.declaredSha256 && req.declaredSha256 !== copy.sha256) {
      await this.discard(copy);
      throw problem('checksum_mismatch', `X-File-Sha256 is ${req.declaredSha256} but the received bytes hash to ${copy.sha256}.`);
    }
    return copy;
  }

  /**
   * How the key's workflow is started when no run holds the key: by the first offer, or by a
   * resumable session's creation (`extra.resumable`; the fingerprint goes in the memo, so a
   * later creation can tell whose run it found).
   */
  startOptions(req: UploadRequest, workflowId: string, extra?: Partial<UploadWorkflowInput>) {
    return {
      workflowId,
      taskQueue: this.deps.taskQueue,
      args: [{ ...req, receiveTimeoutSeconds: this.deps.receiveTimeoutSeconds, lostCommitProbeSeconds: this.deps.lostCommitProbeSeconds, downstream: this.deps.downstream, revision: UPLOAD_WORKFLOW_REVISION, ...extra }] as [UploadWorkflowInput],
      workflowIdConflictPolicy: 'USE_EXISTING' as const,
      workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY' as const,
      memo: { fingerprint: req.fingerprint, ...(extra?.resumable ? { sessionId: extra.resumable.sessionId } : {}) },
      staticSummary: uploadSummary(req),
      staticDetails: uploadDetails(req),
      typedSearchAttributes: [
        { key: searchAttributes.tenant, value: req.tenantId },
        { key: searchAttributes.idempotencyKey, value: req.idempotencyKey },
        { key: searchAttributes.phase, value: 'receiving' },
        { key: searchAttributes.contentType, value: req.contentType },
        { key: searchAttributes.bytes, value: req.declaredBytes },
      ],
    };
  }

  /**
   * Phase "offer": start the key's workflow if needed and hand it this attempt's copy. The
   * call returns once the run has taken the copy in; the update's result — the committed
   * answer — usually comes back with it, since the commit runs in the same workflow task.
   * Waiting for that result (phase "await") starts here, bounded by the wait budget.
   */
  private async offer(req: UploadRequest, workflowId: string, copy: StagedCopy, waitMs: number, extra?: Partial<UploadWorkflowInput>): Promise<Offered> {
    const handle = await this.offerCall(() =>
      this.deps.temporal.workflow.startUpdateWithStart(offerCopyForAnswerUpdate, {
        updateId: copy.attemptId,
        args: [copy],
        waitForStage: WorkflowUpdateStage.ACCEPTED,
        startWorkflowOperation: new WithStartWorkflowOperation<typeof uploadWorkflow>(UPLOAD_WORKFLOW_TYPE, this.startOptions(req, workflowId, extra)),
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
  private offerPlain(req: UploadRequest, workflowId: string, copy: StagedCopy, extra?: Partial<UploadWorkflowInput>): Promise<'accepted' | 'not_needed'> {
    return this.offerCall(() =>
      this.deps.temporal.workflow.executeUpdateWithStart(offerCopyUpdate, {
        updateId: `${copy.attemptId}-plain`,
        args: [copy],
        startWorkflowOperation: new WithStartWorkflowOperation<typeof uploadWorkflow>(UPLOAD_WORKFLOW_TYPE, this.startOptions(req, workflowId, extra)),
      }),
    );
  }

  /** An offer's call to Temporal, bounded, its refusals told apart from an unknown outcome. */
  private async offerCall<T>(call: () => Promise<T>): Promise<T> {
    try {
      // Bounded: with Temporal unreachable the client's own retries would take ~25 s; the
      // caller is better served by a prompt 503 and its own retry with the same key.
      return await this.deps.temporal.withDeadline(Date.now() + OFFER_DEADLINE_MS, call);
    } catch (err) {
      if (err instanceof WorkflowUpdateFailedError && err.cause instanceof ApplicationFailure && err.cause.type === 'idempotency_key_reuse') {
        throw new OfferRefused(reuseProblem(), err);
      }
      if (err instanceof WorkflowExecutionAlreadyStartedError) {
        // The key's run completed (the reuse policy refuses a new one): its answer is, or is
        // about to be, in Postgres; the caller replays it, else this is the answer.
        throw new OfferRefused(problem('idempotency_in_progress', 'The upload for this key is finishing; retry shortly.', { retryAfter: 1 }), err);
      }
      if (isResourceExhausted(err)) {
        throw new OfferRefused(problem('idempotency_in_progress', 'Many requests with this key are in flight; retry shortly.', { retryAfter: 2 }), err);
      }
      throw problem('temporal_unavailable', undefined, { cause: err });
    }
  }

  /** Phase "await": the committed answer within the wait budget, else "processing". */
  private async await(req: UploadRequest, workflowId: string, copy: StagedCopy, waitMs: number, offered: Offered, extra?: Partial<UploadWorkflowInput>): Promise<UploadOutcome> {
    if (waitMs <= 0) return { kind: 'processing', workflowId };
    const deadline = Date.now() + waitMs;
    if ('plain' in offered) return this.awaitRunResult(req, workflowId, deadline, offered.plain === 'not_needed');
    try {
      const { offer, response } = await offered.answer;
      return { kind: 'answer', response, replayed: offer === 'not_needed', workflowId };
    } catch (err) {
      if (isNoHandler(err)) {
        // The refusal of a worker without the answering offer, learnt only by polling.
        const plain = await this.offerPlain(req, workflowId, copy, extra).catch((e: unknown) => {
          throw e instanceof OfferRefused ? e.answer : e;
        });
        return this.awaitRunResult(req, workflowId, deadline, plain === 'not_needed');
      }
      if (err instanceof WorkflowUpdateFailedError) {
        if (err.cause instanceof ApplicationFailure && err.cause.type === failureTypes.keyReuse) throw reuseProblem();
        throw problem('upload_failed', 'The upload could not be completed; retry with the same Idempotency-Key.', { cause: err });
      }
      if (isAbort(err)) return this.answerAfterWait(req, workflowId, false);
      // The update's outcome could not be read (e.g. the run was reset or terminated): the
      // run's own result says what happened, within what is left of the budget.
      return this.awaitRunResult(req, workflowId, deadline, false);
    }
  }

  /** The run's result (its history's close event), as before the answering offer. */
  private async awaitRunResult(req: UploadRequest, workflowId: string, deadline: number, replayed: boolean): Promise<UploadOutcome> {
    const waitMs = deadline - Date.now();
    if (waitMs <= 0) return this.answerAfterWait(req, workflowId, replayed);
    const handle = this.deps.temporal.workflow.getHandle<typeof uploadWorkflow>(workflowId);
    try {
      const response = await this.deps.temporal.withAbortSignal(AbortSignal.timeout(waitMs), () => handle.result());
      return { kind: 'answer', response, replayed, workflowId };
    } catch (err) {
      if (err instanceof WorkflowFailedError) {
        if (err.cause instanceof ApplicationFailure && err.cause.type === failureTypes.keyReuse) throw reuseProblem();
        throw problem('upload_failed', 'The upload could not be completed; retry with the same Idempotency-Key.', { cause: err });
      }
      if (isAbort(err)) return this.answerAfterWait(req, workflowId, replayed);
      throw problem('temporal_unavailable', undefined, { cause: err });
    }
  }

  /** The wait budget ran out: the run may have just finished and its answer be in Postgres. */
  private async answerAfterWait(req: UploadRequest, workflowId: string, replayed: boolean): Promise<UploadOutcome> {
    const row = await findKeyAnswer(this.deps.pool, req.tenantId, req.idempotencyKey).catch(() => undefined);
    if (!row) return { kind: 'processing', workflowId };
    const answer = answerFromRow(row, req);
    return answer.kind === 'answer' ? { ...answer, replayed } : answer;
  }

  /** Deletes the copy unless the committed answer (`body`) names it as the upload. */
  private async settle(copy: StagedCopy, body: string): Promise<void> {
    if (committedStorageKey(body) !== copy.storageKey) await this.discard(copy);
  }

  /**
   * Settles the copy once the key's answer is committed (read from Postgres), or deletes it
   * once the key's run has ended without one. Bounded; anything still open is left to
   * housekeeping, which removes objects no upload references.
   */
  private settleLater(req: UploadRequest, workflowId: string, copy: StagedCopy, attempt = 0): void {
    if (attempt >= SETTLE_ATTEMPTS) return;
    const timer = setTimeout(async () => {
      try {
        const row = await findKeyAnswer(this.deps.pool, req.tenantId, req.idempotencyKey);
        if (row?.expired) return; // long gone: housekeeping decides from the upload rows
        if (row && row.response_status !== null) return void (await this.settle(copy, row.response_body));
        const { status } = await this.deps.temporal.withDeadline(Date.now() + 5_000, () => this.deps.temporal.workflow.getHandle(workflowId).describe());
        // Failed, timed out, terminated or cancelled: no answer was committed from any copy.
        if (status.name !== 'RUNNING' && status.name !== 'COMPLETED') return void (await this.discard(copy));
      } catch (err) {
        if (err instanceof WorkflowNotFoundError) return void (await this.discard(copy));
      }
      this.settleLater(req, workflowId, copy, attempt + 1);
    }, SETTLE_INTERVAL_MS);
    timer.unref();
  }

  private async discard(copy: StagedCopy): Promise<void> {
    // Best effort: housekeeping removes anything left behind. Bytes an upload names (a
    // shared object under dedupe, offered again as an instant upload) are never a copy to drop.
    try {
      if (await objectInUse(this.deps.pool, copy.storageKey)) return;
      await this.deps.store.delete(copy.storageKey);
    } catch {
      // left to housekeeping
    }
  }
}

/** The workflow certainly did not take the copy; `answer` is what the client gets. */
class OfferRefused extends Error {
  constructor(readonly answer: Problem, cause: unknown) {
    super(answer.detail, { cause });
  }
}

function answerFromRow(row: KeyAnswer, req: UploadRequest): UploadOutcome {
  if (row.expired) {
    throw problem('idempotency_key_expired', `This Idempotency-Key was used ${row.upload_id ? `for upload ${row.upload_id} ` : ''}and has expired; use a new key for a new upload.`, {
      extra: { uploadId: row.upload_id },
    });
  }
  if (row.fingerprint !== req.fingerprint) throw reuseProblem();
  return { kind: 'answer', response: { status: row.response_status, body: row.response_body, uploadId: row.upload_id }, replayed: true };
}

/** The object a committed answer names (absent for a recorded rejection). */
function committedStorageKey(body: string): string | undefined {
  try {
    const key = (JSON.parse(body) as { storageKey?: unknown }).storageKey;
    return typeof key === 'string' ? key : undefined;
  } catch {
    return undefined;
  }
}

function reuseProblem(): Problem {
  return problem('idempotency_key_reuse', 'This Idempotency-Key was already used with a different file or headers; use a new key for a new upload.');
}

/** The SDK's refusal of an update the workflow has no handler for (a worker from before it). */
function isNoHandler(err: unknown): boolean {
  return err instanceof WorkflowUpdateFailedError && err.cause instanceof ApplicationFailure && err.cause.message.startsWith('No registered handler for update');
}

function isAbort(err: unknown): boolean {
  for (let e = err as { name?: string; cause?: unknown } | undefined, i = 0; e && i < 5; e = e.cause as typeof e, i++) {
    if (e.name === 'AbortError' || e.name === 'TimeoutError' || (e as { code?: number }).code === 1 /* grpc CANCELLED */) return true;
  }
  return false;
}
