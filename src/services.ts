// The upload services, wired once from configuration: the receiver every arrival mode
// delivers to, the session core and the modes on it. The API (src/api/app.ts) routes to
// these; tests that drive the upload path below HTTP build them the same way.
import type { Client } from '@temporalio/client';
import type { Config } from './config';
import type { Presets } from './media/transcode';
import type { Pool } from './db/pool';
import { subjectTag } from './tokens/grant';
import type { SecretBox } from './secret-box';
import type { PayloadKeyring } from './codec/payload-codec';
import type { ObjectStore } from './storage/store';
import { DirectUploads } from './arrivals/direct/direct-uploads';
import { DirectTargets } from './arrivals/direct/targets';
import { AppendedSessions } from './sessions/appended';
import { TUS_ROUTE } from './arrivals/tus/protocol';
import { RUFH_ROUTE } from './arrivals/rufh/protocol';
import { UppyCompanion } from './arrivals/uppy/uppy-companion';
import { SessionRegistry } from './sessions/registry';
import { DownloadLinks } from './downloads/download-links';
import { Deletions } from './lifecycle/deletions';
import { TenantDeletions } from './lifecycle/tenant-deletions';
import { Redeliveries } from './lifecycle/redeliveries';
import { StepDecisions } from './lifecycle/step-decisions';
import { AnswerCache } from './upload/answer-cache';
import { DeclaredPipelines } from './pipelines/declared';
import { Admission } from './upload/admission';
import { checkBytes, releaseReservation, reserveBytes } from './db/queries/byte-quotas';
import { TenantCalls } from './downstream/tenant-calls';
import { WebhookHttp } from './downstream/webhook-http';
import { InFlightUploads } from './upload/in-flight';
import { uploadRunningCheck } from './upload/upload-running';
import type { IdempotentRouteOptions } from './http/idempotent-route';
import { Intake } from './arrivals/intake';
import { Placement } from './placement/placement';
import { UploadReceiver, type ReceiveDeps } from './upload/receive';
import type { UploadWorkflowInput } from './temporal/definitions';

export interface ServiceDeps {
  config: Config;
  pool: Pool;
  store: ObjectStore;
  temporal: Client;
  box: SecretBox;
  /** The process's payload keyring (codec on): see ReceiveDeps.runKeys. */
  payloadKeys?: PayloadKeyring;
}

export type Services = ReturnType<typeof createServices>;

/** What the upload workflow hands its downstream child: the transcode queue and the webhook retry schedule. */
export function downstreamSettings(config: Config): UploadWorkflowInput['downstream'] {
  return {
    transcodeQueue: config.TASK_QUEUE_TRANSCODE,
    webhookRetry: {
      attemptTimeoutSeconds: config.WEBHOOK_TIMEOUT_SECONDS + 5,
      initialSeconds: config.WEBHOOK_RETRY_INITIAL_SECONDS,
      coefficient: config.WEBHOOK_RETRY_COEFFICIENT,
      maxIntervalSeconds: config.WEBHOOK_RETRY_MAX_INTERVAL_SECONDS,
      maxAttempts: config.WEBHOOK_RETRY_MAX_ATTEMPTS,
    },
  };
}

/** The built-in default pipeline's sizes and the limits every step runs under. */
export function mediaPresets(config: Config): Presets {
  return {
    thumbnailSize: config.THUMBNAIL_SIZE,
    displaySize: config.DISPLAY_SIZE,
    posterWidth: config.POSTER_WIDTH,
    audioBitrate: config.AUDIO_BITRATE,
    timeoutSeconds: config.TRANSCODE_TIMEOUT_SECONDS,
    maxPixels: config.IMAGE_MAX_PIXELS,
  };
}

/** `receiver` overrides the receiver's own settings (a test's downstream or cache). */
export function createServices(deps: ServiceDeps, overrides: { receiver?: Partial<ReceiveDeps> } = {}) {
  const { config, pool, store, temporal, box, payloadKeys } = deps;
  const MiB = 1024 * 1024;
  const answers = new AnswerCache(config.REPLAY_CACHE_MIB * MiB, config.REPLAY_CACHE_SECONDS * 1000);
  const pipelines = new DeclaredPipelines(pool);
  const guard = { allowPrivateNetworks: config.WEBHOOK_ALLOW_PRIVATE_NETWORKS };
  const calls = new TenantCalls({ pool, secrets: box, http: new WebhookHttp(guard), guard });
  const placement = new Placement({ pool, defaultResidency: config.STORAGE_RESIDENCY });
  const receiver = new UploadReceiver({
    pool,
    store,
    temporal,
    taskQueue: config.TASK_QUEUE_UPLOADS,
    receiveTimeoutSeconds: config.RECEIVE_TIMEOUT_SECONDS,
    lostCommitProbeSeconds: config.LOST_COMMIT_PROBE_SECONDS,
    answers,
    admission: new Admission({
      pipelines,
      calls,
      reserve: (r) => reserveBytes(pool, { ...r, ttlSeconds: config.QUOTA_RESERVATION_SECONDS ?? config.RECEIVE_TIMEOUT_SECONDS }),
      release: (tenantId, key) => releaseReservation(pool, tenantId, key),
      check: (r) => checkBytes(pool, r),
    }),
    placement,
    downstream: downstreamSettings(config),
    subjectTag: (tenantId, subject) => subjectTag(box, tenantId, subject),
    runKeys: payloadKeys,
    ...overrides.receiver,
  });
  // Every door's new uploads pass the one intake; the session core asks it before a session exists.
  const intake = new Intake({
    receiver,
    inFlight: new InFlightUploads(config.TENANT_MAX_UPLOADS_IN_FLIGHT),
    maxBytes: config.MAX_UPLOAD_BYTES,
  });
  // The session core every resumable or signed mode creates its sessions in, then the modes.
  const registry = new SessionRegistry({
    pool,
    store,
    temporal,
    receiver,
    admit: (upload) => intake.admit(upload),
    release: (upload) => intake.release(upload),
    placement,
    maxOpenSessions: config.TENANT_MAX_OPEN_SESSIONS,
  });
  const appended = {
    pool,
    store,
    registry,
    receiver,
    idleSeconds: config.RESUMABLE_EXPIRY_HOURS * 3600,
    partBytes: Math.round(config.RESUMABLE_PART_MIB * MiB),
    leaseSeconds: config.RESUMABLE_LEASE_SECONDS,
    stallSeconds: config.RESUMABLE_STALL_SECONDS,
  };
  const tus = new AppendedSessions({ ...appended, mode: 'tus', route: TUS_ROUTE });
  const rufh = new AppendedSessions({ ...appended, mode: 'rufh', route: RUFH_ROUTE });
  const signed = {
    pool,
    store,
    sessions: registry,
    receiver,
    box,
    expirySeconds: config.DIRECT_UPLOAD_EXPIRY_HOURS * 3600,
    urlSeconds: config.DIRECT_UPLOAD_URL_SECONDS,
  };
  const direct = new DirectUploads({
    ...signed,
    // Where direct bytes go, per session: the S3 store the key lives in, else the API's own signed PUT.
    targets: new DirectTargets(store, box, {
      singlePutMaxBytes: config.S3_SINGLE_PUT_MAX_MIB * MiB,
      partBytes: config.DIRECT_UPLOAD_PART_MIB * MiB,
    }),
  });
  const uppy = new UppyCompanion(signed);
  const links = new DownloadLinks({ store, box });
  const deletions = new Deletions({
    temporal,
    taskQueue: config.TASK_QUEUE_UPLOADS,
    webhookRetry: downstreamSettings(config).webhookRetry,
    answers: overrides.receiver?.answers ?? answers,
  });
  const tenantDeletions = new TenantDeletions({
    temporal,
    taskQueue: config.TASK_QUEUE_UPLOADS,
    webhookRetry: downstreamSettings(config).webhookRetry,
  });
  const redeliveries = new Redeliveries({ temporal, taskQueue: config.TASK_QUEUE_UPLOADS });
  const decisions = new StepDecisions({ temporal, pool });
  // What every keyed route besides the upload doors claims its Idempotency-Key with.
  const idempotency: IdempotentRouteOptions = {
    pool,
    box,
    ttlSeconds: config.IDEMPOTENCY_TTL_HOURS * 3600,
    uploadRunning: uploadRunningCheck(temporal),
  };
  return {
    placement,
    idempotency,
    receiver,
    intake,
    registry,
    tus,
    rufh,
    direct,
    uppy,
    links,
    deletions,
    tenantDeletions,
    redeliveries,
    pipelines,
    decisions,
  };
}
