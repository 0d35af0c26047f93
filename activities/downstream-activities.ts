// Side effects of the downstream workflow: the pipeline's steps (on their own task queue), webhook
// delivery with the ledger, and the final status. Each is safe to run more than once:
// renditions go to deterministic keys with conflict-free rows, deliveries carry the same
// webhook-id every time and stop once the ledger says delivered.
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { Webhook } from 'standardwebhooks';
import type { Pool } from '../src/db/pool';
import {
  insertRenditionIfAbsent,
  listRenditionsOf,
  markProcessed,
  renditionSummary,
  setProcessingOutcome,
} from '../src/db/queries/renditions';
import { openUploadGate, rejectUpload } from '../src/db/queries/gates';
import { problem } from '../src/errors';
import {
  claimDelivery,
  failedDeliveries,
  findEvent,
  finishAttempt,
  recordEvent,
  releaseDelivery,
  type AttemptTrigger,
} from '../src/db/queries/events';
import type { ListPosition } from '../src/db/queries/keyset';
import { disableEndpoint, findEndpoint, listEndpoints } from '../src/db/queries/webhooks';
import type { DownstreamInput } from '../src/downstream/types';
import type { EventType, WebhookEvent } from '../src/downstream/events';
import type { RenditionSummary, ScanVerdict, SettledStep, StepRef, StepResult, TranscodeResult } from '../src/pipelines/step-results';
import { assertDeliverableUrl, DisallowedUrlError, type Resolver } from '../src/downstream/url-guard';
import { WebhookHttp, type WebhookAnswer } from '../src/downstream/webhook-http';
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
import { webhookSecretContext, type SecretBox } from '../src/secret-box';
import { failureTypes } from '../src/temporal/names';

export interface DownstreamActivityDeps {
  pool: Pool;
  store: ObjectStore;
  presets: Presets;
  /** `resolve` replaces the system resolver (tests). */
  webhook: { allowPrivateNetworks: boolean; timeoutMs: number; maxEndpoints: number; resolve?: Resolver };
  /** Opens endpoints' signing secrets, stored sealed. */
  secrets: SecretBox;
  /** clamd, for scan.clamav steps (no address: every verdict is not_scanned). */
  scanner: ScannerSettings;
}

/**
 * Where a rendition is stored: under its upload, and — for a declared pipeline — under the
 * pipeline version, so a re-run of the same version overwrites its own objects and another
 * version never touches them. The built-in default keeps the layout uploads always had.
 */
export function renditionKey(tenantId: string, uploadId: string, name: string, file: string, ref?: Omit<StepRef, 'index'>): string {
  const version = ref && ref.version > 0 ? `${ref.pipeline}/v${ref.version}/` : '';
  return `tenants/${tenantId}/renditions/${uploadId}/${version}${name}${path.extname(file)}`;
}

/** What one delivery activity ended with (a failure to send is a thrown, retried error). */
export type DeliveryOutcome = 'delivered' | 'already_delivered' | 'endpoint_gone' | 'endpoint_disabled' | 'upload_deleted' | 'in_flight';

/** Tries of a scan while clamd is unreachable before the verdict is not_scanned (the step's retry policy spaces them). */
export const SCAN_TRIES = 4;

export function createDownstreamActivities({ pool, store, presets, webhook, secrets, scanner }: DownstreamActivityDeps) {
  const http = new WebhookHttp(webhook);
  const clamd = new ClamdScanner(scanner);
  const calls = new TenantCalls({ pool, secrets, http, guard: webhook });

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
      const storageKey = renditionKey(input.tenantId, input.uploadId, r.name, r.file, ref);
      const companionPrefix = `${storageKey.slice(0, storageKey.lastIndexOf('/') + 1)}${r.name}/`;
      for (const c of r.companions ?? [])
        await store.put(`${companionPrefix}${path.basename(c.file)}`, createReadStream(c.file), {
          contentType: c.contentType,
          contentLength: (await stat(c.file)).size,
        });
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
      const inserted = await insertRenditionIfAbsent(pool, {
        upload_id: input.uploadId,
        name: r.name,
        storage_key: storageKey,
        content_type: r.contentType,
        bytes,
        width: r.width,
        height: r.height,
        duration_ms: r.durationMs,
        pipeline: ref?.pipeline ?? DEFAULT_PIPELINE,
        pipeline_version: ref?.version ?? 0,
      });
      if (!inserted) {
        // Deleted meanwhile: nothing of it may stay, this rendition included.
        deleted = true;
        await store.delete(storageKey);
        for (const c of r.companions ?? []) await store.delete(`${companionPrefix}${path.basename(c.file)}`);
        return;
      }
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
      return { pipeline, endpoints: announces(pipeline) ? await activities.listWebhookEndpoints(tenantId) : [] };
    },

    /**
     * Enabled endpoints at the time of the event (recorded in history, so replay-stable), at
     * most the tenant quota (oldest first): the child's history is bounded by the largest
     * fan-out even if the quota was lowered after endpoints were made.
     */
    async listWebhookEndpoints(tenantId: string): Promise<string[]> {
      return (await listEndpoints(pool, tenantId))
        .filter((e) => e.enabled)
        .slice(0, webhook.maxEndpoints)
        .map((e) => e.id);
    },

    /**
     * Sends one event to one endpoint. The event is recorded first with the body it is sent
     * with (a redelivery sends the same bytes and webhook-id); the delivery's lease keeps an
     * automatic retry and a manual redelivery from sending at the same time. `trigger`
     * absent: the automatic delivery, which stops once delivered; `manual` and `recover`
     * send again even if delivered.
     */
    async deliverWebhook({
      event,
      endpointId,
      timestamp,
      trigger = 'automatic',
    }: {
      event: WebhookEvent;
      endpointId: string;
      timestamp: string;
      trigger?: AttemptTrigger;
    }): Promise<DeliveryOutcome> {
      // After the tombstone only upload.deleted goes out: no announcement of bytes that are gone.
      const payload = await recordEvent(
        pool,
        {
          id: event.id,
          tenant_id: event.tenantId,
          upload_id: event.uploadId,
          type: event.type,
          payload: JSON.stringify({ type: event.type, timestamp, data: event.data }),
        },
        { afterTombstone: event.type === 'upload.deleted' },
      );
      if (payload === undefined) return 'upload_deleted';
      const endpoint = await findEndpoint(pool, endpointId);
      if (!endpoint) return 'endpoint_gone';
      if (!endpoint.enabled) return 'endpoint_disabled';
      const { workflowExecution: run, activityId } = Context.current().info;
      const holder = `${run?.workflowId}/${run?.runId}/${activityId}`;
      const lease = await claimDelivery(pool, {
        eventId: event.id,
        endpointId,
        tenantId: event.tenantId,
        uploadId: event.uploadId,
        eventType: event.type,
        seconds: webhook.timeoutMs / 1000 + 30,
        holder,
      });
      if (!lease.claimed) {
        // Another attempt is sending right now: that copy is the one this one would add.
        if (trigger === 'automatic')
          throw ApplicationFailure.retryable(`delivery to endpoint ${endpointId} is in flight`, failureTypes.deliveryInFlight);
        return 'in_flight';
      }
      const startedAt = Date.now();
      // Recording an attempt gives the lease back too; otherwise the finally below does.
      let held = true;
      const attempted = async (status: number | null, error: string | null, delivered: boolean) => {
        const duration_ms = Date.now() - startedAt;
        await finishAttempt(pool, { event_id: event.id, endpoint_id: endpointId, trigger, duration_ms, status, error, delivered, holder });
        held = false;
      };
      try {
        if (lease.delivered && trigger === 'automatic') return 'already_delivered';
        const refuse = async (err: DisallowedUrlError) => {
          await attempted(null, err.message, false);
          await disableEndpoint(pool, endpointId, `target not allowed: ${err.message}`);
          metrics.webhookDeliveries.inc({ result: 'refused' });
          return 'endpoint_disabled' as const;
        };
        try {
          await assertDeliverableUrl(endpoint.url, webhook);
        } catch (err) {
          if (!(err instanceof DisallowedUrlError)) throw err;
          return await refuse(err);
        }
        const sentAt = new Date();
        const headers = {
          'content-type': 'application/json',
          'user-agent': 'Oncely-Webhooks/1',
          'webhook-id': event.id,
          'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
          'webhook-signature': new Webhook(secrets.open(endpoint.secret, webhookSecretContext(endpoint.id))).sign(
            event.id,
            sentAt,
            payload,
          ),
        };
        if (trigger !== 'automatic') metrics.redeliveries.inc({ trigger });
        let response: WebhookAnswer;
        try {
          response = await http.post({ url: endpoint.url, headers, body: payload, timeoutMs: webhook.timeoutMs });
        } catch (err) {
          // The name resolved somewhere else at connection time (DNS rebinding): not sent.
          if (err instanceof DisallowedUrlError) return await refuse(err);
          const message = deliveryErrorMessage(err, webhook.timeoutMs);
          await attempted(null, message, false);
          metrics.webhookDeliveries.inc({ result: 'unreachable' });
          throw ApplicationFailure.retryable(`delivery to endpoint ${endpointId} failed: ${message}`, failureTypes.webhookUnreachable);
        }
        const ok = response.status >= 200 && response.status < 300;
        metrics.webhookDeliveries.inc({ result: ok ? 'delivered' : response.status === 410 ? 'gone' : 'rejected' });
        await attempted(response.status, ok ? null : `HTTP ${response.status}`, ok);
        if (ok) return 'delivered';
        if (response.status === 410) {
          // Standard Webhooks: 410 Gone means "stop sending to this endpoint".
          await disableEndpoint(pool, endpointId, 'endpoint answered 410 Gone');
          return 'endpoint_disabled';
        }
        throw ApplicationFailure.create({
          message: `endpoint ${endpointId} answered ${response.status}`,
          type: failureTypes.webhookRejected,
          nextRetryDelay: retryAfterMs(response.retryAfter),
        });
      } finally {
        if (held) await releaseDelivery(pool, event.id, endpointId, holder);
      }
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
      const answer = problem('upload_rejected', `The upload was rejected by its pipeline: ${reason}.`, { extra: { uploadId, reason } });
      await rejectUpload(pool, uploadId, reason, { status: answer.status, body: JSON.stringify(answer.toJSON()) });
    },

    /**
     * Sends a recorded event to an endpoint again (same webhook-id, same body): a manual
     * redelivery or a recovery. `gone` when the event has expired from the log.
     */
    async redeliverEvent(a: {
      tenantId: string;
      eventId: string;
      endpointId: string;
      trigger: 'manual' | 'recover';
    }): Promise<DeliveryOutcome | 'event_gone'> {
      const row = await findEvent(pool, a.tenantId, a.eventId);
      if (!row) return 'event_gone';
      const sent = JSON.parse(row.payload) as { timestamp: string; data: Record<string, unknown> };
      const event: WebhookEvent = {
        id: row.id,
        type: row.type as EventType,
        tenantId: row.tenant_id,
        uploadId: row.upload_id,
        data: sent.data,
      };
      return activities.deliverWebhook({ event, endpointId: a.endpointId, timestamp: sent.timestamp, trigger: a.trigger });
    },

    /** A page of an endpoint's undelivered events in [since, until), after a position (recoveries). */
    async listUndelivered(a: {
      endpointId: string;
      since: string;
      until: string;
      after: ListPosition | null;
      limit: number;
    }): Promise<{ eventId: string; position: ListPosition }[]> {
      const rows = await failedDeliveries(pool, a.endpointId, new Date(a.since), new Date(a.until), a.after, a.limit);
      return rows.map((r) => ({ eventId: r.event_id, position: { createdMicros: r.created_micros, id: r.event_id } }));
    },
  };
  return activities;
}

/**
 * What a failed attempt records (tenants read it in the upload's deliveries): the kind of
 * failure, never the resolved address or the library's message that would carry it.
 */
function deliveryErrorMessage(err: unknown, timeoutMs: number): string {
  for (let e = err as { name?: string; code?: unknown; cause?: unknown } | undefined, i = 0; e && i < 5; e = e.cause as typeof e, i++) {
    if (e.name === 'TimeoutError' || e.code === 'UND_ERR_CONNECT_TIMEOUT' || e.code === 'UND_ERR_HEADERS_TIMEOUT')
      return `no answer within ${timeoutMs} ms`;
    if (typeof e.code === 'string' && /^E[A-Z]+$/.test(e.code)) return `connection failed (${e.code})`;
  }
  return 'connection failed';
}

/** Retry-After as delta-seconds or an HTTP date; bounded to a day. */
function retryAfterMs(value: string | null): number | undefined {
  if (!value) return undefined;
  const seconds = /^\d+$/.test(value.trim()) ? Number(value) : (Date.parse(value) - Date.now()) / 1000;
  if (!Number.isFinite(seconds) || seconds < 0) return undefined;
  return Math.min(seconds, 86_400) * 1000;
}

export type DownstreamActivities = ReturnType<typeof createDownstreamActivities>;
