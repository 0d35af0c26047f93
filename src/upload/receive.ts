// The upload path as named phases (the request side; Temporal owns recovery):
//   replay    – a completed key answers from Postgres without reading the body;
//   receive   – the body streams to this attempt's own object, counted and hashed;
//   offer     – Update-with-Start hands the copy to the key's workflow (first copy wins);
//   await     – the caller waits for the workflow's answer, bounded by its wait budget;
//   settle    – the copy is deleted only once the committed answer names another object.
// Receive, offer and settle live in ./stage.ts, ./offer.ts and ./settle.ts; this module
// runs the phases in order and owns replay and await.
import { byteQuotaProblem, type QuotaRefusal } from './byte-quota';
import type { Readable } from 'node:stream';
import { WorkflowExecutionAlreadyStartedError, WorkflowFailedError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { Pool } from '../db/pool';
import type { AnswerCache } from './answer-cache';
import { findKeyAnswer, findKeyAnswerRecordingRunKey, type KeyAnswer } from '../db/queries/idempotency-keys';
import type { PayloadKeyring } from '../codec/payload-codec';
import { linkToCommit } from '../telemetry/context';
import { dependency, problem, Problem } from '../errors';
import type { ObjectStore } from '../storage/store';
import { uploadWorkflowId } from '../temporal/ids';
import { failureTypes, searchAttributes } from '../temporal/names';
import { uploadSummary } from '../temporal/summary';
import type { StagedCopy, StoredResponse, UploadRequest } from './types';
import { UPLOAD_WORKFLOW_REVISION, type UploadWorkflowInput } from '../temporal/definitions';
import type { UploadWorkflow } from '../temporal/definitions';
import { CopyOffer, isNoHandler, OfferRefused, reuseProblem, type Offered } from './offer';
import { CopySettler, type DeliveryEnd } from './settle';
import { stageBody } from './stage';
import type { Placement } from '../placement/placement';
import { checkArrived } from './grant-limits';
import { workflowRunState } from './upload-running';
import type { Admission, Arrival } from './admission';

export interface ReceiveDeps {
  pool: Pool;
  store: ObjectStore;
  temporal: Client;
  taskQueue: string;
  receiveTimeoutSeconds: number;
  lostCommitProbeSeconds?: number;
  downstream: UploadWorkflowInput['downstream'];
  /** Recently replayed answers (see AnswerCache: a deleted upload's is forgotten). */
  answers: AnswerCache;
  /** What a new upload must pass before it is read (its pipeline, the pipeline's validation hook). */
  admission: Admission;
  /** Which storage target a new upload's objects go to. */
  placement: Pick<Placement, 'prefixFor'>;
  /**
   * The keyed pseudonym an upload token's subject is searchable by (OncelySubject): search
   * attributes stay in clear in Temporal, so they never hold the subject itself.
   */
  subjectTag?: (tenantId: string, subject: string) => string;
  /**
   * The process's payload keyring (codec on): a new run's data key is recorded with the
   * replay lookup instead of by the start's sealing, one round trip fewer per new upload.
   */
  runKeys?: Pick<PayloadKeyring, 'draftRunKey' | 'recorded'>;
}

export type UploadOutcome =
  { kind: 'answer'; response: StoredResponse; replayed: boolean; workflowId?: string } | { kind: 'processing'; workflowId: string };

export class UploadReceiver {
  private readonly offers: CopyOffer;
  private readonly copies: CopySettler;

  constructor(private readonly deps: ReceiveDeps) {
    this.offers = new CopyOffer({
      temporal: deps.temporal,
      startOptions: (req, workflowId, extra) => this.startOptions(req, workflowId, extra),
    });
    this.copies = new CopySettler(deps);
  }

  /**
   * Phase "replay": the stored answer for a completed key, or 422 for another request.
   * `beforeStart`: the caller starts the key's run when nothing answers, so the run's payload
   * data key is recorded by the same statement (codec on).
   */
  async replay(req: UploadRequest, opts: { beforeStart?: boolean } = {}): Promise<UploadOutcome | undefined> {
    const cached = this.deps.answers.get(req.tenantId, req.idempotencyKey);
    if (cached) return answerFromRow(cached, req);
    const row = await dependency('database_unavailable', () => this.findAnswer(req, opts.beforeStart === true));
    if (!row) return undefined;
    // Only complete answers are immutable (a claim by another route has none yet).
    if (!row.expired && row.response_status !== null) this.deps.answers.remember(req.tenantId, req.idempotencyKey, row);
    return answerFromRow(row, req);
  }

  private async findAnswer(req: UploadRequest, beforeStart: boolean): Promise<KeyAnswer | undefined> {
    const { pool, runKeys } = this.deps;
    if (!beforeStart || !runKeys) return findKeyAnswer(pool, req.tenantId, req.idempotencyKey);
    const draft = runKeys.draftRunKey(uploadWorkflowId(req.tenantId, req.idempotencyKey));
    const { answer, recorded } = await findKeyAnswerRecordingRunKey(pool, req.tenantId, req.idempotencyKey, draft);
    if (recorded) runKeys.recorded(draft);
    return answer;
  }

  /** Refuses a new upload its pipeline does not admit, or past a byte quota (src/upload/admission.ts); nothing is stored. */
  async admit(req: Parameters<Admission['admit']>[0], arrival: Arrival): Promise<void> {
    await this.unlessKeyTaken(req, () => this.deps.admission.admit(req, arrival));
  }

  /** Before a body of unknown length is staged: 413 for one of at least `bytes` that cannot fit its tenant's byte quotas. */
  async refuseIfCannotFit(req: Pick<UploadRequest, 'tenantId' | 'idempotencyKey'>, bytes: number): Promise<void> {
    await this.unlessKeyTaken(req, () => this.deps.admission.refuseIfCannotFit(req.tenantId, req.idempotencyKey, bytes));
  }

  /**
   * A byte quota's refusal does not stand for a key that already names an upload: a retry that
   * meets its own upload — committed since its replay was looked up (its reservation already
   * charged), or its run still under way — goes on to attach to that run and gets its answer.
   */
  private async unlessKeyTaken(req: Pick<UploadRequest, 'tenantId' | 'idempotencyKey'>, check: () => Promise<void>): Promise<void> {
    try {
      await check();
    } catch (err) {
      if (!(err instanceof Problem && err.code === 'byte_quota_exceeded') || !(await this.keyTaken(req))) throw err;
    }
  }

  /** Whether the key already names an upload: an answer or a trace of one in Postgres, or a run under way. */
  private async keyTaken(req: Pick<UploadRequest, 'tenantId' | 'idempotencyKey'>): Promise<boolean> {
    if (await findKeyAnswer(this.deps.pool, req.tenantId, req.idempotencyKey).catch(() => undefined)) return true;
    const run = await workflowRunState(this.deps.temporal, uploadWorkflowId(req.tenantId, req.idempotencyKey)).catch(() => 'none');
    return run === 'running';
  }

  /** Where the key's objects go: its storage target, decided before any byte (403 / 422 when it may not). */
  private keyPrefix(req: UploadRequest): Promise<string> {
    return this.deps.placement.prefixFor({
      tenantId: req.tenantId,
      idempotencyKey: req.idempotencyKey,
      storageTarget: req.storageTarget,
      pinnedTarget: req.grant?.storageTarget,
    });
  }

  async receive(req: UploadRequest, body: Readable, waitMs: number): Promise<UploadOutcome> {
    let staged: StagedCopy;
    try {
      staged = await stageBody(this.deps.store, await this.keyPrefix(req), req, body);
    } catch (err) {
      await this.release(req);
      throw err;
    }
    return this.deliver(req, staged, waitMs);
  }

  /**
   * Ends the key's reservation under the byte quotas, for an upload no run will commit from
   * this attempt (refused before its offer). Best effort: housekeeping ends what is left.
   */
  async release(req: Pick<UploadRequest, 'tenantId' | 'idempotencyKey'>): Promise<void> {
    await this.deps.admission.release(req.tenantId, req.idempotencyKey).catch(() => {});
  }

  /**
   * A body whose length and hash are known only once it is in (a form's file part): staged
   * first (at most `base.declaredBytes`), then identified by what arrived — `identify` gives
   * the request for those bytes, once the rest of the request is read — and replayed or
   * delivered like any upload.
   */
  async receiveUnsized(
    base: UploadRequest,
    body: Readable,
    waitMs: number,
    identify: (bytes: number, sha256: string) => Promise<UploadRequest>,
    arrival: Omit<Arrival, 'bytes'>,
  ): Promise<UploadOutcome> {
    const staged = await stageBody(this.deps.store, this.keyPrefix(base), base, body, { exact: false });
    let req: UploadRequest;
    try {
      req = await identify(staged.bytes, staged.sha256);
    } catch (err) {
      // The rest of the request was bad (e.g. a second file part): nothing is kept.
      await this.copies.after({ at: 'before-offer' }, base, '', staged);
      throw err;
    }
    const copy = { ...staged, fingerprint: req.fingerprint };
    const workflowId = uploadWorkflowId(req.tenantId, req.idempotencyKey);
    let replay: UploadOutcome | undefined;
    try {
      if (req.declaredSha256 && req.declaredSha256 !== copy.sha256)
        throw problem('checksum_mismatch', `The declared SHA-256 is ${req.declaredSha256} but the received bytes hash to ${copy.sha256}.`);
      replay = await this.replay(req, { beforeStart: true });
      // A replay answers whatever it names; a new upload must name a declared pipeline.
      if (!replay) await this.admit(req, { ...arrival, bytes: req.declaredBytes });
    } catch (err) {
      await this.copies.after({ at: 'before-offer' }, req, workflowId, copy);
      throw err;
    }
    if (!replay) return this.deliver(req, copy, waitMs);
    await this.copies.after({ at: 'before-offer' }, req, workflowId, copy);
    return replay;
  }

  /**
   * Phases offer → await → settle for a complete copy already in the store, whichever mode
   * brought its bytes (one request, or a resumable session's assembled object).
   */
  async deliver(req: UploadRequest, copy: StagedCopy, waitMs: number, start?: Partial<UploadWorkflowInput>): Promise<UploadOutcome> {
    const workflowId = uploadWorkflowId(req.tenantId, req.idempotencyKey);
    const after = (end: DeliveryEnd) => this.copies.after(end, req, workflowId, copy);
    try {
      // An upload token's limits on what arrived, whatever was declared: nothing is kept past them.
      checkArrived(req.grant, { bytes: copy.bytes, sniffedType: copy.sniffedType, contentType: req.contentType });
    } catch (err) {
      await after({ at: 'before-offer' });
      if (!start?.resumable) await this.release(req);
      throw err;
    }
    let offered: Offered;
    try {
      offered = await this.offers.offer(req, workflowId, copy, waitMs, start);
    } catch (err) {
      if (!(err instanceof OfferRefused)) {
        await after({ at: 'offer-unknown' });
        throw err;
      }
      if (err.cause instanceof WorkflowExecutionAlreadyStartedError) {
        // The run completed between our fast-path read and the offer: answer from Postgres.
        // A session's copy (tus, direct) offered again after its commit is the very object the answer names.
        const answer = await this.replay(req).catch(async (e: unknown) => {
          await after({ at: 'answered', committedBody: undefined });
          throw e;
        });
        await after({ at: 'answered', committedBody: answer?.kind === 'answer' ? answer.response.body : undefined });
        if (answer?.kind === 'answer') return answer;
        throw err.answer;
      }
      await after({ at: 'offer-refused', session: !!start?.resumable, keyReuse: err.answer.code === 'idempotency_key_reuse' });
      // A session's reservation stays for its next attempt; a request's ends with its copy.
      if (!start?.resumable) await this.release(req);
      throw err.answer;
    }
    let result: UploadOutcome;
    try {
      result = await this.await(req, workflowId, copy, waitMs, offered, start);
    } catch (err) {
      await after({ at: 'after-offer', keyReuse: err instanceof Problem && err.code === 'idempotency_key_reuse' });
      throw err;
    }
    // Which copy is the upload is what the records transaction committed, not the offer's
    // answer: a workflow task that ran the commit and was then lost (worker killed, task
    // timed out) may have committed a copy that the task re-run from history calls
    // not_needed (seen in the long chaos run). So a copy goes only once the committed
    // answer names another.
    await after({ at: 'answered', committedBody: result.kind === 'answer' ? result.response.body : undefined });
    return result;
  }

  /**
   * How the key's workflow is started when no run holds the key: by the first offer, by a
   * resumable session's creation (`extra.resumable`) or by an import (`extra.import`). Only
   * those two carry a memo (the fingerprint, and the session): a later creation or import
   * with the key reads it to tell whose run it found. An offer's run needs none — the run
   * itself refuses another request's copy — and every payload is one more cipher each way.
   * The UI's details would repeat the search attributes: none.
   */
  startOptions(req: UploadRequest, workflowId: string, extra?: Partial<UploadWorkflowInput>) {
    return {
      workflowId,
      taskQueue: this.deps.taskQueue,
      args: [
        {
          ...req,
          receiveTimeoutSeconds: this.deps.receiveTimeoutSeconds,
          lostCommitProbeSeconds: this.deps.lostCommitProbeSeconds,
          downstream: this.deps.downstream,
          revision: UPLOAD_WORKFLOW_REVISION,
          ...extra,
        },
      ] as [UploadWorkflowInput],
      workflowIdConflictPolicy: 'USE_EXISTING' as const,
      workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY' as const,
      ...(extra?.resumable || extra?.import
        ? { memo: { fingerprint: req.fingerprint, ...(extra.resumable ? { sessionId: extra.resumable.sessionId } : {}) } }
        : {}),
      staticSummary: uploadSummary(req),
      typedSearchAttributes: [
        { key: searchAttributes.tenant, value: req.tenantId },
        { key: searchAttributes.idempotencyKey, value: req.idempotencyKey },
        { key: searchAttributes.contentType, value: req.contentType },
        { key: searchAttributes.bytes, value: req.declaredBytes },
        ...(req.grant?.subject && this.deps.subjectTag
          ? [{ key: searchAttributes.subject, value: this.deps.subjectTag(req.tenantId, req.grant.subject) }]
          : []),
      ],
    };
  }

  /** Phase "await": the committed answer within the wait budget, else "processing". */
  private async await(
    req: UploadRequest,
    workflowId: string,
    copy: StagedCopy,
    waitMs: number,
    offered: Offered,
    extra?: Partial<UploadWorkflowInput>,
  ): Promise<UploadOutcome> {
    if (waitMs <= 0) return { kind: 'processing', workflowId };
    const deadline = Date.now() + waitMs;
    if ('plain' in offered) return this.awaitRunResult(req, workflowId, deadline, offered.plain === 'not_needed');
    try {
      const { offer, response } = await offered.answer;
      return { kind: 'answer', response, replayed: offer === 'not_needed', workflowId };
    } catch (err) {
      if (isNoHandler(err)) {
        // The refusal of a worker without the answering offer, learnt only by polling.
        const plain = await this.offers.offerPlain(req, workflowId, copy, extra).catch((e: unknown) => {
          throw e instanceof OfferRefused ? e.answer : e;
        });
        return this.awaitRunResult(req, workflowId, deadline, plain === 'not_needed');
      }
      if (err instanceof WorkflowUpdateFailedError) throw failedRunProblem(err, req);
      if (isAbort(err)) return this.answerAfterWait(req, workflowId, false);
      // The update's outcome could not be read (e.g. the run was reset or terminated): the
      // run's own result says what happened, within what is left of the budget.
      return this.awaitRunResult(req, workflowId, deadline, false);
    }
  }

  /** The key's run's answer within `waitMs`, else "processing" (for runs that take no offer: imports). */
  awaitRun(req: UploadRequest, workflowId: string, waitMs: number): Promise<UploadOutcome> {
    return this.awaitRunResult(req, workflowId, Date.now() + waitMs, false);
  }

  /** The run's result (its history's close event), as before the answering offer. */
  private async awaitRunResult(req: UploadRequest, workflowId: string, deadline: number, replayed: boolean): Promise<UploadOutcome> {
    const waitMs = deadline - Date.now();
    if (waitMs <= 0) return this.answerAfterWait(req, workflowId, replayed);
    const handle = this.deps.temporal.workflow.getHandle<UploadWorkflow>(workflowId);
    try {
      // Bounded both ways: the API's connection honours an abort, a worker's native one (batch items) only a deadline.
      const response: unknown = await this.deps.temporal.withDeadline(deadline, () =>
        this.deps.temporal.withAbortSignal(AbortSignal.timeout(waitMs), () => handle.result()),
      );
      // A run erased since (its keys destroyed) reads as the codec's marker: its answer is the key's row.
      if (typeof response !== 'object' || response === null) return this.answerAfterWait(req, workflowId, replayed);
      return { kind: 'answer', response: response as StoredResponse, replayed, workflowId };
    } catch (err) {
      if (err instanceof WorkflowFailedError) throw failedRunProblem(err, req);
      if (isAbort(err)) return this.answerAfterWait(req, workflowId, replayed);
      throw problem('temporal_unavailable', undefined, { cause: err });
    }
  }

  /** The wait budget ran out: the run may have just finished and its answer be in Postgres. */
  private async answerAfterWait(req: UploadRequest, workflowId: string, replayed: boolean): Promise<UploadOutcome> {
    // Unreadable now: answered 202, and the client polls the key.
    const row = await findKeyAnswer(this.deps.pool, req.tenantId, req.idempotencyKey).catch(() => undefined);
    if (!row) return { kind: 'processing', workflowId };
    const answer = answerFromRow(row, req);
    return answer.kind === 'answer' ? { ...answer, replayed } : answer;
  }
}

/** What a client is told when the key's run (or its offer) failed, by the failure's type. */
function failedRunProblem(err: WorkflowFailedError | WorkflowUpdateFailedError, req: UploadRequest): Problem {
  const type = err.cause instanceof ApplicationFailure ? err.cause.type : undefined;
  if (type === failureTypes.keyReuse) return reuseProblem();
  if (type === failureTypes.tokenExhausted) return exhaustedProblem(req);
  if (type === failureTypes.byteQuotaExceeded) {
    const refusal = (err.cause as ApplicationFailure).details?.[0] as QuotaRefusal | undefined;
    if (refusal) return byteQuotaProblem(refusal, err);
  }
  // Closed while its body arrived: the commit was refused (migration 027), nothing was kept.
  if (type === failureTypes.tenantClosed) return problem('tenant_deleted', 'This tenant has been deleted.', { cause: err });
  return problem('upload_failed', 'The upload could not be completed; retry with the same Idempotency-Key.', { cause: err });
}

function answerFromRow(row: KeyAnswer, req: UploadRequest): UploadOutcome {
  if (row.expired) {
    throw problem(
      'idempotency_key_expired',
      `This Idempotency-Key was used ${row.upload_id ? `for upload ${row.upload_id} ` : ''}and has expired; use a new key for a new upload.`,
      {
        extra: { uploadId: row.upload_id },
      },
    );
  }
  if (row.fingerprint !== req.fingerprint) throw reuseProblem();
  // A replay is a trace of its own, linked to the step that committed the answer.
  linkToCommit(row.traceparent, 'replay');
  return { kind: 'answer', response: { status: row.response_status, body: row.response_body, uploadId: row.upload_id }, replayed: true };
}

function isAbort(err: unknown): boolean {
  for (let e = err as { name?: string; cause?: unknown } | undefined, i = 0; e && i < 5; e = e.cause as typeof e, i++) {
    const code = (e as { code?: number }).code;
    if (e.name === 'AbortError' || e.name === 'TimeoutError' || code === 1 /* grpc CANCELLED */ || code === 4 /* DEADLINE_EXCEEDED */)
      return true;
  }
  return false;
}

function exhaustedProblem(req: UploadRequest) {
  return problem('token_exhausted', `The upload token allows ${req.grant?.maxUploads ?? 0} uploads and has made them all.`);
}
