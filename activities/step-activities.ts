// Side effects of a pipeline's steps (on their own task queue) and of the upload's processing
// state: what the downstream run plans, each step run and recorded once, the gate opened or
// the upload rejected, the upload marked processed. Each is safe to run more than once:
// renditions go to deterministic keys with conflict-free rows, outcomes are recorded once.
import { companionPrefix, renditionPrefix } from '../src/storage/layout';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { Pool } from '../src/db/pool';
import { ByteQuotaExceeded } from '../src/db/queries/byte-quotas';
import {
  insertRenditionIfAbsent,
  listRenditionsOf,
  markProcessed,
  renditionSummary,
  setProcessingOutcome,
} from '../src/db/queries/renditions';
import { openUploadGate, rejectUpload } from '../src/db/queries/gates';
import { rejectionAnswer } from '../src/upload/stored-answers';
import type { DownstreamInput } from '../src/downstream/types';
import type { RenditionSummary, ScanVerdict, SettledStep, StepRef, StepResult, TranscodeResult } from '../src/pipelines/step-results';
import { DisallowedUrlError, type Resolver } from '../src/downstream/url-guard';
import { deliveryErrorMessage, retryAfterMs, WebhookHttp } from '../src/downstream/webhook-http';
import { newScratchDir } from '../src/media/scratch';
import { runMediaStep, transcodeFile, type Presets } from '../src/media/transcode';
import type { ProducedRendition, StepOutcome, StepProgress } from '../src/media/step-outcome';
import { ClamdScanner, ScannerUnavailable, type ScannerSettings } from '../src/scan/clamd';
import { TenantCalls } from '../src/downstream/tenant-calls';
import { stepCallId } from '../src/pipelines/step-results';
import { uploadEventData } from '../src/downstream/events';
import { findPipelineVersion, recordStepOutcome, uploadPipeline } from '../src/db/queries/pipelines';
import { announces, builtinPipeline, DEFAULT_PIPELINE, type PipelineVersion, type ProcessingStep } from '../src/pipelines/steps';
import { renditionNames, type StepOf } from '../src/pipelines/catalogue';
import type { ObjectStore } from '../src/storage/store';
import { metrics } from '../src/metrics';
import { holdNewObjects } from '../src/upload/hold-new-objects';
import type { SecretBox } from '../src/secret-box';
import { failureTypes } from '../src/temporal/names';
import type { WebhookActivities } from './webhook-activities';

export interface StepActivityDeps {
  pool: Pool;
  store: ObjectStore;
  presets: Presets;
  /** Which tenant addresses a step may call (`resolve` replaces the system resolver in tests). */
  webhook: { allowPrivateNetworks: boolean; resolve?: Resolver };
  /** Opens the pipelines' signing secrets, stored sealed. */
  secrets: SecretBox;
  /** clamd, for scan.clamav steps (no address: every verdict is not_scanned). */
  scanner: ScannerSettings;
}

/**
 * Where a rendition is stored: under its upload, and — for a declared pipeline — under the
 * pipeline version, so a re-run of the same version overwrites its own objects and another
 * version never touches them. The built-in default keeps the layout uploads always had.
 */
export function renditionKey(
  upload: { tenantId: string; uploadId: string; storageKey: string },
  name: string,
  file: string,
  ref?: Omit<StepRef, 'index'>,
): string {
  const version = ref && ref.version > 0 ? `${ref.pipeline}/v${ref.version}/` : '';
  return `${renditionPrefix(upload.tenantId, upload.uploadId, upload.storageKey)}${version}${name}${path.extname(file)}`;
}

/** Tries of a scan while clamd is unreachable before the verdict is not_scanned (the step's retry policy spaces them). */
export const SCAN_TRIES = 4;

/** `webhooks`: a plan lists the endpoints its announcements go to. */
export function createStepActivities(
  { pool, store, presets, webhook, secrets, scanner }: StepActivityDeps,
  webhooks: Pick<WebhookActivities, 'listWebhookEndpoints'>,
) {
  const clamd = new ClamdScanner(scanner);
  const calls = new TenantCalls({ pool, secrets, http: new WebhookHttp(webhook), guard: webhook });

  /**
   * POSTs the upload to the tenant's URL (signed, with the step's own Idempotency-Key): 2xx
   * continues, 4xx rejects with the tenant's message, 202 on an async step waits for the
   * tenant's decision; 5xx and no answer are retried on the step's schedule.
   */
  async function callTenant(input: DownstreamInput, step: StepOf<'http.call'>, ref: StepRef): Promise<StepResult> {
    const result = (status: StepResult['status'], reason: string | null, data?: unknown): StepResult => ({
      status,
      reason,
      media: null,
      renditions: [],
      ...(data !== undefined && data !== null ? { data } : {}),
    });
    let answer;
    try {
      answer = await calls.call({
        url: step.url,
        tenantId: input.tenantId,
        pipeline: ref.pipeline,
        id: stepCallId(input.uploadId, ref),
        type: 'pipeline.step',
        data: {
          ...uploadEventData(input),
          pipeline: { name: ref.pipeline, version: ref.version },
          step: { index: ref.index, type: step.type, async: step.async },
        },
        timeoutMs: step.timeoutSeconds * 1000,
      });
    } catch (err) {
      if (err instanceof DisallowedUrlError) return result('failed', `http.call target not allowed: ${err.message}`);
      throw ApplicationFailure.retryable(
        `http.call to the tenant got no answer: ${deliveryErrorMessage(err, step.timeoutSeconds * 1000)}`,
        failureTypes.tenantUnreachable,
      );
    }
    if (answer.status === 202 && step.async) return result('waiting', null);
    if (answer.status >= 200 && answer.status < 300) return result('succeeded', null, answer.data);
    if (answer.status >= 400 && answer.status < 500)
      return result('rejected', `refused by the tenant (HTTP ${answer.status})${answer.message ? `: ${answer.message}` : ''}`, answer.data);
    throw ApplicationFailure.create({
      message: `http.call: the tenant answered ${answer.status}`,
      type: failureTypes.tenantError,
      nextRetryDelay: retryAfterMs(answer.retryAfter),
    });
  }

  /** Streams the upload's object to clamd and applies the step's policy to the verdict. */
  async function scanObject(input: DownstreamInput, step: StepOf<'scan.clamav'>): Promise<StepResult> {
    const ctx = Context.current();
    const beat = setInterval(() => ctx.heartbeat('scanning'), 1_000);
    let scan: ScanVerdict;
    try {
      const source = await store.get(input.storageKey);
      if (!source) throw ApplicationFailure.nonRetryable(`object ${input.storageKey} is missing`, failureTypes.objectMissing);
      scan = await clamd.scan(source, input.bytes);
    } catch (err) {
      if (!(err instanceof ScannerUnavailable)) throw err;
      if (ctx.info.attempt < SCAN_TRIES) throw ApplicationFailure.retryable(err.message, failureTypes.scannerUnavailable);
      scan = { verdict: 'not_scanned', viruses: [], reason: err.reason };
    } finally {
      clearInterval(beat);
    }
    metrics.scans.inc({ verdict: scan.verdict });
    const result = (status: StepResult['status'], reason: string | null): StepResult => ({
      status,
      reason,
      media: null,
      renditions: [],
      scan,
    });
    if (scan.verdict === 'infected') {
      const found = `infected: ${scan.viruses.join(', ')}`;
      return step.policy === 'block' ? result('rejected', found) : result('succeeded', `${found} (flagged)`);
    }
    if (scan.verdict === 'not_scanned')
      return step.unscanned === 'reject'
        ? result('rejected', `not scanned: ${scan.reason}`)
        : result('succeeded', `not scanned: ${scan.reason}`);
    return result('succeeded', null);
  }

  /**
   * Runs `work` on a local copy of the upload's object with heartbeats, storing and
   * recording each rendition as it is handed over (`keep`), so a long step keeps what it
   * finished: a retry after a worker died finds those renditions recorded (`kept`, read
   * from their rows) and skips them. Heartbeats prove liveness: a worker that dies
   * mid-step is noticed within the heartbeat timeout and the step retried elsewhere (same
   * keys, same rows). Answers null when the upload was deleted meanwhile (nothing of it stays).
   */
  async function processObject(
    input: DownstreamInput,
    ref: Omit<StepRef, 'index'> | undefined,
    names: readonly string[],
    work: (local: string, outDir: string, signal: AbortSignal, progress: StepProgress) => Promise<StepOutcome>,
  ): Promise<StepResult | null> {
    const ctx = Context.current();
    const recorded = await listRenditionsOf(pool, input.uploadId, ref?.pipeline ?? DEFAULT_PIPELINE, ref?.version ?? 0);
    const kept: RenditionSummary[] = recorded.filter((r) => names.includes(r.name)).map(renditionSummary);
    const beat = () => ctx.heartbeat(kept.map((k) => k.name));
    beat();
    const timer = setInterval(beat, 1_000);
    const dir = await newScratchDir();
    let deleted = false;
    /** Stores a rendition (its companions first, then itself) and records its row. */
    const keep = async (r: ProducedRendition): Promise<void> => {
      if (deleted) return;
      const storageKey = renditionKey(input, r.name, r.file, ref);
      const companions = companionPrefix(storageKey, r.name);
      let companionBytes = 0;
      for (const c of r.companions ?? []) {
        const size = (await stat(c.file)).size;
        companionBytes += size;
        await store.put(`${companions}${path.basename(c.file)}`, createReadStream(c.file), {
          contentType: c.contentType,
          contentLength: size,
        });
      }
      const bytes = (await stat(r.file)).size;
      await store.put(storageKey, createReadStream(r.file), { contentType: r.contentType, contentLength: bytes });
      const rendition = {
        name: r.name,
        storageKey,
        contentType: r.contentType,
        bytes,
        width: r.width,
        height: r.height,
        durationMs: r.durationMs,
      };
      const discard = async () => {
        await store.delete(storageKey);
        for (const c of r.companions ?? []) await store.delete(`${companions}${path.basename(c.file)}`);
      };
      const inserted = await insertRenditionIfAbsent(pool, {
        upload_id: input.uploadId,
        name: r.name,
        storage_key: storageKey,
        content_type: r.contentType,
        bytes,
        companion_bytes: companionBytes,
        width: r.width,
        height: r.height,
        duration_ms: r.durationMs,
        pipeline: ref?.pipeline ?? DEFAULT_PIPELINE,
        pipeline_version: ref?.version ?? 0,
      }).catch(async (err: unknown) => {
        if (err instanceof ByteQuotaExceeded) await discard();
        throw err;
      });
      if (!inserted) {
        // Deleted meanwhile: nothing of it may stay, this rendition included.
        deleted = true;
        await discard();
        return;
      }
      await holdNewObjects(pool, store, input.uploadId, [
        storageKey,
        ...(r.companions ?? []).map((c) => `${companions}${path.basename(c.file)}`),
      ]);
      if (!kept.some((k) => k.name === r.name)) kept.push(rendition);
      beat();
    };
    try {
      const source = await store.get(input.storageKey);
      if (!source) throw ApplicationFailure.nonRetryable(`object ${input.storageKey} is missing`, failureTypes.objectMissing);
      const local = path.join(dir, 'source');
      await pipeline(source, createWriteStream(local));
      const outDir = await mkdtemp(path.join(dir, 'out-'));
      const outcome = await work(local, outDir, ctx.cancellationSignal, { kept: new Set(kept.map((k) => k.name)), keep });
      for (const r of outcome.renditions) if (!kept.some((k) => k.name === r.name)) await keep(r);
      if (deleted) return null;
      return { status: outcome.status, reason: outcome.reason, media: outcome.media, renditions: kept };
    } catch (err) {
      // The step fails with the quota as its reason (what it stored so far stays); the upload stays as it is.
      if (err instanceof ByteQuotaExceeded)
        return { status: 'failed', reason: `not stored: the tenant's ${err.message}`, media: null, renditions: kept };
      throw err;
    } finally {
      clearInterval(timer);
      await rm(dir, { recursive: true, force: true });
    }
  }

  const activities = {
    /** The first revision's one processing step (children started before pipelines): the built-in default. */
    async transcode(input: DownstreamInput): Promise<TranscodeResult> {
      // Nothing is skipped: the first revision made its renditions in one go.
      const result = await processObject(input, undefined, [], (local, outDir, signal) =>
        transcodeFile(local, input.contentType, outDir, presets, signal),
      );
      if (!result) return { status: 'skipped', reason: 'upload deleted', media: null, renditions: [] };
      const status = result.status === 'succeeded' ? 'ready' : (result.status as 'skipped' | 'failed');
      await setProcessingOutcome(pool, input.uploadId, { status, reason: result.reason, media: result.media });
      return { ...result, status };
    },

    /**
     * One processing step of the upload's pipeline version; its outcome is recorded once (an
     * async http.call waiting for the tenant's decision is recorded when it is decided).
     */
    async runStep({ upload, step, ref }: { upload: DownstreamInput; step: ProcessingStep; ref: StepRef }): Promise<StepResult> {
      const result =
        step.type === 'scan.clamav'
          ? await scanObject(upload, step)
          : step.type === 'http.call'
            ? await callTenant(upload, step, ref)
            : ((await processObject(upload, ref, renditionNames(step), (local, outDir, signal, progress) =>
                runMediaStep(step, local, upload.contentType, outDir, presets, signal, progress),
              )) ?? { status: 'skipped' as const, reason: 'upload deleted', media: null, renditions: [] });
      if (result.status !== 'waiting')
        await activities.recordStep({ uploadId: upload.uploadId, ref, type: step.type, result: { ...result, status: result.status } });
      return result;
    },

    /** Records a step's outcome (once): from runStep, or from the workflow for a decision or a step it gave up on. */
    async recordStep(a: { uploadId: string; ref: StepRef; type: string; result: SettledStep }): Promise<void> {
      const { uploadId, ref, type, result } = a;
      await recordStepOutcome(pool, {
        uploadId,
        pipeline: ref.pipeline,
        version: ref.version,
        index: ref.index,
        type,
        status: result.status,
        reason: result.reason,
        output: {
          media: result.media,
          renditions: result.renditions.map((r) => r.name),
          ...(result.scan ? { scan: result.scan } : {}),
          ...(result.data !== undefined ? { data: result.data } : {}),
        },
      });
    },

    /**
     * What the child of an upload runs: the pipeline version its row records, and the
     * endpoints to announce to (none without a webhook step). Recorded in history, so
     * replay-stable.
     */
    async planDownstream({
      tenantId,
      uploadId,
    }: {
      tenantId: string;
      uploadId: string;
    }): Promise<{ pipeline: PipelineVersion; endpoints: string[] }> {
      const recorded = await uploadPipeline(pool, uploadId);
      const builtin = builtinPipeline(presets);
      const row =
        recorded?.name && recorded.version ? await findPipelineVersion(pool, tenantId, recorded.name, recorded.version) : undefined;
      const pipeline = row ? { name: row.name, version: row.version, steps: row.steps } : builtin;
      return { pipeline, endpoints: announces(pipeline) ? await webhooks.listWebhookEndpoints(tenantId) : [] };
    },

    /** Records the outcome (when transcode did not, e.g. skipped media) and marks the upload processed. */
    async markUploadProcessed({
      uploadId,
      outcome,
    }: {
      uploadId: string;
      outcome: Pick<TranscodeResult, 'status' | 'reason' | 'media'>;
    }): Promise<void> {
      await setProcessingOutcome(pool, uploadId, outcome);
      await markProcessed(pool, uploadId);
    },

    /** The gates passed: the upload's content is served from now on. */
    async openGate({ uploadId }: { uploadId: string }): Promise<void> {
      await openUploadGate(pool, uploadId);
    },

    /**
     * A step rejected the upload: from this transaction on nothing of it is served and its
     * key answers the rejection (409 upload_rejected); the workflow then deletes its bytes
     * and marks it processed.
     */
    async markRejected({ uploadId, reason }: { uploadId: string; reason: string }): Promise<void> {
      const answer = rejectionAnswer('upload_rejected', `The upload was rejected by its pipeline: ${reason}.`, { uploadId, reason });
      await rejectUpload(pool, uploadId, reason, answer);
    },
  };
  return activities;
}
